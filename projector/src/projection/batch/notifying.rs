//! Notifications of the answers a batch's rendering changes
//! ([`read_model::notifications`]).
//!
//! The projector does not read the documents it replaces, so it keeps, per
//! work and per license, what it last notified: the entity tag of each
//! answer and whether the work was withdrawn. These are stored as states
//! under topics of their own (`notified-works`, `notified-licenses`) in the
//! same write as the documents, so they commit with them on SQLite and,
//! on ScyllaDB, a replay after a crash before the states were written
//! records the same notification again (same id, same version) rather
//! than none. A rendering whose tags equal the stored ones records nothing:
//! an unchanged replay notifies no one.
//!
//! Tags are computed from the bytes the batch stores, with the functions
//! the query API serves them with ([`read_model::answer_tags`]). An answer
//! not rendered by the batch (its inputs did not change) keeps its tag.
//! This module must not decide what is rendered.

use read_model::answer_tags::{self, ProvenanceVersions};
use read_model::calendar::{Date, Timestamp};
use read_model::notifications::{Answer, AnswerTags, Notification, NotificationWrite, Subject, digest_of};
use read_model::{AggregateKey, Audience, ModelVersion, ProjectionWrites, StoreError, StoredAggregate, WriteBatch};

use super::aggregates::Overlay;
use crate::projection::FastMap;
use crate::projection::render::PartyDirectory;

/// The state topics of what was last notified.
const NOTIFIED_WORKS: &str = "notified-works";
const NOTIFIED_LICENSES: &str = "notified-licenses";

/// What was last notified of one work or license.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Notified {
    version: u64,
    withdrawn: bool,
    /// The 128-bit digest of each answer's tag, in the order of [`Answer::ALL`]; 0 for none.
    digests: [u128; 6],
}

impl Notified {
    /// One byte of flags (bit 0: withdrawn; bit 1 + i: answer i has a tag), then the present digests.
    fn encode(&self) -> Vec<u8> {
        let mut flags = u8::from(self.withdrawn);
        let mut bytes = vec![0];
        for (index, digest) in self.digests.iter().enumerate() {
            if *digest != 0 {
                flags |= 2 << index;
                bytes.extend_from_slice(&digest.to_be_bytes());
            }
        }
        bytes[0] = flags;
        bytes
    }

    fn decode(version: u64, bytes: &[u8]) -> Option<Notified> {
        let (flags, mut rest) = bytes.split_first()?;
        let mut digests = [0; 6];
        for (index, digest) in digests.iter_mut().enumerate() {
            if flags & (2 << index) != 0 {
                let (head, tail) = rest.split_first_chunk::<16>()?;
                *digest = u128::from_be_bytes(*head);
                rest = tail;
            }
        }
        rest.is_empty().then_some(Notified { version, withdrawn: flags & 1 != 0, digests })
    }

    fn tag(&self, answer: Answer) -> Option<String> {
        let digest = self.digests[answer.index()];
        (digest != 0).then(|| answer.tag(digest))
    }
}

/// The tags a batch computed for one subject's rendered answers.
#[derive(Debug, Default)]
pub(super) struct RenderedTags {
    tags: Vec<(Answer, String)>,
}

impl RenderedTags {
    pub(super) fn stored_json(&mut self, answer: Answer, id: &str, body: &[u8]) {
        self.tags.push((answer, answer_tags::stored_json(Audience::of(id), body)));
    }

    /// The weak tags of a work's verification and evidence, from their stored inputs.
    pub(super) fn verification(&mut self, id: &str, body: &[u8], protection_ends_on: Option<Date>) {
        let in_force = answer_tags::in_force(protection_ends_on, today());
        self.tags.push((Answer::Verification, answer_tags::verification(Audience::of(id), body, in_force, None)));
    }

    pub(super) fn evidence(
        &mut self,
        id: &str,
        body: &[u8],
        protection_ends_on: Option<Date>,
        versions: ProvenanceVersions,
    ) {
        let in_force = answer_tags::in_force(protection_ends_on, today());
        self.tags.push((Answer::Evidence, answer_tags::evidence(Audience::of(id), body, in_force, versions)));
    }

