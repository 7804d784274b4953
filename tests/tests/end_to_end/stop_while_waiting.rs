//! SIGTERM reaches a projector that waits for its store: its data
//! directory is on a small tmpfs that fills up mid-run, so every write
//! fails with "disk full" and the projector retries. Asked to stop, it
//! exits within its documented bound (15 s); given space, a restart
//! finishes with the same documents as a run that never met the fault.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{assert_same_documents, dump_documents, generate_and_project, project, projector_command};

/// The projector's documented stop bound.
const STOP_BOUND: Duration = Duration::from_secs(15);

/// A tmpfs mounted for the test and unmounted when dropped.
struct SmallFileSystem {
    path: PathBuf,
}

impl SmallFileSystem {
    fn mount(path: &Path, size: &str) -> SmallFileSystem {
        std::fs::create_dir_all(path).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .status()
            .expect("mount runs");
        assert!(status.success(), "mounting a tmpfs needs root (CI runs the suite as root): {status:?}");
        SmallFileSystem { path: path.to_owned() }
    }

    fn grow(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.path)
            .status()
            .expect("mount runs");
        assert!(status.success(), "remount: {status:?}");
    }
}

impl Drop for SmallFileSystem {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[test]
fn sigterm_stops_a_projector_waiting_for_a_full_disk_and_a_restart_with_space_loses_nothing() {
    let directory = tempfile::tempdir().expect("tempdir");
    let projected = generate_and_project(directory.path(), 3_000, 37, 4_000);
    let data = directory.path().join("full");
    let file_system = SmallFileSystem::mount(&data, "3m");

    let mut child = projector_command(&projected.events, &data, 500)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the projector starts");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let (waiting_sender, waiting) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("store unavailable") && line.contains("retrying") {
                let _ = waiting_sender.send(line);
            }
        }
    });
    let line = waiting.recv_timeout(Duration::from_secs(120)).expect("the projector waits for the full store");
    assert!(line.to_lowercase().contains("full"), "the reason is given: {line}");

    let asked = Instant::now();
    let killed = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().expect("kill");
    assert!(killed.success());
    let exited = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if asked.elapsed() > STOP_BOUND + Duration::from_secs(5) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let Some(status) = exited else {
        let _ = child.kill();
        panic!("the projector was still running {} s after SIGTERM", asked.elapsed().as_secs());
    };
    eprintln!("stopped {:.2} s after SIGTERM with {status:?}", asked.elapsed().as_secs_f64());

    file_system.grow("512m");
    let resumed = project(&projected.events, &data, 500);
    assert!(resumed.events > 0, "the restart read again what was not written");
    assert_same_documents(&dump_documents(&projected.clean), &dump_documents(&data));
}
