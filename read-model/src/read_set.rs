//! What a batch's documents were rendered from, so that its write can be
//! checked against the writes of other projectors sharing the store.
//!
//! A consumer group splits each topic's partitions among projectors, but a
//! document's inputs span topics: a work names parties that another
//! projector owns. Two races follow, and both leave a stale document:
//! - a projector renders a work with a party's old name while another
//!   projector commits the rename;
//! - a projector renames a party without re-rendering a work whose new
//!   reference to the party another projector has not committed yet.
//!
//! A batch therefore carries its read set: the aggregates its documents were
//! rendered from and did not change themselves, with the versions read, and
//! the parties it changed. A document is stale when one of its inputs has
//! another version now, or when it names a changed party and was not
//! rendered. SQLite checks inside the write transaction and refuses the whole
//! batch ([`crate::StoreError::WriteConflict`]); ScyllaDB, which has no
//! transactions, checks after the write and reports the stale documents for
//! the projector to render again. A batch with stale documents leaves its
//! checkpoints to the batch that renders them again, so a projector killed
//! between its write and that render reads the events again, and their
//! documents are rendered from the states stored then.
//!
//! The check costs reads, so a backend that can prove nobody else has
//! written since the batch's reads began ([`CommitMark`]) skips it.
//!
//! Within one work's own aggregates (works, rights, disputes, certificates)
//! there is no race as long as the four topics have the same partition
//! count: keys partition alike, and the range assignor gives partition N of
//! every topic to one member.

use std::collections::BTreeSet;

use crate::records::{AggregateKey, PartyReferrer, StoredAggregate};

/// The inputs of a batch's documents, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadSet {
    /// The documents the batch rendered.
    pub documents: Vec<PartyReferrer>,
    /// The aggregates they were rendered from that the batch did not change.
    pub inputs: Vec<ReadInput>,
    /// The parties the batch changed; every document naming one must have been rendered.
    pub changed_parties: Vec<String>,
    /// A commit that every read of the batch came after, when the backend gave one.
    pub read_after: Option<CommitMark>,
}

/// One aggregate a batch read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadInput {
    pub key: AggregateKey,
    /// The version read; 0 when the aggregate did not exist.
    pub version: u64,
    /// The version the batch writes, when it changes the aggregate itself.
    /// Its partition has one owner, but a member that lost it (a zombie
    /// past its session, or a broker that assigns before the old owner has
    /// let go) may still write it; the check fences that writer off.
    pub written: Option<u64>,
    /// Indices into [`ReadSet::documents`] of the documents rendered from it.
    pub dependents: Vec<u32>,
}

/// When a backend checks a read set: before writing, the inputs must be as
/// read; after writing, the aggregates the batch changed must be as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckMoment {
    BeforeWrite,
    AfterWrite,
}

/// A point in a backend's commit order, as [`crate::ProjectionWrites::apply_batch`]
/// returns it: the writer connection and what it knew of other writers then.
/// A backend that finds the same mark at its next write knows that nobody
/// else has committed in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitMark {
    pub writer: u64,
    pub sequence: u64,
}

