//! `projector generate`: deterministic event streams for tests, benchmarks
//! and the sandbox fixtures.
//!
//! A world of drafts ([`world`] or [`sandbox`]) gets per-aggregate versions in
//! time order, event ids, and a global order by recorded-at time. It is then
//! cut into segments of consecutive events, and each segment into one Avro
//! container file per topic, named `SEGMENT-TOPIC.avro`. Read in name order,
//! the files replay the timeline, and inside a segment some topics come before
//! others (certificates and rights before works), as on real topics.

mod avro;
pub mod drafts;
pub mod identities;
mod licenses;
mod malformed;
mod random;
pub mod sandbox;
pub mod world;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::Context;
use apache_avro::{Schema, Writer};
use serde::Serialize;

use self::drafts::{Draft, Payload};
pub use self::random::Random;
use crate::contract::Topic;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub works: usize,
    pub seed: u64,
    /// Events per segment; a segment becomes up to six files.
    pub events_per_segment: usize,
    /// The sandbox fixtures instead of a production-like world.
    pub sandbox: bool,
}

/// A summary written beside the files as `manifest.json`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub seed: u64,
    pub works: usize,
    pub events: usize,
    pub events_by_topic: BTreeMap<String, usize>,
    /// Events the projector must park (deliberately malformed).
    pub malformed_events: usize,
    pub files: usize,
}

/// Generates the event files into `out` (created when missing) and returns the manifest.
pub fn generate(options: &GenerateOptions, out: &Path) -> anyhow::Result<Manifest> {
    let mut random = Random::new(options.seed);
    let (drafts, works) = if options.sandbox {
        (sandbox::sandbox_world(), sandbox::SANDBOX_WORKS)
    } else {
        (world::production_world(options.works, &mut random), options.works)
    };
    write_drafts(drafts, works, options, out)
}

/// Numbers, orders and writes `drafts` as event files into `out`, with a
/// manifest. Tests use it to write hand-made scenarios.
pub fn write_drafts(
    drafts: Vec<Draft>,
    works: usize,
    options: &GenerateOptions,
    out: &Path,
) -> anyhow::Result<Manifest> {
    let events = order_and_number(drafts, &mut Random::new(options.seed).fork(9));
    std::fs::create_dir_all(out).with_context(|| format!("failed to create {}", out.display()))?;
    let mut manifest = Manifest {
        seed: options.seed,
        works,
        events: events.len(),
        events_by_topic: BTreeMap::new(),
        malformed_events: events.iter().filter(|event| event.draft.must_be_parked).count(),
        files: 0,
    };
    for event in &events {
        *manifest.events_by_topic.entry(event.draft.topic.name().to_owned()).or_default() += 1;
    }
    let contract = crate::contract::Contract::load()?;
    let future_works = future_works_schema().context("failed to build the newer works schema")?;
    let mut marker_random = Random::new(options.seed ^ 0x6d61_726b);
    for (segment, chunk) in events.chunks(options.events_per_segment.max(1)).enumerate() {
        for topic in Topic::ALL {
            let in_topic: Vec<&NumberedEvent> = chunk.iter().filter(|event| event.draft.topic == topic).collect();
            if in_topic.is_empty() {
                continue;
            }
            let newer = in_topic.iter().any(|event| matches!(event.draft.payload, Payload::WorkArchived));
            let schema = if newer { &future_works } else { contract.reader_schema(topic) };
            let name = format!("{:06}-{}.avro", segment + 1, topic.name());
            let marker: [u8; 16] = std::array::from_fn(|_| marker_random.next_u64() as u8);
            write_file(&out.join(&name), schema, marker, &in_topic)
                .with_context(|| format!("failed to write {name}"))?;
            manifest.files += 1;
        }
    }
    let manifest_text = serde_json::to_string_pretty(&manifest)?;
    std::fs::write(out.join("manifest.json"), manifest_text + "\n").context("failed to write manifest.json")?;
    Ok(manifest)
}

/// A draft with its version and id.
#[derive(Debug)]
struct NumberedEvent {
    draft: Draft,
    version: u64,
    event_id: String,
}

fn order_and_number(drafts: Vec<Draft>, random: &mut Random) -> Vec<NumberedEvent> {
    let mut by_aggregate: HashMap<(Topic, String), Vec<(usize, Draft)>> = HashMap::new();
    for (index, draft) in drafts.into_iter().enumerate() {
        by_aggregate.entry((draft.topic, draft.aggregate_id.clone())).or_default().push((index, draft));
    }
    let mut numbered = Vec::new();
    for (_, mut aggregate) in by_aggregate {
        aggregate.sort_by_key(|(index, draft)| (draft.at, *index));
        for (version, (index, draft)) in aggregate.into_iter().enumerate() {
            numbered.push((index, NumberedEvent { draft, version: version as u64 + 1, event_id: String::new() }));
        }
    }
    numbered.sort_by(|(left_index, left), (right_index, right)| {
        (left.draft.at, left.draft.topic, &left.draft.aggregate_id, left.version, left_index).cmp(&(
            right.draft.at,
            right.draft.topic,
            &right.draft.aggregate_id,
            right.version,
            right_index,
        ))
    });
    numbered
        .into_iter()
        .map(|(_, mut event)| {
            event.event_id = random.uuid();
            event
        })
        .collect()
}

fn write_file(path: &Path, schema: &Schema, marker: [u8; 16], events: &[&NumberedEvent]) -> anyhow::Result<()> {
    // Written beside the target and renamed, so a reader never sees half a file.
    let partial = path.with_extension("avro.partial");
    {
        let file = BufWriter::new(File::create(&partial)?);
        let mut writer = Writer::builder().schema(schema).writer(file).marker(marker).build()?;
        for event in events {
            writer.append_value(avro::event_value(&event.draft, event.version, &event.event_id))?;
        }
        writer.flush()?;
        writer.into_inner()?.into_inner().map_err(|error| error.into_error())?.sync_all()?;
    }
    std::fs::rename(&partial, path)?;
    Ok(())
}

/// The works schema as a newer upstream might write it: with an extra event
/// type, `WorkArchived`, that this projector does not know.
pub fn future_works_schema() -> anyhow::Result<Schema> {
    let mut json: serde_json::Value = serde_json::from_str(Topic::Works.schema_text())?;
    let branches = json["fields"][1]["type"].as_array_mut().context("payload union")?;
    branches.push(serde_json::json!({
        "type": "record",
        "name": "WorkArchived",
        "doc": "A work was moved to the archive (a newer event type).",
        "fields": [{"name": "archivedBy", "type": "string", "doc": "Who archived it."}]
    }));
    Ok(Schema::parse(&json)?)
}
