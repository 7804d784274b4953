//! One batch: load the states it touches, apply its events in order, render
//! every document whose inputs changed, and assemble the one atomic write.
//!
//! Idempotence: an event whose aggregate version is not newer than the stored
//! one is skipped and counted. Arrival order across aggregates does not
//! matter: a work is rendered from the current states of all its aggregates,
//! and a party change re-renders every document that names the party (found
//! through the stored party references).
//!
//! Rendering may be deferred ([`Rendering::Deferred`]): the batch then writes
//! everything but the documents, and returns the documents to render with
//! the checkpoints it holds back; [`render_documents`] renders them later
//! from the states stored then. A skipped duplicate still marks its documents
//! to render, so that a replay after a crash renders what a deferred batch
//! left unrendered when its checkpoints were never written.

mod aggregates;
mod documents_to_render;
mod index_changes;
mod notifying;
mod read_set_builder;
mod rendering;

use std::collections::{BTreeMap, BTreeSet};

use read_model::{
    AggregateKey, Checkpoint, ModelVersion, PartyReferrer, ProjectionWrites, ProvenanceRow, StoreError,
    StoredAggregate, WriteBatch,
};

use self::aggregates::{Aggregates, Entry, Overlay, WORK_TOPICS};
use self::documents_to_render::Stale;
pub use self::documents_to_render::{DocumentsToRender, Parts};
use self::rendering::{render_dirty, to_body};
use super::rules::apply;
use crate::contract::Topic;
use crate::events::{Change, Event};
use crate::source::{NextOffsets, Position, Rejection, SourcedEvent};

/// When a batch's documents are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// In the batch: its write holds the documents and its checkpoints.
    InBatch,
    /// Later, by [`render_documents`]: the batch writes states, provenance,
    /// index entries, party references and bulk-row removals, and returns
    /// the documents to render and the checkpoints it did not write.
    Deferred,
}

/// What a batch did.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// The write that stores the batch, with its checkpoints unless rendering was deferred.
    pub write: WriteBatch,
    /// The documents left to render, when rendering was deferred.
    pub deferred: DocumentsToRender,
    /// The checkpoints the write leaves out because rendering was deferred.
    pub held_checkpoints: Vec<Checkpoint>,
    pub applied: u64,
    /// Events whose version was not newer than the stored one.
    pub skipped_as_duplicates: u64,
    /// Events to park, with their positions.
    pub parked: Vec<(Position, Rejection)>,
}

/// Projects one batch of events read from `source`.
///
/// `pending` is the previous batch when it may not have committed yet: its
/// changes take precedence over what the store returns.
pub async fn project_batch(
    store: &dyn ProjectionWrites,
    version: ModelVersion,
    source: &str,
    events: &[SourcedEvent],
    pending: Option<&WriteBatch>,
    rendering: Rendering,
) -> Result<BatchOutcome, StoreError> {
    let overlay = Overlay::of(pending);
    let mut outcome = BatchOutcome::default();
    let mut aggregates = Aggregates::default();
    let own_keys = events
        .iter()
        .filter_map(|sourced| sourced.outcome.as_ref().ok())
        .map(|event| (event.topic, event.envelope.aggregate_id.clone()))
        .collect();
    aggregates.load(store, version, &overlay, own_keys).await?;

    let mut next_offsets = NextOffsets::default();
    let mut dirty_works: BTreeMap<String, Stale> = BTreeMap::new();
    let mut dirty_licenses = BTreeSet::new();
    let mut dirty_parties = BTreeSet::new();
    for sourced in events {
        let position = &sourced.position;
        next_offsets.advance(position);
        let event = match &sourced.outcome {
            Ok(event) => event,
            Err(rejection) => {
                outcome.parked.push((position.clone(), rejection.clone()));
                continue;
            }
        };
        let Some(entry) = aggregates.entries.of_mut(event.topic).get_mut(&event.envelope.aggregate_id) else {
            continue;
        };
        if event.envelope.aggregate_version <= entry.version {
            outcome.skipped_as_duplicates += 1;
            note_dirty(event, &mut dirty_works, &mut dirty_licenses, &mut dirty_parties);
            continue;
        }
        match apply(entry.state.as_deref(), event) {
            Ok(state) => {
                entry.apply(event.envelope.aggregate_version, state);
                outcome.applied += 1;
                note_applied(event, &mut outcome.write, &mut dirty_works, &mut dirty_licenses, &mut dirty_parties);
            }
            Err(reason) => outcome.parked.push((position.clone(), Rejection::of(event, reason))),
        }
    }

    let changed_parties: Vec<String> = dirty_parties.into_iter().collect();
    let mut referrers: BTreeSet<(String, PartyReferrer)> =
        store.party_referrers(version, &changed_parties).await?.into_iter().collect();
    for reference in overlay.references {
        if changed_parties.binary_search(&reference.party_id).is_ok() {
            let key = (reference.party_id.clone(), reference.referrer.clone());
            if reference.present {
                referrers.insert(key);
            } else {
                referrers.remove(&key);
            }
        }
    }
    for (_, referrer) in referrers {
        match referrer {
            PartyReferrer::Work(id) => dirty_works.entry(id).or_default().merge(Stale::PARTY_CHANGE),
            PartyReferrer::License(id) => {
                dirty_licenses.insert(id);
            }
        }
    }
    let dirty =
        Dirty { documents: DocumentsToRender { works: dirty_works, licenses: dirty_licenses }, changed_parties };
    render_dirty(store, version, &overlay, &mut aggregates, &dirty, rendering, &mut outcome.write).await?;
    if rendering == Rendering::Deferred {
        outcome.deferred = dirty.documents;
    }
    let mut changed: Vec<(Topic, &String, &Entry)> = aggregates
        .entries
        .iter()
        .flat_map(|(topic, entries)| entries.iter().map(move |(id, entry)| (topic, id, entry)))
        .filter(|(_, _, entry)| entry.changed())
        .collect();
    // Each (topic, id) is there once, so the order needs no stable sort.
    changed.sort_unstable_by(|left, right| (left.0, left.1).cmp(&(right.0, right.1)));
    for (topic, id, entry) in changed {
        if let Some(state) = &entry.state {
            outcome.write.aggregates.push((
                AggregateKey { topic: topic.name().to_owned(), id: id.clone() },
                StoredAggregate { version: entry.version, state: state.encode() },
            ));
        }
    }
    let checkpoints = next_offsets.checkpoints(source);
    match rendering {
        Rendering::InBatch => outcome.write.checkpoints = checkpoints,
        Rendering::Deferred => outcome.held_checkpoints = checkpoints,
    }
    Ok(outcome)
}

