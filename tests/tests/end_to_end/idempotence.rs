//! Every event delivered twice, and the order shuffled across aggregates
//! (each aggregate's own order kept, as Kafka keeps it per key), gives
//! byte-identical documents to one clean in-order run.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::path::Path;

use apache_avro::types::Value;
use apache_avro::{Reader, Schema, Writer};
use end_to_end_tests::{assert_same_documents, avro_files_in, dump_documents, project, project_with_environment};
use projector::contract::{Contract, Topic};
use projector::generate::{GenerateOptions, Random, future_works_schema, generate};

/// An event as read from a generated file: its topic, aggregate and value.
struct Delivered {
    topic: Topic,
    aggregate: String,
    value: Value,
}

fn aggregate_id(value: &Value) -> String {
    let Value::Record(fields) = value else { panic!("event is a record") };
    let Value::Record(envelope) = &fields[0].1 else { panic!("envelope is a record") };
    match &envelope[2].1 {
        Value::String(id) => id.clone(),
        other => panic!("aggregateId: {other:?}"),
    }
}

fn read_events(directory: &Path, contract: &Contract) -> Vec<Delivered> {
    let mut events = Vec::new();
    for path in avro_files_in(directory) {
        let reader = Reader::new(File::open(&path).expect("open")).expect("reader");
        let topic = contract.topic_of(reader.writer_schema()).expect("a contract topic");
        for value in reader {
            let value = value.expect("value");
            events.push(Delivered { topic, aggregate: aggregate_id(&value), value });
        }
    }
    events
}

/// Each aggregate's events twice over (a redelivery never precedes the
/// original), randomly interleaved with every other aggregate's.
fn duplicate_and_shuffle(events: Vec<Delivered>, random: &mut Random) -> Vec<Delivered> {
    let mut queues: BTreeMap<(Topic, String), Vec<Value>> = BTreeMap::new();
    for event in events {
        queues.entry((event.topic, event.aggregate)).or_default().push(event.value);
    }
    let mut merged: Vec<((Topic, String), VecDeque<Value>)> = queues
        .into_iter()
        .map(|(key, values)| {
            let (mut originals, mut copies) = (VecDeque::from(values.clone()), VecDeque::from(values));
            let mut sequence = VecDeque::new();
            while !originals.is_empty() || !copies.is_empty() {
                let copy_allowed = copies.len() > originals.len();
                if originals.is_empty() || (copy_allowed && random.chance(50)) {
                    sequence.extend(copies.pop_front());
                } else {
                    sequence.extend(originals.pop_front());
                }
            }
            (key, sequence)
        })
        .collect();
    let mut delivered = Vec::new();
    while !merged.is_empty() {
        let index = random.range(0, merged.len() as i64) as usize;
        let ((topic, aggregate), queue) = &mut merged[index];
        if let Some(value) = queue.pop_front() {
            delivered.push(Delivered { topic: *topic, aggregate: aggregate.clone(), value });
        }
        if queue.is_empty() {
            merged.swap_remove(index);
        }
    }
    delivered
}

/// Writes the delivery order as segments of one file per topic, like the generator.
fn write_segments(events: &[Delivered], directory: &Path, contract: &Contract) {
    std::fs::create_dir_all(directory).expect("mkdir");
    let future_works = future_works_schema().expect("schema");
    for (segment, chunk) in events.chunks(700).enumerate() {
        for topic in Topic::ALL {
            let values: Vec<&Value> =
                chunk.iter().filter(|event| event.topic == topic).map(|event| &event.value).collect();
            if values.is_empty() {
                continue;
            }
            // The newer works schema is a superset of the contract's: every works event fits it.
            let schema: &Schema = if topic == Topic::Works { &future_works } else { contract.reader_schema(topic) };
            let file = File::create(directory.join(format!("{segment:06}-{}.avro", topic.name()))).expect("create");
            let mut writer = Writer::new(schema, file).expect("writer");
            for value in values {
                writer.append_value_ref(value).expect("append");
            }
            writer.flush().expect("flush");
        }
    }
}

