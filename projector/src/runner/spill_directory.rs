//! Where a sorted catch-up keeps its spill files, and the removal of those
//! a killed run left behind.
//!
//! A sorted catch-up spills what it takes in (gigabytes, at scale) into a
//! directory of its own, and removes it when it ends. A run killed with
//! SIGKILL removes nothing, so a projector killed again and again during a
//! catch-up would fill the disk. Each catch-up's directory therefore has a
//! lock file beside it (`catch-up-XXXXXX.lock` for `catch-up-XXXXXX/`),
//! locked (`flock`) for as long as the catch-up lives; the kernel releases
//! the lock when the process dies, however it dies. [`sweep`] removes every
//! directory whose lock it can take: its owner is gone. Projectors sharing a
//! spill directory (a `run` and a `rebuild` on one data directory) never
//! remove each other's live files, since a live owner holds its lock.
//!
//! It must not read or write the spill files themselves: `catch_up_sort` does.

use std::fs::{File, TryLockError};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How the lock files (and, without the suffix, the directories) are named.
const PREFIX: &str = "catch-up-";
const LOCK_SUFFIX: &str = ".lock";

/// A catch-up's own directory under the spill directory, locked while this
/// lives, and removed with its lock file when it is dropped.
#[derive(Debug)]
pub(super) struct SpillDirectory {
    directory: PathBuf,
    lock_path: PathBuf,
    /// Holds the lock; closing it releases the lock.
    _lock: File,
}

impl SpillDirectory {
    /// A fresh directory under `parent` (created if needed).
    pub(super) fn create(parent: &Path) -> io::Result<SpillDirectory> {
        std::fs::create_dir_all(parent)?;
        // A sweep may take a lock file's lock between its creation and ours,
        // and remove it: then the lock held is on a file that is gone, and
        // a fresh one is made.
        loop {
            let (lock, lock_path) =
                tempfile::Builder::new().prefix(PREFIX).suffix(LOCK_SUFFIX).tempfile_in(parent)?.keep()?;
            if !take_lock(&lock)? {
                continue;
            }
            let locked = lock.metadata()?.ino();
            let still_ours = unless_gone(std::fs::metadata(&lock_path))?.is_some_and(|on_disk| on_disk.ino() == locked);
            if !still_ours {
                continue;
            }
            let directory = directory_of(&lock_path);
            std::fs::create_dir(&directory)?;
            return Ok(SpillDirectory { directory, lock_path, _lock: lock });
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.directory
    }
}

impl Drop for SpillDirectory {
    fn drop(&mut self) {
        // The directory before its lock file: a lock file left alone is
        // swept, a directory left alone would never be.
        if let Err(error) = std::fs::remove_dir_all(&self.directory) {
            tracing::warn!(directory = %self.directory.display(), %error, "failed to remove the catch-up's spill files");
        }
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// Removes the spill files under `parent` of catch-ups whose process is
/// gone, and returns how many catch-ups left them.
pub(super) fn sweep(parent: &Path) -> io::Result<usize> {
    let Some(entries) = unless_gone(std::fs::read_dir(parent))? else { return Ok(0) };
    let mut removed = 0;
    for entry in entries {
        let lock_path = entry?.path();
        let is_lock = lock_path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with(PREFIX) && name.ends_with(LOCK_SUFFIX));
        if !is_lock {
            continue;
        }
        // Its catch-up may have ended, or another sweep removed it, meanwhile.
        let Some(lock) = unless_gone(File::open(&lock_path))? else { continue };
        if !take_lock(&lock)? {
            continue;
        }
        if unless_gone(std::fs::remove_dir_all(directory_of(&lock_path)))?.is_some() {
            removed += 1;
        }
        unless_gone(std::fs::remove_file(&lock_path))?;
    }
    Ok(removed)
}

/// Takes `lock`'s exclusive lock if nobody holds it; false when a live
/// catch-up (or a sweep, for a moment) does.
fn take_lock(lock: &File) -> io::Result<bool> {
    match lock.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

/// `result`, with a path that does not exist (any more) as `None`: files
/// here come and go as catch-ups start, end and sweep.
fn unless_gone<T>(result: io::Result<T>) -> io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// The directory a lock file guards: its path without the suffix.
fn directory_of(lock_path: &Path) -> PathBuf {
    let name = lock_path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    lock_path.with_file_name(name.strip_suffix(LOCK_SUFFIX).unwrap_or(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(parent: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(parent)
            .expect("read")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_spill_directory_lives_as_long_as_its_value() {
        let parent = tempfile::tempdir().expect("tempdir");
        let nested = parent.path().join("spill");
        let spill = SpillDirectory::create(&nested).expect("create");
        std::fs::write(spill.path().join("run-000000"), b"events").expect("write");
        let names = entries(&nested);
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(names[1], format!("{}{LOCK_SUFFIX}", names[0]), "the lock file sits beside its directory");
        drop(spill);
        assert!(entries(&nested).is_empty());
    }

    #[test]
    fn a_sweep_removes_what_dead_owners_left_and_keeps_what_live_ones_hold() {
        let parent = tempfile::tempdir().expect("tempdir");
        let live = SpillDirectory::create(parent.path()).expect("create");
        std::fs::write(live.path().join("run-000000"), b"live").expect("write");
        // A killed owner: its directory and lock file stay, and nobody holds the lock.
        std::fs::create_dir(parent.path().join("catch-up-killed")).expect("mkdir");
        std::fs::write(parent.path().join("catch-up-killed/run-000000"), b"left").expect("write");
        std::fs::write(parent.path().join("catch-up-killed.lock"), b"").expect("write");
        // An owner killed after it removed its directory, and files of someone else.
        std::fs::write(parent.path().join("catch-up-gone.lock"), b"").expect("write");
        std::fs::write(parent.path().join("notes.txt"), b"mine").expect("write");

        assert_eq!(sweep(parent.path()).expect("sweep"), 1);

        let live_name = live.path().file_name().expect("name").to_string_lossy().into_owned();
        let mut expected = vec![live_name.clone(), format!("{live_name}{LOCK_SUFFIX}"), "notes.txt".to_owned()];
        expected.sort();
        assert_eq!(entries(parent.path()), expected);
        assert_eq!(std::fs::read(live.path().join("run-000000")).expect("read"), b"live");
    }

    #[test]
    fn sweeping_a_spill_directory_that_does_not_exist_removes_nothing() {
        let parent = tempfile::tempdir().expect("tempdir");
        assert_eq!(sweep(&parent.path().join("absent")).expect("sweep"), 0);
    }
}
