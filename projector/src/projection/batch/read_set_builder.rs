//! Collects what a batch's documents were rendered from, for the store to
//! check against other projectors' writes ([`read_model::read_set`]). It
//! only records; it must not read the store.

use read_model::{AggregateKey, PartyReferrer, ReadInput, ReadSet};

use super::aggregates::{Aggregates, ByTopic, Entry};
use crate::contract::Topic;

/// Collects a batch's [`ReadSet`] while its documents are rendered.
#[derive(Debug, Default)]
pub(super) struct ReadSetBuilder {
    read_set: ReadSet,
    /// Positions in `read_set.inputs`, by topic then id (so a lookup by `&str` allocates nothing).
    inputs: ByTopic<usize>,
}

impl ReadSetBuilder {
    /// Notes a rendered document and the aggregates it was rendered from.
    pub(super) fn document<'k>(
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
        let changed = entry.filter(|entry| entry.changed());
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
    pub(super) fn finish(mut self, aggregates: &Aggregates, changed_parties: Vec<String>) -> ReadSet {
        for (topic, entries) in aggregates.entries.iter() {
            for (id, entry) in entries.iter().filter(|(_, entry)| entry.changed()) {
                self.input(topic, id, Some(entry));
            }
        }
        ReadSet { changed_parties, ..self.read_set }
    }
}
