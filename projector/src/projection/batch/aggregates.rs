//! The aggregates a batch touches, in memory: their states as loaded (from
//! the batch still being written, else from the store), as the batch changes
//! them, and as they were before it. It owns the write versions derived from
//! them; it must not render documents or decide what is stale.

use std::collections::BTreeSet;

use read_model::{
    AggregateKey, ModelVersion, PartyReferenceWrite, ProjectionWrites, StoreError, StoredAggregate, WriteBatch,
    WriteVersion,
};

use crate::contract::Topic;
use crate::projection::FastMap;
use crate::projection::render::PartyDirectory;
use crate::projection::state::AggregateState;

#[derive(Debug)]
pub(super) struct Entry {
    pub(super) version: u64,
    /// The version as stored before this batch.
    pub(super) version_before: u64,
    /// Boxed so that an entry stays small: the maps of a batch's entries are
    /// allocated afresh per batch, and with states inline (368 bytes
    /// each) they took tens of MiB of fresh, zeroed pages every batch.
    pub(super) state: Option<Box<AggregateState>>,
    /// The state as stored before this batch, kept (moved, not cloned) once the batch changes it.
    before: Option<Box<AggregateState>>,
}

impl Entry {
    /// Whether the batch changed the aggregate: only a newer version is applied.
    pub(super) fn changed(&self) -> bool {
        self.version != self.version_before
    }

    pub(super) fn apply(&mut self, version: u64, state: AggregateState) {
        if !self.changed() {
            self.before = self.state.take();
            self.version_before = self.version;
        }
        self.state = Some(Box::new(state));
        self.version = version;
    }

    fn before(&self) -> Option<&AggregateState> {
        if self.changed() { self.before.as_deref() } else { self.state.as_deref() }
    }
}

/// One map by id per topic, found by the topic's position rather than by
/// hashing the topic (a lookup per input of every rendered document).
#[derive(Debug)]
pub(super) struct ByTopic<V>([FastMap<String, V>; Topic::ALL.len()]);

impl<V> Default for ByTopic<V> {
    fn default() -> ByTopic<V> {
        ByTopic(std::array::from_fn(|_| FastMap::default()))
    }
}

impl<V> ByTopic<V> {
    pub(super) fn of(&self, topic: Topic) -> &FastMap<String, V> {
        &self.0[topic as usize]
    }

    pub(super) fn of_mut(&mut self, topic: Topic) -> &mut FastMap<String, V> {
        &mut self.0[topic as usize]
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (Topic, &FastMap<String, V>)> {
        Topic::ALL.into_iter().zip(&self.0)
    }
}

pub(super) type Key = (Topic, String);

/// The aggregates a work's documents are rendered from, beside the parties they name.
pub(super) const WORK_TOPICS: [Topic; 4] = [Topic::Works, Topic::Rights, Topic::Disputes, Topic::Certificates];

/// In-memory view of the aggregates a batch touches, by topic then id (so a
/// lookup by `&str` allocates nothing).
#[derive(Debug, Default)]
pub(super) struct Aggregates {
    pub(super) entries: ByTopic<Entry>,
}

/// The states and references of the batch still being written, which the
/// store's committed snapshot does not show yet.
#[derive(Debug, Default)]
pub(super) struct Overlay<'a> {
    aggregates: FastMap<(&'a str, &'a str), &'a StoredAggregate>,
    pub(super) references: &'a [PartyReferenceWrite],
}

impl<'a> Overlay<'a> {
    /// A state the batch in flight writes.
    pub(super) fn stored(&self, topic: &str, id: &str) -> Option<&'a StoredAggregate> {
        self.aggregates.get(&(topic, id)).copied()
    }

    pub(super) fn of(pending: Option<&'a WriteBatch>) -> Overlay<'a> {
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
    pub(super) async fn load(
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

    pub(super) fn insert(&mut self, key: AggregateKey, stored: Option<&StoredAggregate>) -> Result<(), StoreError> {
        let topic = Topic::from_name(&key.topic).ok_or_else(|| StoreError::Corrupt(format!("topic {}", key.topic)))?;
        let (version, state) = match stored {
            Some(stored) => {
                let decoded = AggregateState::decode(topic, &stored.state)
                    .map_err(|error| StoreError::Corrupt(format!("state of {} {}: {error}", key.topic, key.id)))?;
                (stored.version, Some(Box::new(decoded)))
            }
            None => (0, None),
        };
        let entry = Entry { version, version_before: version, state, before: None };
        self.entries.of_mut(topic).insert(key.id, entry);
        Ok(())
    }

    pub(super) fn entry(&self, topic: Topic, id: &str) -> Option<&Entry> {
        self.entries.of(topic).get(id)
    }

    pub(super) fn state(&self, topic: Topic, id: &str) -> Option<&AggregateState> {
        self.entry(topic, id)?.state.as_deref()
    }

    pub(super) fn before(&self, topic: Topic, id: &str) -> Option<&AggregateState> {
        self.entry(topic, id)?.before()
    }

    /// The sum of the stored versions of the given aggregates (0 for one never seen).
    pub(super) fn version_sum<'k>(&self, keys: impl IntoIterator<Item = (Topic, &'k str)>) -> u64 {
        keys.into_iter().map(|(topic, id)| self.entry(topic, id).map_or(0, |entry| entry.version)).sum()
    }

    /// The write version of a work's documents: its own four aggregates, then the parties it names.
    pub(super) fn work_write_version(&self, id: &str, named_parties: &BTreeSet<String>) -> WriteVersion {
        let own = self.version_sum(WORK_TOPICS.map(|topic| (topic, id)));
        let referenced = self.version_sum(named_parties.iter().map(|party| (Topic::Parties, party.as_str())));
        WriteVersion::of_inputs(own, referenced)
    }

    pub(super) fn parties(&self) -> PartyDirectory<'_> {
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

pub(super) use state_of;

#[cfg(test)]
mod tests {
    use read_model::{Checkpoint, PartyReferrer};

    use super::*;

    fn aggregates_at(versions: &[(Topic, &str, u64)]) -> Aggregates {
        let mut aggregates = Aggregates::default();
        for (topic, id, version) in versions {
            let entry = Entry { version: *version, version_before: *version, state: None, before: None };
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
