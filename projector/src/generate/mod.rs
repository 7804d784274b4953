//! `projector generate`: deterministic event streams for tests, benchmarks
//! and the sandbox fixtures.
//!
//! A world of drafts ([`world`] or [`sandbox`]) gets per-aggregate versions in
//! time order, event ids, and a global order by recorded-at time. It is then
//! cut into segments of consecutive events, and each segment into one Avro
//! container file per topic, named `SEGMENT-TOPIC.avro`. Read in name order,
//! the files replay the timeline, and inside a segment some topics come before
//! others (certificates and rights before works), as on real topics.

pub(crate) mod avro;
pub mod drafts;
pub mod identities;
mod licenses;
mod malformed;
mod random;
pub mod sandbox;
pub mod world;

use std::collections::BTreeMap;
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
    let (order, versions) = order_and_number(&drafts)?;
    std::fs::create_dir_all(out).with_context(|| format!("failed to create {}", out.display()))?;
    let mut manifest = Manifest {
        seed: options.seed,
        works,
        events: drafts.len(),
        events_by_topic: BTreeMap::new(),
        malformed_events: drafts.iter().filter(|draft| draft.must_be_parked).count(),
        files: 0,
    };
    for draft in &drafts {
        *manifest.events_by_topic.entry(draft.topic.name().to_owned()).or_default() += 1;
    }
    let contract = crate::contract::Contract::load()?;
    let future_works = future_works_schema().context("failed to build the newer works schema")?;
    let mut marker_random = Random::new(options.seed ^ 0x6d61_726b);
    let mut id_random = Random::new(options.seed).fork(9);
    for (segment, chunk) in order.chunks(options.events_per_segment.max(1)).enumerate() {
        // Event ids are drawn in the order of the events, whatever file each goes to.
        let events: Vec<NumberedEvent<'_>> = chunk
            .iter()
            .map(|&index| NumberedEvent {
                draft: &drafts[index as usize],
                version: u64::from(versions[index as usize]),
                event_id: id_random.uuid(),
            })
            .collect();
        for topic in Topic::ALL {
            let in_topic: Vec<&NumberedEvent<'_>> = events.iter().filter(|event| event.draft.topic == topic).collect();
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

/// A draft with its version and id, as it is written.
#[derive(Debug)]
struct NumberedEvent<'a> {
    draft: &'a Draft,
    version: u64,
    event_id: String,
}

/// The order events are written in (by time, then topic, aggregate and
/// version, then as drafted), as indices into `drafts`, and each draft's
/// version: its place among its aggregate's drafts by time (then as
/// drafted), from 1. Indices rather than moved drafts, so that a registry of
/// millions of works holds its drafts once.
fn order_and_number(drafts: &[Draft]) -> anyhow::Result<(Vec<u32>, Vec<u32>)> {
    let count = u32::try_from(drafts.len()).context("more than 2^32 events")?;
    let mut by_aggregate: Vec<u32> = (0..count).collect();
    by_aggregate.sort_unstable_by(|&left, &right| {
        let (left_draft, right_draft) = (&drafts[left as usize], &drafts[right as usize]);
        (left_draft.topic, &left_draft.aggregate_id, left_draft.at, left).cmp(&(
            right_draft.topic,
            &right_draft.aggregate_id,
            right_draft.at,
            right,
        ))
    });
    let mut versions = vec![0_u32; drafts.len()];
    let mut previous: Option<&Draft> = None;
    let mut version = 0;
    for &index in &by_aggregate {
        let draft = &drafts[index as usize];
        let same = previous
            .is_some_and(|previous| previous.topic == draft.topic && previous.aggregate_id == draft.aggregate_id);
        version = if same { version + 1 } else { 1 };
        versions[index as usize] = version;
        previous = Some(draft);
    }
    let mut order = by_aggregate;
    order.sort_unstable_by(|&left, &right| {
        let (left_draft, right_draft) = (&drafts[left as usize], &drafts[right as usize]);
        (left_draft.at, left_draft.topic, &left_draft.aggregate_id, versions[left as usize], left).cmp(&(
            right_draft.at,
            right_draft.topic,
            &right_draft.aggregate_id,
            versions[right as usize],
            right,
        ))
    });
    Ok((order, versions))
}

fn write_file(path: &Path, schema: &Schema, marker: [u8; 16], events: &[&NumberedEvent]) -> anyhow::Result<()> {
    // Written beside the target and renamed, so a reader never sees half a file.
    let partial = path.with_extension("avro.partial");
    {
        let file = BufWriter::new(File::create(&partial)?);
        let mut writer = Writer::builder().schema(schema).writer(file).marker(marker).build()?;
        for event in events {
            writer.append_value(avro::event_value(event.draft, event.version, &event.event_id))?;
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