    pub(super) fn provenance(&mut self, id: &str, versions: ProvenanceVersions) {
        self.tags.push((Answer::Provenance, answer_tags::provenance(Audience::of(id), id, versions)));
    }
}

fn today() -> Date {
    Date::of(Timestamp::now())
}

/// The IPI name numbers of `party_ids` that have one, sorted and each once.
pub(super) fn ipis<'p>(party_ids: impl IntoIterator<Item = &'p String>, parties: &PartyDirectory<'_>) -> Vec<String> {
    let ipis: std::collections::BTreeSet<&str> = party_ids
        .into_iter()
        .filter_map(|id| parties.get(id.as_str()).and_then(|party| party.ipi.as_deref()))
        .collect();
    ipis.into_iter().map(str::to_owned).collect()
}

/// What was last notified of the subjects a batch renders, loaded before rendering.
#[derive(Debug, Default)]
pub(super) struct NotifiedStates {
    states: FastMap<(Subject, String), Notified>,
}

impl NotifiedStates {
    /// Loads the states of `works` and `licenses`: from the batch in flight, else from the store.
    pub(super) async fn load<'i>(
        store: &dyn ProjectionWrites,
        version: ModelVersion,
        overlay: &Overlay<'_>,
        works: impl Iterator<Item = &'i String>,
        licenses: impl Iterator<Item = &'i String>,
    ) -> Result<NotifiedStates, StoreError> {
        let subjects: Vec<(Subject, &String)> =
            works.map(|id| (Subject::Work, id)).chain(licenses.map(|id| (Subject::License, id))).collect();
        let mut states = FastMap::with_capacity_and_hasher(subjects.len(), Default::default());
        let mut from_store = Vec::new();
        for (subject, id) in subjects {
            let key = AggregateKey { topic: topic_of(subject).to_owned(), id: id.clone() };
            match overlay.stored(&key.topic, &key.id) {
                Some(stored) => {
                    states.insert((subject, id.clone()), decoded(&key, stored)?);
                }
                None => from_store.push((subject, key)),
            }
        }
        if !from_store.is_empty() {
            let keys: Vec<AggregateKey> = from_store.iter().map(|(_, key)| key.clone()).collect();
            let stored = store.aggregates(version, &keys).await?;
            for ((subject, key), found) in from_store.into_iter().zip(stored) {
                if let Some(found) = found {
                    states.insert((subject, key.id.clone()), decoded(&key, &found)?);
                }
            }
        }
        Ok(NotifiedStates { states })
    }

    /// Records a notification of `id` in `write` when `rendered` changes a
    /// tag, or when the work became withdrawn, with a version above the
    /// last one and at least `write_version` (the rendering's). Like the
    /// notifications themselves, the version stored depends on which
    /// renderings a stream's batches made; the tags do not.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record(
        &mut self,
        subject: Subject,
        id: &str,
        write_version: u64,
        withdrawn: bool,
        rendered: RenderedTags,
        parties: Vec<String>,
        write: &mut WriteBatch,
    ) {
        let previous = self.states.get(&(subject, id.to_owned())).cloned().unwrap_or_default();
        let mut next = Notified { withdrawn, ..previous.clone() };
        let mut changed = Vec::new();
        for (answer, tag) in &rendered.tags {
            let index = answer.index();
            // Every tag `answer_tags` makes names a digest; none reads as no tag.
            let digest = digest_of(tag).unwrap_or(0);
            if next.digests[index] != digest {
                next.digests[index] = digest;
                changed.push(*answer);
            }
        }
        let newly_withdrawn = withdrawn && !previous.withdrawn;
        if changed.is_empty() && withdrawn == previous.withdrawn {
            return;
        }
        changed.sort();
        next.version = write_version.max(previous.version + 1);
        let mut tags = AnswerTags::default();
        for answer in Answer::ALL {
            if let Some(tag) = next.tag(answer) {
                tags.set(answer, tag);
            }
        }
        let notification = Notification {
            subject,
            id: id.to_owned(),
            version: next.version,
            withdrawn: newly_withdrawn,
            changed,
            tags,
            parties,
        };
        write.notifications.push(NotificationWrite {
            id: id.to_owned(),
            version: next.version,
            body: notification.encode(),
        });
        self.store(subject, id, next, write);
    }

    /// Writes what was last notified of a subject, and keeps it for the rest of the batch.
    fn store(&mut self, subject: Subject, id: &str, notified: Notified, write: &mut WriteBatch) {
        write.aggregates.push((
            AggregateKey { topic: topic_of(subject).to_owned(), id: id.to_owned() },
            StoredAggregate { version: notified.version, state: notified.encode() },
        ));
        self.states.insert((subject, id.to_owned()), notified);
    }
}

