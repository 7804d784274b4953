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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use read_model::documents::{DocumentKind, WorkStatus};
use read_model::{
    AggregateKey, Checkpoint, DocumentWrite, IdentifierKind, IdentifierWrite, KeyedWrite, ModelVersion,
    PartyReferenceWrite, PartyReferrer, ProjectionWrites, ProvenanceRow, ReadInput, ReadSet, StoreError,
    StoredAggregate, WriteBatch, WriteVersion,
};
use serde::Serialize;

use super::render::{PartyDirectory, WorkInputs, parties_named_by_work, render_license, render_work};
use super::rules::apply;
use super::state::{AggregateState, WorkState};
use crate::contract::Topic;
use crate::events::{Change, Event};
use crate::source::{Position, Rejection, SourcedEvent};

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

#[derive(Debug)]
struct Entry {
    version: u64,
    /// The version as stored before this batch.
    version_before: u64,
    /// Boxed so that an entry stays small: the maps of a batch's entries are
    /// allocated afresh per batch, and with states inline (368 bytes
    /// each) they took tens of MiB of fresh, zeroed pages every batch.
    state: Option<Box<AggregateState>>,
    /// The state as stored before this batch, kept (moved, not cloned) once the batch changes it.
    before: Option<Box<AggregateState>>,
    changed: bool,
}

impl Entry {
    fn apply(&mut self, version: u64, state: AggregateState) {
        if !self.changed {
            self.before = self.state.take();
            self.version_before = self.version;
            self.changed = true;
        }
        self.state = Some(Box::new(state));
        self.version = version;
    }

    fn before(&self) -> Option<&AggregateState> {
        if self.changed { self.before.as_deref() } else { self.state.as_deref() }
    }
}

/// FNV-1a: the per-batch maps hash many short ids, where SipHash's
/// protection against crafted keys buys nothing (the keys come from our own store and events).
#[derive(Debug, Clone, Copy)]
struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> FnvHasher {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FnvHasher>>;

/// One map by id per topic, found by the topic's position rather than by
/// hashing the topic (a lookup per input of every rendered document).
#[derive(Debug)]
struct ByTopic<V>([FnvMap<String, V>; Topic::ALL.len()]);

impl<V> Default for ByTopic<V> {
    fn default() -> ByTopic<V> {
        ByTopic(std::array::from_fn(|_| FnvMap::default()))
    }
}

impl<V> ByTopic<V> {
    fn of(&self, topic: Topic) -> &FnvMap<String, V> {
        &self.0[topic as usize]
    }

    fn of_mut(&mut self, topic: Topic) -> &mut FnvMap<String, V> {
        &mut self.0[topic as usize]
    }

    fn iter(&self) -> impl Iterator<Item = (Topic, &FnvMap<String, V>)> {
        Topic::ALL.into_iter().zip(&self.0)
    }
}

type Key = (Topic, String);

/// The aggregates a work's documents are rendered from, beside the parties they name.
const WORK_TOPICS: [Topic; 4] = [Topic::Works, Topic::Rights, Topic::Disputes, Topic::Certificates];

/// In-memory view of the aggregates a batch touches, by topic then id (so a
/// lookup by `&str` allocates nothing).
#[derive(Debug, Default)]
struct Aggregates {
    entries: ByTopic<Entry>,
}

/// The states and references of the batch still being written, which the
/// store's committed snapshot does not show yet.
#[derive(Debug, Default)]
struct Overlay<'a> {
    aggregates: HashMap<(&'a str, &'a str), &'a StoredAggregate>,
    references: &'a [PartyReferenceWrite],
}

