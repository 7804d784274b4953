//! Malformed events are parked in the source's dead-letter file with their
//! position and reason, counted, and the stream goes on; a rerun parks nothing twice.

use end_to_end_tests::project;
use projector::dead_letter::DeadLetterFile;
use projector::generate::{GenerateOptions, generate};

#[test]
fn every_malformed_event_is_parked_once_with_its_reason_and_nothing_else_is() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 2_400, seed: 3, events_per_segment: 4_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");
    assert!(manifest.malformed_events >= 6, "one of each kind at least");

    let data = directory.path().join("data");
    let summary = project(&events, &data, 1_000);
    assert_eq!(summary.parked as usize, manifest.malformed_events);
    assert_eq!(summary.applied + summary.parked, summary.events, "every other event was applied");

    let file =
        std::fs::read_dir(data.join("dead-letters")).expect("dir").next().expect("a file").expect("entry").path();
    let letters = DeadLetterFile::read_all(&file).expect("every line parses");
    assert_eq!(letters.len(), manifest.malformed_events);
    for letter in &letters {
        assert!(letter.stream.ends_with(".avro") && letter.offset >= 0, "{letter:?}");
        assert!(letter.source.starts_with("file:"), "{letter:?}");
        assert!(letter.aggregate_id.as_deref().is_none_or(|id| id.starts_with("LCC-")), "{letter:?}");
    }
    let reasons: Vec<&str> = letters.iter().map(|letter| letter.reason.as_str()).collect();
    for expected in [
        "the ISWC check digit does not match",
        "add up to 12000 basis points",
        "envelope.eventType is \"WorkPublished\" but the payload is WorkAmended",
        "sha256 must be 64 lowercase hexadecimal characters",
        "event type WorkArchived is not part of the works contract",
        "aggregateVersion must be 1 or more",
    ] {
        assert!(
            reasons.iter().any(|reason| reason.contains(expected)),
            "no dead letter says {expected:?}: {reasons:#?}"
        );
    }

    let again = project(&events, &data, 1_000);
    assert_eq!(again.events, 0, "the checkpoints say everything was read");
    assert_eq!(DeadLetterFile::read_all(&file).expect("read").len(), manifest.malformed_events);
}
