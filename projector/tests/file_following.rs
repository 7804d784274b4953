//! Following a directory of event files: files that appear, and files that
//! grow, are read from where the reader left them.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use projector::contract::Contract;
use projector::dead_letter::DeadLetterFile;
use projector::runner::{NoObserver, RunOptions, run};
use projector::source::file::FileSource;
use read_model::{DocumentKind, DocumentReads, ModelVersion, Store};
use support::{Projection, T0, party, published, work};

/// Moves every file of `from` into `into` under its name with `prefix`, as
/// a producer would: written elsewhere, then renamed into place.
fn move_files(from: &Path, into: &Path, prefix: &str, only: Option<&str>) {
    for entry in std::fs::read_dir(from).expect("list") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if only.is_some_and(|topic| !name.contains(topic)) {
            continue;
        }
        std::fs::rename(from.join(&name), into.join(format!("{prefix}{name}"))).expect("rename");
    }
}

async fn wait_for_profile(projection: &Projection, id: &str) -> bool {
    for _ in 0..500 {
        if projection.store.document(DocumentKind::RightsProfile, id).await.expect("read").is_some() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_followed_directory_reads_new_files_and_the_new_records_of_a_grown_file() {
    let projection = Projection::new().await;
    let first = vec![party("PTY-1", "Ada Adler", T0), work("LCC-1", "PTY-1", T0 + 1), published("LCC-1", T0 + 2)];
    let mut grown = first.clone();
    grown.extend([work("LCC-3", "PTY-1", T0 + 5), published("LCC-3", T0 + 6)]);
    let first_files = projection.write("first", first, 1_000);
    let grown_files = projection.write("grown", grown, 1_000);
    let new_files = projection.write("new", vec![work("LCC-2", "PTY-1", T0 + 3), published("LCC-2", T0 + 4)], 1_000);

    let followed = projection.directory.path().join("followed");
    std::fs::create_dir(&followed).expect("directory");
    move_files(&first_files, &followed, "a-", None);
    let source = FileSource::new(&followed, Arc::new(Contract::load().expect("contract")));
    let letters = DeadLetterFile::open(&projection.directory.path().join("letters.jsonl")).expect("dead letters");
    let store: Arc<dyn Store> = Arc::new(projection.store.clone());
    let options = RunOptions { batch_size: 100, linger: Duration::from_millis(10), ..RunOptions::default() };
    let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
    let feed = source.start(options.batch_size, Duration::from_millis(10)).expect("reader");
    let letters = Box::new(letters);
    let run = tokio::spawn(run(store, ModelVersion(1), feed, letters, Arc::new(NoObserver), options, async {
        let _ = stopped.await;
    }));
    assert!(wait_for_profile(&projection, "LCC-1").await, "the files there at the start");

    move_files(&new_files, &followed, "b-", None);
    assert!(wait_for_profile(&projection, "LCC-2").await, "a file that appeared");

    move_files(&grown_files, &followed, "a-", Some("works"));
    assert!(wait_for_profile(&projection, "LCC-3").await, "the records a file grew by");

    shutdown.send(()).expect("the run waits");
    let totals = run.await.expect("task").expect("run");
    assert_eq!(totals.applied, 7, "every event once: the grown file's first records were not applied again");
    assert_eq!(totals.skipped_as_duplicates, 0);
}
