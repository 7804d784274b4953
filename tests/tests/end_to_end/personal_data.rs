//! No value from a party's personal-data record ever reaches the store: every
//! personal value seeded in the events is searched for in every stored byte
//! (store files, write-ahead logs, dead letters).

use std::fs::File;
use std::path::{Path, PathBuf};

use aho_corasick::AhoCorasick;
use apache_avro::Reader;
use apache_avro::types::Value;
use end_to_end_tests::project;
use projector::generate::{GenerateOptions, generate};
use read_model::calendar::Date;

fn files_under(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() { files.extend(files_under(&path)) } else { files.push(path) }
    }
    files
}

/// Every string and date inside every `personalData` record of the party files.
fn personal_values(events: &Path) -> Vec<String> {
    fn collect(value: &Value, inside_personal_data: bool, found: &mut Vec<String>) {
        match value {
            Value::Record(fields) => {
                for (name, field) in fields {
                    collect(field, inside_personal_data || name == "personalData", found);
                }
            }
            Value::Union(_, inner) => collect(inner, inside_personal_data, found),
            Value::String(text) if inside_personal_data => found.push(text.clone()),
            Value::Date(days) if inside_personal_data => found.push(Date(*days).to_string()),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for path in files_under(events).into_iter().filter(|path| path.to_string_lossy().ends_with("-parties.avro")) {
        for value in Reader::new(File::open(path).expect("open")).expect("reader") {
            collect(&value.expect("value"), false, &mut found);
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The needles found in `haystack`, in one pass over it.
fn found_in(searcher: &AhoCorasick, needles: &[String], haystack: &[u8]) -> Vec<String> {
    let mut found: Vec<String> =
        searcher.find_overlapping_iter(haystack).map(|hit| needles[hit.pattern().as_usize()].clone()).collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn no_personal_value_from_the_events_is_stored_anywhere() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 1_200, seed: 21, events_per_segment: 3_000, sandbox: false };
    generate(&options, &events).expect("generate");
    let personal = personal_values(&events);
    assert!(personal.len() > 1_000, "the events must seed many personal values, found {}", personal.len());
    assert!(personal.iter().any(|value| value.ends_with("@personal.invalid")));
    assert!(personal.iter().any(|value| value.starts_with("NID-")));
    assert!(personal.iter().any(|value| value.starts_with("19")), "birth dates are scanned too");

    let data = directory.path().join("data");
    let summary = project(&events, &data, 2_000);
    assert!(summary.applied > 6_000);

    let mut needles = personal.clone();
    needles.extend(["personal.invalid", "PRIVATE-", "NID-"].map(str::to_owned));
    let searcher = AhoCorasick::new(&needles).expect("searcher");

    // The scan must be able to find what it looks for: every string value is in the event files.
    let mut in_source = Vec::new();
    for path in files_under(&events) {
        in_source.extend(found_in(&searcher, &needles, &std::fs::read(path).expect("read")));
    }
    in_source.sort();
    in_source.dedup();
    assert!(in_source.len() + 10 > needles.len() / 2, "the scanner finds the values where they are");
    assert!(in_source.iter().any(|value| value.ends_with("@personal.invalid")));

    let stored = files_under(&data);
    assert!(stored.iter().any(|path| path.to_string_lossy().ends_with("model-v1.sqlite")));
    let mut scanned = 0;
    for path in stored {
        let bytes = std::fs::read(&path).expect("read");
        scanned += bytes.len();
        let leaked = found_in(&searcher, &needles, &bytes);
        assert!(leaked.is_empty(), "personal values found in {}: {leaked:?}", path.display());
    }
    assert!(scanned > 1_000_000, "the store holds the projected documents ({scanned} bytes scanned)");
}
