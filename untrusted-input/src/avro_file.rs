//! Avro object container files, as the file source reads them
//! (`FileSource::read_container`, which `read_file` calls on each file).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use projector::contract::Contract;
use projector::source::SourcedEvent;
use projector::source::file::FileSource;

use crate::events::{assert_accepted, assert_parked};
use crate::repository;

fn source() -> &'static FileSource {
    static SOURCE: OnceLock<FileSource> = OnceLock::new();
    SOURCE.get_or_init(|| FileSource::new(Path::new("fuzz-input"), Arc::new(Contract::load().expect("the contract"))))
}

fn read_from(input: &[u8], start: i64) -> (Vec<SourcedEvent>, i64) {
    let mut events = Vec::new();
    let next = source().read_container(input, "input.avro", start, &mut |event| {
        events.push(event);
        true
    });
    (events, next)
}

/// Reading never panics; every record is an accepted event or parked with
/// a reason, at consecutive positions; the next position returned follows
/// the last one read; and reading again from a position in the middle, as
/// after a restart at a checkpoint, gives the same events from there on.
pub fn check(input: &[u8]) {
    let (events, next) = read_from(input, 0);
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.position.offset, i64::try_from(index).expect("an offset"), "positions are consecutive");
        match &event.outcome {
            Ok(accepted) => assert_accepted(accepted, None),
            Err(rejection) => assert_parked(rejection),
        }
    }
    assert_eq!(next, i64::try_from(events.len()).expect("an offset"), "the next position follows the last");
    let middle = events.len() / 2;
    if middle > 0 {
        let (resumed, resumed_next) = read_from(input, i64::try_from(middle).expect("an offset"));
        let outcomes = |events: &[SourcedEvent]| events.iter().map(|event| event.outcome.clone()).collect::<Vec<_>>();
        assert_eq!(outcomes(&resumed), outcomes(&events[middle..]), "a restart reads the same events");
        assert_eq!(resumed_next, next);
    }
}

/// The sandbox fixture files.
pub fn seeds() -> Vec<Vec<u8>> {
    let files = repository::avro_files_in(&repository::sandbox_events());
    files.iter().map(|file| std::fs::read(file).expect("a fixture file")).collect()
}
