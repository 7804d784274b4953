//! SIGTERM stops a following projector cleanly: it writes the batch in hand,
//! prints its summary and exits 0; a restart has nothing left to do.

use std::time::{Duration, Instant};

use end_to_end_tests::{following_projector_command, project};
use projector::generate::{GenerateOptions, generate};
use read_model::{ModelVersions, ProjectionWrites, SqliteStore};

#[tokio::test]
async fn sigterm_finishes_the_batch_and_exits_zero() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 300, seed: 4, events_per_segment: 1_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");
    let data = directory.path().join("data");

    let child = following_projector_command(&events, &data, 200).spawn().expect("projector starts");
    // Wait until every event is checkpointed; the projector keeps following the directory.
    let source = format!("file:{}", events.canonicalize().expect("events path").display());
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(60), "the projector did not catch up");
        if let Ok(store) = SqliteStore::open(&data)
            && let Ok(Some(version)) = store.active_model_version().await
            && let Ok(checkpoints) = store.checkpoints(version, &source).await
            && checkpoints.iter().map(|checkpoint| checkpoint.next_offset).sum::<i64>() == manifest.events as i64
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().expect("kill");
    assert!(status.success());
    let output = child.wait_with_output().expect("exit");
    assert!(output.status.success(), "SIGTERM must exit 0, got {:?}", output.status);
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(summary.contains(&format!("\"events\":{}", manifest.events)), "{summary}");

    let again = project(&events, &data, 200);
    assert_eq!(again.events, 0, "everything was checkpointed before exiting");
}
