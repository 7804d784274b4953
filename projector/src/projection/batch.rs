//! One batch: load the states it touches, apply its events in order, render
//! every document whose inputs changed, and assemble the one atomic write.
//!
//! Idempotence: an event whose aggregate version is not newer than the stored
//! one is skipped and counted. Arrival order across aggregates does not
//! matter: a work is rendered from the current states of all its aggregates,
//! and a party change re-renders every document that names the party (found
//! through the stored party references).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use read_model::documents::{DocumentKind, WorkStatus};
use read_model::{
    AggregateKey, Checkpoint, IdentifierKind, ModelVersion, PartyReferrer, ProvenanceRow, Store, StoreError,
    StoredAggregate, WriteBatch,
};
use serde::Serialize;

use super::render::{PartyDirectory, WorkInputs, parties_named_by_work, render_license, render_work};
use super::rules::apply;
use super::state::{AggregateState, WorkState};
use crate::contract::Topic;
use crate::events::{Change, Event};
use crate::source::{Position, Rejection, SourcedEvent};

/// What a batch did.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// The write that stores the batch, checkpoints included.
    pub write: WriteBatch,
    pub applied: u64,
    /// Events whose version was not newer than the stored one.
    pub skipped_as_duplicates: u64,
    /// Events to park, with their positions.
    pub parked: Vec<(Position, Rejection)>,
}

#[derive(Debug)]
struct Entry {
    version: u64,
    state: Option<AggregateState>,
    /// The state as stored before this batch, kept (moved, not cloned) once the batch changes it.
    before: Option<AggregateState>,
    changed: bool,
}

impl Entry {
    fn apply(&mut self, version: u64, state: AggregateState) {
        if !self.changed {
            self.before = self.state.take();
            self.changed = true;
        }
        self.state = Some(state);
        self.version = version;
    }

    fn before(&self) -> Option<&AggregateState> {
        if self.changed { self.before.as_ref() } else { self.state.as_ref() }
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

type Key = (Topic, String);

/// In-memory view of the aggregates a batch touches, by topic then id (so a
/// lookup by `&str` allocates nothing).
#[derive(Debug, Default)]
struct Aggregates {
    entries: HashMap<Topic, FnvMap<String, Entry>>,
}

/// The states and references of the batch still being written, which the
/// store's committed snapshot does not show yet.
#[derive(Debug, Default)]
struct Overlay<'a> {
    aggregates: HashMap<(&'a str, &'a str), &'a StoredAggregate>,
    references: &'a [(String, PartyReferrer, bool)],
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
        store: &dyn Store,
        version: ModelVersion,
        overlay: &Overlay<'_>,
        keys: BTreeSet<Key>,
    ) -> Result<(), StoreError> {
        let missing: Vec<AggregateKey> = keys
            .into_iter()
            .filter(|(topic, id)| !self.entries.get(topic).is_some_and(|entries| entries.contains_key(id)))
            .map(|(topic, id)| AggregateKey { topic: topic.name().to_owned(), id })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut from_store = Vec::new();
        for key in missing {
            match overlay.aggregates.get(&(key.topic.as_str(), key.id.as_str())) {
                Some(stored) => self.insert(key.clone(), Some(stored))?,
                None => from_store.push(key),
            }
        }
        if !from_store.is_empty() {
            let mut stored = store.aggregates(version, &from_store).await?;
            for key in from_store {
                let found = stored.remove(&key);
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
                (stored.version, Some(decoded))
            }
            None => (0, None),
        };
        let entry = Entry { version, state, before: None, changed: false };
        self.entries.entry(topic).or_default().insert(key.id, entry);
        Ok(())
    }

    fn entry(&self, topic: Topic, id: &str) -> Option<&Entry> {
        self.entries.get(&topic)?.get(id)
    }

    fn state(&self, topic: Topic, id: &str) -> Option<&AggregateState> {
        self.entry(topic, id)?.state.as_ref()
    }

    fn before(&self, topic: Topic, id: &str) -> Option<&AggregateState> {
        self.entry(topic, id)?.before()
    }