impl<'a> Overlay<'a> {
    fn of(pending: Option<&'a WriteBatch>) -> Overlay<'a> {
        let Some(pending) = pending else { return Overlay::default() };
        Overlay {
            aggregates: pending
                .aggregates
                .iter()
                .map(|(key, stored)| ((key.topic.as_str(), key.id.as_str()), stored))
                .collect(),
            references: &pending.party_references,
        }
    }
}

impl Aggregates {
    /// Loads states not loaded yet: from the batch in flight, else from the store.
    async fn load(
        &mut self,
        store: &dyn ProjectionWrites,
        version: ModelVersion,
        overlay: &Overlay<'_>,
        keys: BTreeSet<Key>,
    ) -> Result<(), StoreError> {
        let missing: Vec<AggregateKey> = keys
            .into_iter()
            .filter(|(topic, id)| !self.entries.of(*topic).contains_key(id))
            .map(|(topic, id)| AggregateKey { topic: topic.name().to_owned(), id })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        // Growing the maps one insert at a time moved every entry several times.
        for topic in Topic::ALL {
            let count = missing.iter().filter(|key| key.topic == topic.name()).count();
            self.entries.of_mut(topic).reserve(count);
        }
        let mut from_store = Vec::new();
        for key in missing {
            match overlay.aggregates.get(&(key.topic.as_str(), key.id.as_str())) {
                Some(stored) => self.insert(key.clone(), Some(stored))?,
                None => from_store.push(key),
            }
        }
        if !from_store.is_empty() {
            let stored = store.aggregates(version, &from_store).await?;
            if stored.len() != from_store.len() {
                return Err(StoreError::Corrupt(format!(
                    "asked the store for {} states and got {} answers",
                    from_store.len(),
                    stored.len()
                )));
            }
            for (key, found) in from_store.into_iter().zip(stored) {
                self.insert(key, found.as_ref())?;
            }
        }
        Ok(())
    }

    fn insert(&mut self, key: AggregateKey, stored: Option<&StoredAggregate>) -> Result<(), StoreError> {
        let topic = Topic::from_name(&key.topic).ok_or_else(|| StoreError::Corrupt(format!("topic {}", key.topic)))?;
        let (version, state) = match stored {
            Some(stored) => {
                let decoded = AggregateState::decode(topic, &stored.state)
                    .map_err(|error| StoreError::Corrupt(format!("state of {} {}: {error}", key.topic, key.id)))?;
                (stored.version, Some(Box::new(decoded)))
            }
            None => (0, None),
        };
        let entry = Entry { version, version_before: version, state, before: None, changed: false };
        self.entries.of_mut(topic).insert(key.id, entry);
        Ok(())
    }

    fn entry(&self, topic: Topic, id: &str) -> Option<&Entry> {
        self.entries.of(topic).get(id)
    }

    fn state(&self, topic: Topic, id: &str) -> Option<&AggregateState> {
        self.entry(topic, id)?.state.as_deref()
    }

    fn before(&self, topic: Topic, id: &str) -> Option<&AggregateState> {
        self.entry(topic, id)?.before()
    }

    /// The sum of the stored versions of the given aggregates (0 for one never seen).
    fn version_sum<'k>(&self, keys: impl IntoIterator<Item = (Topic, &'k str)>) -> u64 {
        keys.into_iter().map(|(topic, id)| self.entry(topic, id).map_or(0, |entry| entry.version)).sum()
    }

    /// The write version of a work's documents: its own four aggregates, then the parties it names.
    fn work_write_version(&self, id: &str, named_parties: &BTreeSet<String>) -> WriteVersion {
        let own = self.version_sum(WORK_TOPICS.map(|topic| (topic, id)));
        let referenced = self.version_sum(named_parties.iter().map(|party| (Topic::Parties, party.as_str())));
        WriteVersion::of_inputs(own, referenced)
    }

    fn parties(&self) -> PartyDirectory<'_> {
        self.entries
            .of(Topic::Parties)
            .iter()
            .filter_map(|(id, entry)| match entry.state.as_deref() {
                Some(AggregateState::Party(party)) => Some((id.as_str(), party)),
                _ => None,
            })
            .collect()
    }
}

macro_rules! state_of {
    ($aggregates:expr, $method:ident, $topic:expr, $id:expr, $variant:ident) => {
        match $aggregates.$method($topic, $id) {
            Some(AggregateState::$variant(state)) => Some(state),
            _ => None,
        }
    };
}

/// Which of a work's documents a change can alter; the others are not rewritten.
///
/// Each document depends on a fixed set of aggregates (its `updatedAt`
/// included), so an event on a topic outside that set leaves it as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Stale {
    rights_profile: bool,
    verification: bool,
    metadata: bool,
    evidence: bool,
    bulk: bool,
}