/// The documents a batch must render, and the parties it changed.
#[derive(Debug, Default)]
struct Dirty {
    documents: DocumentsToRender,
    /// Sorted.
    changed_parties: Vec<String>,
}

/// Renders `documents` from the states stored now: documents that deferred
/// batches left, or that a backend reported stale after writing (see
/// [`read_model::read_set`]). The batch changes no state, reference or
/// checkpoint, so a batch of it in flight changes nothing the next one reads.
pub async fn render_documents(
    store: &dyn ProjectionWrites,
    version: ModelVersion,
    documents: DocumentsToRender,
) -> Result<WriteBatch, StoreError> {
    let dirty = Dirty { documents, changed_parties: Vec::new() };
    let mut write = WriteBatch::default();
    let overlay = Overlay::default();
    render_dirty(store, version, &overlay, &mut Aggregates::default(), &dirty, Rendering::InBatch, &mut write).await?;
    Ok(write)
}

/// The write that renders again the documents a backend reported stale
/// after writing `written` (see [`read_model::read_set`]), from the states
/// stored now. It carries `written`'s checkpoints: a backend that reports
/// stale documents leaves them unwritten, so that a crash before this write
/// reads the events again and renders the documents then.
pub async fn render_stale_again(
    store: &dyn ProjectionWrites,
    version: ModelVersion,
    stale: &[PartyReferrer],
    written: &WriteBatch,
) -> Result<WriteBatch, StoreError> {
    let write = render_documents(store, version, DocumentsToRender::of(stale)).await?;
    Ok(WriteBatch {
        checkpoints: written.checkpoints.clone(),
        change_feed_retention: written.change_feed_retention,
        ..write
    })
}

/// Records what an event makes dirty.
fn note_dirty(
    event: &Event,
    dirty_works: &mut BTreeMap<String, Stale>,
    dirty_licenses: &mut BTreeSet<String>,
    dirty_parties: &mut BTreeSet<String>,
) {
    let id = &event.envelope.aggregate_id;
    match event.topic {
        Topic::Licenses => {
            dirty_licenses.insert(id.clone());
        }
        Topic::Parties => {
            if !matches!(event.change, Change::PartyPersonalDataChanged) {
                dirty_parties.insert(id.clone());
            }
        }
        Topic::Works | Topic::Rights | Topic::Disputes | Topic::Certificates => {
            dirty_works.entry(id.clone()).or_default().merge(Stale::of_topic(event.topic));
        }
    }
}

/// Records what an applied event makes dirty, and its provenance entry (a
/// work's own topics only).
fn note_applied(
    event: &Event,
    write: &mut WriteBatch,
    dirty_works: &mut BTreeMap<String, Stale>,
    dirty_licenses: &mut BTreeSet<String>,
    dirty_parties: &mut BTreeSet<String>,
) {
    note_dirty(event, dirty_works, dirty_licenses, dirty_parties);
    if !WORK_TOPICS.contains(&event.topic) {
        return;
    }
    let entry = read_model::documents::ProvenanceEntry {
        event_id: event.envelope.event_id.clone(),
        event_type: event.envelope.event_type.clone(),
        topic: event.topic.name().to_owned(),
        aggregate_version: event.envelope.aggregate_version,
        occurred_at: event.envelope.occurred_at,
        recorded_at: event.envelope.recorded_at,
        source_system: event.envelope.source_system.clone(),
        changed: event.change.changed_fields(),
    };
    write.provenance.push(ProvenanceRow {
        lcc_id: event.envelope.aggregate_id.clone(),
        recorded_at: event.envelope.recorded_at.0,
        topic: event.topic.name().to_owned(),
        aggregate_version: event.envelope.aggregate_version,
        body: to_body(&entry),
    });
}