#[test]
fn duplicated_and_shuffled_delivery_gives_byte_identical_documents() {
    let directory = tempfile::tempdir().expect("tempdir");
    let contract = Contract::load().expect("contract");
    let in_order = directory.path().join("in-order");
    let options = GenerateOptions { works: 1_500, seed: 5, events_per_segment: 1_500, sandbox: false };
    let manifest = generate(&options, &in_order).expect("generate");

    let events = read_events(&in_order, &contract);
    assert_eq!(events.len(), manifest.events);
    let shuffled = duplicate_and_shuffle(events, &mut Random::new(99));
    assert_eq!(shuffled.len(), 2 * manifest.events);
    let shuffled_directory = directory.path().join("shuffled");
    write_segments(&shuffled, &shuffled_directory, &contract);

    // The clean run starts with a sorted catch-up, the replay goes batch by batch.
    let clean = project(&in_order, &directory.path().join("clean"), 1_000);
    let batch_by_batch = [("LCC_SORTED_CATCH_UP", "false")];
    let replayed =
        project_with_environment(&shuffled_directory, &directory.path().join("replayed"), 1_000, &batch_by_batch);
    assert_eq!(replayed.applied, clean.applied, "every event applied exactly once");
    assert_eq!(replayed.events, 2 * clean.events);
    assert_eq!(replayed.applied + replayed.skipped_as_duplicates + replayed.parked, replayed.events);
    assert!(replayed.skipped_as_duplicates >= clean.applied, "every redelivery of an applied event is skipped");

    assert_same_documents(
        &dump_documents(&directory.path().join("clean")),
        &dump_documents(&directory.path().join("replayed")),
    );
}

/// Batch boundaries are invisible, and so is when documents are rendered
/// and the order of a sorted catch-up: tiny batches (each projected while
/// the previous one is still being written, through the overlay) give the
/// same documents as one single batch in the source's order, whether each
/// renders its own documents, they all defer rendering until the source has
/// caught up, deferral stops and starts again every 50 documents, or the
/// batches come sorted by aggregate.
#[test]
fn batch_size_render_deferral_and_a_sorted_catch_up_do_not_change_the_documents() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 500, seed: 8, events_per_segment: 500, sandbox: false };
    generate(&options, &events).expect("generate");
    let in_stream_order = [("LCC_SORTED_CATCH_UP", "false")];
    let one_batch = project_with_environment(&events, &directory.path().join("one-batch"), 1_000_000, &in_stream_order);
    let expected = dump_documents(&directory.path().join("one-batch"));
    let mut writes = Vec::new();
    for (name, max_documents, sorted) in [
        ("in-every-batch", "0", "false"),
        ("deferred-until-caught-up", "1000000", "false"),
        ("deferred-by-50", "50", "false"),
        ("sorted-catch-up", "1000000", "true"),
    ] {
        let data = directory.path().join(name);
        let environment = [("LCC_RENDER_DEFERRAL_MAX_DOCUMENTS", max_documents), ("LCC_SORTED_CATCH_UP", sorted)];
        let tiny_batches = project_with_environment(&events, &data, 7, &environment);
        assert_eq!(one_batch.applied, tiny_batches.applied, "{name}");
        assert_eq!(one_batch.parked, tiny_batches.parked, "{name}");
        assert_same_documents(&expected, &dump_documents(&data));
        writes.push(tiny_batches.batches);
    }
    // Deferred documents are written in batches of their own, after the
    // events'; a sorted catch-up writes batches of half the batch size (3
    // events), each rendering its own documents, and nothing else.
    assert!(writes[1] > writes[0] && writes[2] > writes[0], "store writes: {writes:?}");
    assert_eq!(writes[3], one_batch.events.div_ceil(3), "store writes: {writes:?}");
}