impl Stale {
    const NONE: Stale =
        Stale { rights_profile: false, verification: false, metadata: false, evidence: false, bulk: false };
    const ALL: Stale = Stale { rights_profile: true, verification: true, metadata: true, evidence: true, bulk: true };
    /// Party names appear in every document but the verification inputs.
    const PARTY_CHANGE: Stale = Stale { verification: false, ..Stale::ALL };
    /// Disputes and certificates feed verification and evidence only.
    const VERIFICATION_INPUTS: Stale =
        Stale { rights_profile: false, verification: true, metadata: false, evidence: true, bulk: false };

    fn of_topic(topic: Topic) -> Stale {
        match topic {
            Topic::Disputes | Topic::Certificates => Stale::VERIFICATION_INPUTS,
            _ => Stale::ALL,
        }
    }

    fn merge(&mut self, other: Stale) {
        self.rights_profile |= other.rights_profile;
        self.verification |= other.verification;
        self.metadata |= other.metadata;
        self.evidence |= other.evidence;
        self.bulk |= other.bulk;
    }
}

/// Documents whose inputs changed, still to be rendered: works (with the
/// parts a change can alter) and licenses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentsToRender {
    works: BTreeMap<String, Stale>,
    licenses: BTreeSet<String>,
}

impl DocumentsToRender {
    /// Every part of each of `documents`.
    pub fn of(documents: &[PartyReferrer]) -> DocumentsToRender {
        let mut to_render = DocumentsToRender::default();
        for document in documents {
            match document {
                PartyReferrer::Work(id) => to_render.works.entry(id.clone()).or_default().merge(Stale::ALL),
                PartyReferrer::License(id) => {
                    to_render.licenses.insert(id.clone());
                }
            }
        }
        to_render
    }

    /// Works and licenses, each counted once.
    pub fn len(&self) -> usize {
        self.works.len() + self.licenses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.works.is_empty() && self.licenses.is_empty()
    }

    pub fn merge(&mut self, other: DocumentsToRender) {
        for (id, stale) in other.works {
            self.works.entry(id).or_default().merge(stale);
        }
        self.licenses.extend(other.licenses);
    }

    /// Takes out up to `count` documents: works first, in key order, then licenses.
    pub fn take_first(&mut self, count: usize) -> DocumentsToRender {
        let works = match self.works.keys().nth(count).cloned() {
            Some(first_kept) => {
                let kept = self.works.split_off(&first_kept);
                std::mem::replace(&mut self.works, kept)
            }
            None => std::mem::take(&mut self.works),
        };
        let license_count = count - works.len();
        let licenses = match self.licenses.iter().nth(license_count).cloned() {
            Some(first_kept) => {
                let kept = self.licenses.split_off(&first_kept);
                std::mem::replace(&mut self.licenses, kept)
            }
            None => std::mem::take(&mut self.licenses),
        };
        DocumentsToRender { works, licenses }
    }
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