    fn parties(&self) -> PartyDirectory<'_> {
        let parties = self.entries.get(&Topic::Parties).into_iter().flatten();
        parties
            .filter_map(|(id, entry)| match &entry.state {
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

/// Projects one batch of events read from `source`.
///
/// `pending` is the previous batch when it may not have committed yet: its
/// changes take precedence over what the store returns.
pub async fn project_batch(
    store: &dyn Store,
    version: ModelVersion,
    source: &str,
    events: &[SourcedEvent],
    pending: Option<&WriteBatch>,
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
        let entries = aggregates.entries.get_mut(&event.topic);
        let Some(entry) = entries.and_then(|entries| entries.get_mut(&event.envelope.aggregate_id)) else {
            continue;
        };
        if event.envelope.aggregate_version <= entry.version {
            outcome.skipped_as_duplicates += 1;
            continue;
        }
        match apply(entry.state.as_ref(), event) {
            Ok(state) => {
                entry.apply(event.envelope.aggregate_version, state);
                outcome.applied += 1;
                note_applied(event, &mut outcome.write, &mut dirty_works, &mut dirty_licenses, &mut dirty_parties);
            }
            Err(reason) => outcome.parked.push((position.clone(), Rejection::of(event, reason))),
        }
    }

    let mut referrers: BTreeSet<(String, PartyReferrer)> =
        store.party_referrers(version, &dirty_parties.iter().cloned().collect::<Vec<_>>()).await?.into_iter().collect();
    for (party, referrer, present) in overlay.references {
        if dirty_parties.contains(party) {
            if *present {
                referrers.insert((party.clone(), referrer.clone()));
            } else {
                referrers.remove(&(party.clone(), referrer.clone()));
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
    let siblings = dirty_works
        .keys()
        .flat_map(|id| {
            [Topic::Works, Topic::Rights, Topic::Disputes, Topic::Certificates].map(|topic| (topic, id.clone()))
        })
        .chain(dirty_licenses.iter().map(|id| (Topic::Licenses, id.clone())))
        .collect();
    aggregates.load(store, version, &overlay, siblings).await?;
    let mut named_parties = BTreeSet::new();
    for id in dirty_works.keys() {
        if let Some(work) = state_of!(aggregates, state, Topic::Works, id, Work) {
            named_parties.extend(parties_named_by_work(work, state_of!(aggregates, state, Topic::Rights, id, Rights)));
        }
    }
    for id in &dirty_licenses {
        if let Some(license) = state_of!(aggregates, state, Topic::Licenses, id, License) {
            named_parties.insert(license.licensee_party_id.clone());
        }
    }
    aggregates
        .load(store, version, &overlay, named_parties.into_iter().map(|id| (Topic::Parties, id)).collect())
        .await?;

    let parties = aggregates.parties();
    for (id, stale) in &dirty_works {
        write_work(&aggregates, &parties, id, *stale, &mut outcome.write);
    }
    for id in &dirty_licenses {
        write_license(&aggregates, &parties, id, &mut outcome.write);
    }
    let mut changed: Vec<(Topic, &String, &Entry)> = aggregates
        .entries
        .iter()
        .flat_map(|(topic, entries)| entries.iter().map(move |(id, entry)| (*topic, id, entry)))
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
    outcome.write.checkpoints = next_offsets
        .into_iter()
        .map(|((stream, partition), next_offset)| Checkpoint {
            source: source.to_owned(),
            stream,
            partition,
            next_offset,
        })
        .collect();
    Ok(outcome)
}

/// Records what an applied event makes dirty, and its provenance entry.
fn note_applied(
    event: &Event,
    write: &mut WriteBatch,
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
                lcc_id: id.clone(),
                recorded_at: event.envelope.recorded_at.0,
                topic: event.topic.name().to_owned(),
                aggregate_version: event.envelope.aggregate_version,
                body: to_body(&entry),
            });
        }
    }
}

fn to_body(document: &impl Serialize) -> Vec<u8> {
    // Documents are plain data; serializing them to a Vec cannot fail.
    serde_json::to_vec(document).unwrap_or_default()
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

fn write_work(aggregates: &Aggregates, parties: &PartyDirectory<'_>, id: &str, stale: Stale, write: &mut WriteBatch) {
    let work = state_of!(aggregates, state, Topic::Works, id, Work);
    let rights = state_of!(aggregates, state, Topic::Rights, id, Rights);
    let work_before = state_of!(aggregates, before, Topic::Works, id, Work);
    let rights_before = state_of!(aggregates, before, Topic::Rights, id, Rights);

    let named =
        |work: Option<&WorkState>, rights| work.map(|work| parties_named_by_work(work, rights)).unwrap_or_default();
    let (named_before, named_after) = (named(work_before, rights_before), named(work, rights));
    for party in named_before.difference(&named_after) {
        write.party_references.push((party.clone(), PartyReferrer::Work(id.to_owned()), false));
    }
    for party in named_after.difference(&named_before) {
        write.party_references.push((party.clone(), PartyReferrer::Work(id.to_owned()), true));
    }
    let (indexed_before, indexed_after) = (identifiers(work_before), identifiers(work));
    for (kind, code) in indexed_before.difference(&indexed_after) {
        write.identifiers.push((*kind, code.clone(), id.to_owned(), false));
    }
    for (kind, code) in indexed_after.difference(&indexed_before) {
        write.identifiers.push((*kind, code.clone(), id.to_owned(), true));
    }

    // Documents exist once the work itself is registered; rights, disputes
    // and certificates that arrive earlier wait in their states.
    let Some(work) = work else { return };
    let rendered = render_work(WorkInputs {
        lcc_id: id,
        work,
        rights,
        disputes: state_of!(aggregates, state, Topic::Disputes, id, Disputes),
        certificate: state_of!(aggregates, state, Topic::Certificates, id, Certificate),
        parties,
    });
    if stale.rights_profile {
        write.documents.push((DocumentKind::RightsProfile, id.to_owned(), Some(to_body(&rendered.rights_profile))));
    }
    if stale.verification {
        write.documents.push((DocumentKind::Verification, id.to_owned(), Some(to_body(&rendered.verification))));
    }
    if stale.metadata {
        write.documents.push((DocumentKind::Metadata, id.to_owned(), Some(to_body(&rendered.metadata))));
    }
    if stale.evidence {
        write.documents.push((DocumentKind::Evidence, id.to_owned(), Some(to_body(&rendered.evidence))));
    }
    match rendered.bulk_row {
        Some(row) if stale.bulk => write.bulk_rows.push((id.to_owned(), Some(to_body(&row)))),
        Some(_) => {}
        None if work_before.is_some_and(|before| before.status == WorkStatus::Published) => {
            write.bulk_rows.push((id.to_owned(), None));
        }
        None => {}
    }
    if let Some(fixture) = rendered.fixture {
        write.fixtures.push((id.to_owned(), Some(to_body(&fixture))));
    }
}

fn write_license(aggregates: &Aggregates, parties: &PartyDirectory<'_>, id: &str, write: &mut WriteBatch) {
    let Some(license) = state_of!(aggregates, state, Topic::Licenses, id, License) else {
        return;
    };
    let before = state_of!(aggregates, before, Topic::Licenses, id, License).map(|before| &before.licensee_party_id);
    if before != Some(&license.licensee_party_id) {
        if let Some(previous) = before {
            write.party_references.push((previous.clone(), PartyReferrer::License(id.to_owned()), false));
        }
        write.party_references.push((license.licensee_party_id.clone(), PartyReferrer::License(id.to_owned()), true));
    }
    let (document, fixture) = render_license(id, license, parties);
    write.documents.push((DocumentKind::LicenseStatus, id.to_owned(), Some(to_body(&document))));
    if let Some(fixture) = fixture {
        write.fixtures.push((id.to_owned(), Some(to_body(&fixture))));
    }
}