fn topic_of(subject: Subject) -> &'static str {
    match subject {
        Subject::Work => NOTIFIED_WORKS,
        Subject::License => NOTIFIED_LICENSES,
    }
}

fn decoded(key: &AggregateKey, stored: &StoredAggregate) -> Result<Notified, StoreError> {
    Notified::decode(stored.version, &stored.state)
        .ok_or_else(|| StoreError::Corrupt(format!("notified state of {} {}", key.topic, key.id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(tags: &[(Answer, &str)]) -> RenderedTags {
        RenderedTags { tags: tags.iter().map(|(answer, tag)| (*answer, (*tag).to_owned())).collect() }
    }

    fn notifications(write: &WriteBatch) -> Vec<Notification> {
        let decoded = |written: &NotificationWrite| Notification::decode(&written.id, &written.body).expect("stored");
        write.notifications.iter().map(decoded).collect()
    }

    #[test]
    fn states_round_trip_with_only_the_tags_they_have() {
        let notified = Notified { version: 9, withdrawn: true, digests: [1, 0, u128::MAX, 0, 0, 0] };
        let bytes = notified.encode();
        assert_eq!(bytes.len(), 33);
        assert_eq!(Notified::decode(9, &bytes), Some(notified));
        assert_eq!(Notified::decode(9, &bytes[..20]), None, "a cut state");
        assert_eq!(Notified::decode(9, &[]), None);
    }

    #[test]
    fn a_changed_tag_is_notified_once_with_every_tag_and_a_growing_version() {
        let mut states = NotifiedStates::default();
        let mut write = WriteBatch::default();
        let rights = "\"0000000000000000000000000000000a\"";
        let evidence = "W/\"0000000000000000000000000000000b\"";
        let first = rendered(&[(Answer::Rights, rights), (Answer::Evidence, evidence)]);
        states.record(Subject::Work, "LCC-1", 7 << 28, false, first, Vec::new(), &mut write);
        states.record(
            Subject::Work,
            "LCC-1",
            7 << 28,
            false,
            rendered(&[(Answer::Rights, rights)]),
            Vec::new(),
            &mut write,
        );
        assert_eq!(write.aggregates.len(), 1, "the same rendering again stores nothing");
        let renamed = "\"0000000000000000000000000000000c\"";
        states.record(
            Subject::Work,
            "LCC-1",
            7 << 28,
            true,
            rendered(&[(Answer::Rights, renamed)]),
            Vec::new(),
            &mut write,
        );
        let all = notifications(&write);
        assert_eq!(all.len(), 2, "the unchanged rendering notified no one: {all:?}");
        assert_eq!(all[0].changed, [Answer::Rights, Answer::Evidence]);
        assert_eq!(all[0].version, 7 << 28);
        assert!(!all[0].withdrawn);
        assert_eq!(all[1].changed, [Answer::Rights]);
        assert_eq!(all[1].version, (7 << 28) + 1, "above the last even without a newer input");
        assert!(all[1].withdrawn);
        assert_eq!(all[1].tags.get(Answer::Rights), Some(renamed));
        assert_eq!(all[1].tags.get(Answer::Evidence), Some(evidence), "an answer not rendered keeps its tag");
        assert_eq!(write.aggregates.len(), 2, "a state beside each notification");
    }
}