    let mut next_offsets: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let mut dirty_works: BTreeMap<String, Stale> = BTreeMap::new();
    let mut dirty_licenses = BTreeSet::new();
    let mut dirty_parties = BTreeSet::new();
    for sourced in events {
        let position = &sourced.position;
        let next = next_offsets.entry((position.stream.clone(), position.partition)).or_insert(0);
        *next = (*next).max(position.offset + 1);
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
        .filter(|(_, _, entry)| entry.changed)
        .collect();
    changed.sort_by(|left, right| (left.0, left.1).cmp(&(right.0, right.1)));
    for (topic, id, entry) in changed {
        if let Some(state) = &entry.state {
            outcome.write.aggregates.push((
                AggregateKey { topic: topic.name().to_owned(), id: id.clone() },
                StoredAggregate { version: entry.version, state: state.encode() },
            ));
        }
    }
    let checkpoints = next_offsets
        .into_iter()
        .map(|((stream, partition), next_offset)| Checkpoint {
            source: source.to_owned(),
            stream,
            partition,
            next_offset,
        })
        .collect();
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

/// Renders the dirty documents into `write`, or when rendering is deferred
/// writes only what follows from the state changes (index entries, party
/// references, bulk-row removals); either way with the read set that lets
/// the store check the batch against other projectors' writes. A deferred
/// batch names the documents it leaves to render as rendered, since they
/// will be rendered from states read after it commits.
async fn render_dirty(
    store: &dyn ProjectionWrites,
    version: ModelVersion,
    overlay: &Overlay<'_>,
    aggregates: &mut Aggregates,
    dirty: &Dirty,
    rendering: Rendering,
    write: &mut WriteBatch,
) -> Result<(), StoreError> {
    let documents = &dirty.documents;
    let render = rendering == Rendering::InBatch;
    // Rendering reads every input of a document. Index changes follow from
    // a work's works and rights states alone, so a deferred batch reads those
    // two only of the works whose works or rights state it changed, and the
    // other inputs only of the works whose index changes need a write version.
    let topics_first: &[Topic] = if render { &WORK_TOPICS } else { &[Topic::Works, Topic::Rights] };
    let index_may_change = |id: &str| {
        render || topics_first.iter().any(|topic| aggregates.entry(*topic, id).is_some_and(|entry| entry.changed))
    };
    let first = documents
        .works
        .keys()
        .filter(|id| index_may_change(id))
        .flat_map(|id| topics_first.iter().map(|topic| (*topic, id.clone())))
        .chain(documents.licenses.iter().map(|id| (Topic::Licenses, id.clone())))
        .collect();
    aggregates.load(store, version, overlay, first).await?;
    let work_changes: Vec<(&String, Stale, WorkIndexChanges)> = documents
        .works
        .iter()
        .map(|(id, stale)| (id, if render { *stale } else { Stale::NONE }, WorkIndexChanges::of(aggregates, id)))
        .collect();
    // Without rendering, the other inputs would only supply the write
    // versions of index changes, which a serial backend ignores.
    let versions_needed = store.orders_writes_by_version();
    let mut further = BTreeSet::new();
    for (id, _, changes) in &work_changes {
        if render || (versions_needed && !changes.is_empty()) {
            further.extend([Topic::Disputes, Topic::Certificates].map(|topic| (topic, (*id).clone())));
            further.extend(changes.named_after.iter().map(|party| (Topic::Parties, party.clone())));
        }
    }
    for id in &documents.licenses {
        if let Some(license) = state_of!(aggregates, state, Topic::Licenses, id, License) {
            let before = state_of!(aggregates, before, Topic::Licenses, id, License);
            let licensee_changed = before.map(|before| &before.licensee_party_id) != Some(&license.licensee_party_id);
            if render || (versions_needed && licensee_changed) {
                further.insert((Topic::Parties, license.licensee_party_id.clone()));
            }
        }
    }
    aggregates.load(store, version, overlay, further).await?;

    let parties = if render { aggregates.parties() } else { PartyDirectory::default() };
    let mut read_set = ReadSetBuilder::default();
    for (id, stale, changes) in work_changes {
        write_work(aggregates, &parties, id, stale, changes, write, &mut read_set);
    }
    for id in &documents.licenses {
        write_license(aggregates, &parties, id, render, write, &mut read_set);
    }
    write.read_set = read_set.finish(aggregates, dirty.changed_parties.clone());
    Ok(())
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

/// Collects a batch's [`ReadSet`] while its documents are rendered.
#[derive(Debug, Default)]
struct ReadSetBuilder {
    read_set: ReadSet,
    /// Positions in `read_set.inputs`, by topic then id (so a lookup by `&str` allocates nothing).
    inputs: ByTopic<usize>,
}

impl ReadSetBuilder {
    /// Notes a rendered document and the aggregates it was rendered from.
    fn document<'k>(
        &mut self,
        document: PartyReferrer,
        aggregates: &Aggregates,
        inputs: impl IntoIterator<Item = (Topic, &'k str)>,
    ) {
        let index = self.read_set.documents.len() as u32;
        self.read_set.documents.push(document);
        for (topic, id) in inputs {
            let position = self.input(topic, id, aggregates.entry(topic, id));
            self.read_set.inputs[position].dependents.push(index);
        }
    }

    /// The position of an aggregate among the inputs, added when missing.
    fn input(&mut self, topic: Topic, id: &str, entry: Option<&Entry>) -> usize {
        let positions = self.inputs.of_mut(topic);
        if let Some(position) = positions.get(id) {
            return *position;
        }
        let changed = entry.filter(|entry| entry.changed);
        self.read_set.inputs.push(ReadInput {
            key: AggregateKey { topic: topic.name().to_owned(), id: id.to_owned() },
            version: changed.map_or(entry.map_or(0, |entry| entry.version), |entry| entry.version_before),
            written: changed.map(|entry| entry.version),
            dependents: Vec::new(),
        });
        let position = self.read_set.inputs.len() - 1;
        positions.insert(id.to_owned(), position);
        position
    }

    /// The read set, with every aggregate the batch changed among the inputs
    /// (so that another writer of one fences this batch off).
    fn finish(mut self, aggregates: &Aggregates, changed_parties: Vec<String>) -> ReadSet {
        for (topic, entries) in aggregates.entries.iter() {
            for (id, entry) in entries.iter().filter(|(_, entry)| entry.changed) {
                self.input(topic, id, Some(entry));
            }
        }
        ReadSet { changed_parties, ..self.read_set }
    }
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

fn to_body(document: &impl Serialize) -> Vec<u8> {
    super::exact_bytes::json(document)
}

/// The indexed identifiers of a work state.
fn identifiers(work: Option<&WorkState>) -> BTreeSet<(IdentifierKind, String)> {
    let Some(work) = work else {
        return BTreeSet::new();
    };
    work.record
        .iswc
        .iter()
        .map(|iswc| (IdentifierKind::Iswc, iswc.clone()))
        .chain(work.record.isrcs.iter().map(|isrc| (IdentifierKind::Isrc, isrc.clone())))
        .collect()
}

/// What a batch's changes to a work's own states alter outside its
/// documents: party references, index entries, its bulk row's removal.
/// These follow from the state changes alone, so a deferred batch writes them too.
#[derive(Debug, Default)]
struct WorkIndexChanges {
    /// The parties the work names now.
    named_after: BTreeSet<String>,
    /// A party, and whether the work names it now.
    references: Vec<(String, bool)>,
    /// An identifier, and whether it is indexed now.
    identifiers: Vec<((IdentifierKind, String), bool)>,
    /// Only a published work has a bulk row (see `render_work`).
    removes_bulk_row: bool,
}

impl WorkIndexChanges {
    fn of(aggregates: &Aggregates, id: &str) -> WorkIndexChanges {
        let work = state_of!(aggregates, state, Topic::Works, id, Work);
        let rights = state_of!(aggregates, state, Topic::Rights, id, Rights);
        let work_before = state_of!(aggregates, before, Topic::Works, id, Work);
        let rights_before = state_of!(aggregates, before, Topic::Rights, id, Rights);
        let named =
            |work: Option<&WorkState>, rights| work.map(|work| parties_named_by_work(work, rights)).unwrap_or_default();
        let (named_before, named_after) = (named(work_before, rights_before), named(work, rights));
        let references = named_before
            .difference(&named_after)
            .map(|party| (party.clone(), false))
            .chain(named_after.difference(&named_before).map(|party| (party.clone(), true)))
            .collect();
        let (indexed_before, indexed_after) = (identifiers(work_before), identifiers(work));
        let identifiers = indexed_before
            .difference(&indexed_after)
            .map(|entry| (entry.clone(), false))
            .chain(indexed_after.difference(&indexed_before).map(|entry| (entry.clone(), true)))
            .collect();
        let published = |work: &WorkState| work.status == WorkStatus::Published;
        let removes_bulk_row = work.is_some_and(|work| !published(work)) && work_before.is_some_and(published);
        WorkIndexChanges { named_after, references, identifiers, removes_bulk_row }
    }

    fn is_empty(&self) -> bool {
        self.references.is_empty() && self.identifiers.is_empty() && !self.removes_bulk_row
    }
}

/// Writes a work's index changes and renders the parts of its documents
/// that `stale` names (none when rendering is deferred).
fn write_work(
    aggregates: &Aggregates,
    parties: &PartyDirectory<'_>,
    id: &str,
    stale: Stale,
    changes: WorkIndexChanges,
    write: &mut WriteBatch,
    read_set: &mut ReadSetBuilder,
) {
    let render = stale != Stale::NONE;
    let document = PartyReferrer::Work(id.to_owned());
    if !render {
        // It is rendered later, from states read after this batch commits.
        read_set.document(document, aggregates, []);
        if changes.is_empty() {
            return;
        }
    } else {
        let inputs = WORK_TOPICS.map(|topic| (topic, id));
        let named_inputs = changes.named_after.iter().map(|party| (Topic::Parties, party.as_str()));
        read_set.document(document, aggregates, inputs.into_iter().chain(named_inputs));
    }
    let version = aggregates.work_write_version(id, &changes.named_after);
    for (party_id, present) in changes.references {
        let referrer = PartyReferrer::Work(id.to_owned());
        write.party_references.push(PartyReferenceWrite { party_id, referrer, present, version });
    }
    for ((kind, code), present) in changes.identifiers {
        write.identifiers.push(IdentifierWrite { kind, code, lcc_id: id.to_owned(), present, version });
    }
    let keyed = |body: Option<Vec<u8>>| KeyedWrite { key: id.to_owned(), body, version };
    if changes.removes_bulk_row {
        write.bulk_rows.push(keyed(None));
    }
    // Documents exist once the work itself is registered; rights, disputes
    // and certificates that arrive earlier wait in their states.
    let Some(work) = state_of!(aggregates, state, Topic::Works, id, Work) else { return };
    if !render {
        return;
    }
    let rights = state_of!(aggregates, state, Topic::Rights, id, Rights);
    let rendered = render_work(WorkInputs {
        lcc_id: id,
        work,
        rights,
        disputes: state_of!(aggregates, state, Topic::Disputes, id, Disputes),
        certificate: state_of!(aggregates, state, Topic::Certificates, id, Certificate),
        parties,
    });
    let mut document = |kind, body| write.documents.push(DocumentWrite { kind, key: id.to_owned(), body, version });
    if stale.rights_profile {
        document(DocumentKind::RightsProfile, Some(to_body(&rendered.rights_profile)));
    }
    if stale.verification {
        document(DocumentKind::Verification, Some(to_body(&rendered.verification)));
    }
    if stale.metadata {
        document(DocumentKind::Metadata, Some(to_body(&rendered.metadata)));
    }
    if stale.evidence {
        document(DocumentKind::Evidence, Some(to_body(&rendered.evidence)));
    }
    if let Some(row) = rendered.bulk_row.filter(|_| stale.bulk) {
        write.bulk_rows.push(keyed(Some(to_body(&row))));
    }
    if let Some(fixture) = rendered.fixture {
        write.fixtures.push(keyed(Some(to_body(&fixture))));
    }
}

/// Writes a license's party reference changes and, when `render`, its documents.
fn write_license(
    aggregates: &Aggregates,
    parties: &PartyDirectory<'_>,
    id: &str,
    render: bool,
    write: &mut WriteBatch,
    read_set: &mut ReadSetBuilder,
) {
    let Some(license) = state_of!(aggregates, state, Topic::Licenses, id, License) else {
        return;
    };
    let inputs = [(Topic::Licenses, id), (Topic::Parties, license.licensee_party_id.as_str())];
    // A deferred document is rendered later, from states read after this batch commits.
    let inputs = if render { &inputs[..] } else { &[] };
    read_set.document(PartyReferrer::License(id.to_owned()), aggregates, inputs.iter().copied());
    let version = WriteVersion::of_inputs(
        aggregates.version_sum([(Topic::Licenses, id)]),
        aggregates.version_sum([(Topic::Parties, license.licensee_party_id.as_str())]),
    );
    let before = state_of!(aggregates, before, Topic::Licenses, id, License).map(|before| &before.licensee_party_id);
    if before != Some(&license.licensee_party_id) {
        let reference = |party_id: &String, present| PartyReferenceWrite {
            party_id: party_id.clone(),
            referrer: PartyReferrer::License(id.to_owned()),
            present,
            version,
        };
        if let Some(previous) = before {
            write.party_references.push(reference(previous, false));
        }
        write.party_references.push(reference(&license.licensee_party_id, true));
    }
    if !render {
        return;
    }
    let (document, fixture) = render_license(id, license, parties);
    let body = Some(to_body(&document));
    write.documents.push(DocumentWrite { kind: DocumentKind::LicenseStatus, key: id.to_owned(), body, version });
    if let Some(fixture) = fixture {
        write.fixtures.push(KeyedWrite { key: id.to_owned(), body: Some(to_body(&fixture)), version });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aggregates_at(versions: &[(Topic, &str, u64)]) -> Aggregates {
        let mut aggregates = Aggregates::default();
        for (topic, id, version) in versions {
            let entry =
                Entry { version: *version, version_before: *version, state: None, before: None, changed: false };
            aggregates.entries.of_mut(*topic).insert((*id).to_owned(), entry);
        }
        aggregates
    }

    /// A store that answers every state read with nothing at all, not even `None`s.
    struct StoreWithoutAnswers;

    #[async_trait::async_trait]
    impl ProjectionWrites for StoreWithoutAnswers {
        async fn aggregates(
            &self,
            _: ModelVersion,
            _: &[AggregateKey],
        ) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
            Ok(Vec::new())
        }

        async fn party_referrers(
            &self,
            _: ModelVersion,
            _: &[String],
        ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
            Ok(Vec::new())
        }

        async fn checkpoints(&self, _: ModelVersion, _: &str) -> Result<Vec<Checkpoint>, StoreError> {
            Ok(Vec::new())
        }

        fn orders_writes_by_version(&self) -> bool {
            false
        }

        async fn apply_batch(
            &self,
            _: ModelVersion,
            _: std::sync::Arc<WriteBatch>,
        ) -> Result<read_model::BatchWritten, StoreError> {
            Ok(read_model::BatchWritten::default())
        }
    }

    #[tokio::test]
    async fn a_store_that_answers_fewer_state_reads_than_asked_fails_the_batch() {
        let keys = BTreeSet::from([(Topic::Works, "LCC-1".to_owned()), (Topic::Rights, "LCC-1".to_owned())]);
        let loaded = Aggregates::default().load(&StoreWithoutAnswers, ModelVersion(1), &Overlay::default(), keys).await;
        match loaded {
            Err(StoreError::Corrupt(reason)) => assert!(reason.contains("2 states and got 0"), "{reason}"),
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn topics_are_numbered_in_the_order_of_all_topics() {
        for (position, topic) in Topic::ALL.into_iter().enumerate() {
            assert_eq!(topic as usize, position, "{topic:?}");
        }
    }

    #[test]
    fn a_works_documents_are_versioned_by_its_own_aggregates_then_by_the_parties_it_names() {
        let named: BTreeSet<String> = ["PTY-1".to_owned(), "PTY-2".to_owned()].into();
        let before = aggregates_at(&[
            (Topic::Works, "LCC-1", 3),
            (Topic::Rights, "LCC-1", 2),
            (Topic::Certificates, "LCC-1", 1),
            (Topic::Works, "LCC-2", 50),
            (Topic::Parties, "PTY-1", 40),
            (Topic::Parties, "PTY-2", 5),
        ]);
        let version = before.work_write_version("LCC-1", &named);
        assert_eq!(version, WriteVersion::of_inputs(3 + 2 + 1, 40 + 5), "another work's versions do not count");

        let renamed = aggregates_at(&[
            (Topic::Works, "LCC-1", 3),
            (Topic::Rights, "LCC-1", 2),
            (Topic::Certificates, "LCC-1", 1),
            (Topic::Parties, "PTY-1", 41),
            (Topic::Parties, "PTY-2", 5),
        ]);
        assert!(renamed.work_write_version("LCC-1", &named) > version, "a party rename");

        // A new rights chain that no longer names the busy party PTY-1.
        let rechained = aggregates_at(&[
            (Topic::Works, "LCC-1", 3),
            (Topic::Rights, "LCC-1", 3),
            (Topic::Certificates, "LCC-1", 1),
            (Topic::Parties, "PTY-2", 5),
        ]);
        let only_second: BTreeSet<String> = ["PTY-2".to_owned()].into();
        assert!(rechained.work_write_version("LCC-1", &only_second) > version, "an own change drops a party");
    }
}
