//! What a batch's changes to a work's own states alter outside its
//! documents: the parties it names, its ISWC and ISRC index entries, and the
//! removal of its bulk row. These follow from the works and rights states
//! alone, so a batch that defers rendering writes them too. It must not
//! render documents.

use std::collections::BTreeSet;

use read_model::IdentifierKind;
use read_model::documents::WorkStatus;

use super::aggregates::{Aggregates, state_of};
use crate::contract::Topic;
use crate::projection::render::parties_named_by_work;
use crate::projection::state::{AggregateState, WorkState};

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
pub(super) struct WorkIndexChanges {
    /// The parties the work names now.
    pub(super) named_after: BTreeSet<String>,
    /// A party, and whether the work names it now.
    pub(super) references: Vec<(String, bool)>,
    /// An identifier, and whether it is indexed now.
    pub(super) identifiers: Vec<((IdentifierKind, String), bool)>,
    /// Only a published work has a bulk row (see `render_work`).
    pub(super) removes_bulk_row: bool,
}

impl WorkIndexChanges {
    pub(super) fn of(aggregates: &Aggregates, id: &str) -> WorkIndexChanges {
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

    pub(super) fn is_empty(&self) -> bool {
        self.references.is_empty() && self.identifiers.is_empty() && !self.removes_bulk_row
    }
}