impl ReadSet {
    /// Whether there is nothing to check: the batch rendered no document and changed no party.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty() && self.changed_parties.is_empty()
    }

    /// The keys whose versions the check compares.
    pub fn input_keys(&self) -> Vec<AggregateKey> {
        self.inputs.iter().map(|input| input.key.clone()).collect()
    }

    /// The inputs whose current version (in `current`, the stored states of
    /// [`ReadSet::input_keys`] as the store reads them, in that order;
    /// `None`, or no answer at all: no aggregate) is not the one expected at
    /// `moment`, each with its current version.
    pub fn changed_inputs<'a>(
        &'a self,
        current: &'a [Option<StoredAggregate>],
        moment: CheckMoment,
    ) -> impl Iterator<Item = (&'a ReadInput, u64)> {
        self.inputs.iter().enumerate().filter_map(move |(index, input)| {
            let expected = match moment {
                CheckMoment::BeforeWrite => input.version,
                CheckMoment::AfterWrite => input.written.unwrap_or(input.version),
            };
            let now = current.get(index).and_then(Option::as_ref).map_or(0, |stored| stored.version);
            (now != expected).then_some((input, now))
        })
    }

    /// The documents naming a changed party that the batch did not render.
    pub fn unrendered_referrers<'a>(
        &'a self,
        current_referrers: &'a [(String, PartyReferrer)],
    ) -> impl Iterator<Item = &'a PartyReferrer> {
        let rendered: BTreeSet<&PartyReferrer> = self.documents.iter().collect();
        current_referrers.iter().map(|(_, referrer)| referrer).filter(move |referrer| !rendered.contains(referrer))
    }

    /// The documents that are stale after the write, given the current
    /// versions of the inputs and the current referrers of the changed parties.
    pub fn stale_documents(
        &self,
        current: &[Option<StoredAggregate>],
        current_referrers: &[(String, PartyReferrer)],
    ) -> BTreeSet<PartyReferrer> {
        let mut stale = BTreeSet::new();
        for (input, _) in self.changed_inputs(current, CheckMoment::AfterWrite) {
            stale.extend(input.dependents.iter().filter_map(|index| self.documents.get(*index as usize)).cloned());
        }
        stale.extend(self.unrendered_referrers(current_referrers).cloned());
        stale
    }

    /// Why the batch must not be written, checked before writing: the first
    /// input that has changed since it was read, or the first document naming
    /// a changed party that the batch did not render.
    pub fn conflict(
        &self,
        current: &[Option<StoredAggregate>],
        current_referrers: &[(String, PartyReferrer)],
    ) -> Option<String> {
        if let Some((input, now)) = self.changed_inputs(current, CheckMoment::BeforeWrite).next() {
            return Some(format!(
                "{} {} is at version {now}, read at {}",
                input.key.topic, input.key.id, input.version
            ));
        }
        let unrendered = self.unrendered_referrers(current_referrers).next()?;
        Some(format!("{unrendered:?} names a changed party and was not rendered"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(topic: &str, id: &str) -> AggregateKey {
        AggregateKey { topic: topic.to_owned(), id: id.to_owned() }
    }

    fn read_set() -> ReadSet {
        ReadSet {
            documents: vec![PartyReferrer::Work("LCC-1".into()), PartyReferrer::License("LIC-1".into())],
            inputs: vec![
                ReadInput { key: key("parties", "PTY-1"), version: 4, written: None, dependents: vec![0, 1] },
                ReadInput { key: key("rights", "LCC-1"), version: 0, written: None, dependents: vec![0] },
                ReadInput { key: key("works", "LCC-1"), version: 2, written: Some(3), dependents: vec![0] },
            ],
            changed_parties: vec!["PTY-2".into()],
            read_after: None,
        }
    }

    /// The stored versions of the read set's inputs, in their order; an input not listed has no aggregate.
    fn versions(entries: &[(&str, &str, u64)]) -> Vec<Option<StoredAggregate>> {
        read_set()
            .input_keys()
            .iter()
            .map(|input| {
                entries
                    .iter()
                    .find(|(topic, id, _)| key(topic, id) == *input)
                    .map(|(_, _, version)| StoredAggregate { version: *version, state: Vec::new() })
            })
            .collect()
    }

    #[test]
    fn nothing_is_stale_while_the_inputs_are_as_read_and_written() {
        let referrers = [("PTY-2".to_owned(), PartyReferrer::Work("LCC-1".into()))];
        let before = versions(&[("parties", "PTY-1", 4), ("works", "LCC-1", 2)]);
        assert_eq!(read_set().conflict(&before, &referrers), None);
        let after = versions(&[("parties", "PTY-1", 4), ("works", "LCC-1", 3)]);
        assert!(read_set().stale_documents(&after, &referrers).is_empty());
    }

    #[test]
    fn a_changed_input_makes_its_dependents_stale() {
        let renamed = versions(&[("parties", "PTY-1", 5), ("works", "LCC-1", 3)]);
        let stale = read_set().stale_documents(&renamed, &[]);
        assert_eq!(stale.len(), 2, "{stale:?}");
        let before = versions(&[("parties", "PTY-1", 5), ("works", "LCC-1", 2)]);
        assert_eq!(read_set().conflict(&before, &[]).as_deref(), Some("parties PTY-1 is at version 5, read at 4"));

        let rights_arrived = versions(&[("parties", "PTY-1", 4), ("rights", "LCC-1", 1), ("works", "LCC-1", 3)]);
        let stale = read_set().stale_documents(&rights_arrived, &[]);
        assert_eq!(stale.into_iter().collect::<Vec<_>>(), [PartyReferrer::Work("LCC-1".into())]);
    }

    #[test]
    fn an_input_the_store_gave_no_answer_for_counts_as_absent() {
        let short = versions(&[("parties", "PTY-1", 4)]).into_iter().take(1).collect::<Vec<_>>();
        assert_eq!(read_set().conflict(&short, &[]).as_deref(), Some("works LCC-1 is at version 0, read at 2"));
    }

    #[test]
    fn another_writer_of_an_aggregate_the_batch_changes_is_a_conflict() {
        let overtaken = versions(&[("parties", "PTY-1", 4), ("works", "LCC-1", 4)]);
        assert_eq!(read_set().conflict(&overtaken, &[]).as_deref(), Some("works LCC-1 is at version 4, read at 2"));
        assert_eq!(read_set().stale_documents(&overtaken, &[]).len(), 1);
    }

    #[test]
    fn a_document_naming_a_changed_party_that_was_not_rendered_is_stale() {
        let current = versions(&[("parties", "PTY-1", 4), ("works", "LCC-1", 3)]);
        let referrers = [("PTY-2".to_owned(), PartyReferrer::Work("LCC-9".into()))];
        let stale = read_set().stale_documents(&current, &referrers);
        assert_eq!(stale.into_iter().collect::<Vec<_>>(), [PartyReferrer::Work("LCC-9".into())]);
        let before = versions(&[("parties", "PTY-1", 4), ("works", "LCC-1", 2)]);
        assert!(read_set().conflict(&before, &referrers).is_some());
    }
}
