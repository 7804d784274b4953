//! What is left to render: the documents whose inputs a batch changed,
//! works with the parts of them a change can alter. Batches merge into it,
//! and deferred rendering takes it out in slices. It must not render.

use std::collections::{BTreeMap, BTreeSet};

use read_model::PartyReferrer;

use crate::contract::Topic;

/// Which of a work's documents a change can alter; the others are not rewritten.
///
/// Each document depends on a fixed set of aggregates (its `updatedAt`
/// included), so an event on a topic outside that set leaves it as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Stale {
    pub(super) rights_profile: bool,
    pub(super) verification: bool,
    pub(super) metadata: bool,
    pub(super) evidence: bool,
    pub(super) bulk: bool,
}

impl Stale {
    pub(super) const NONE: Stale =
        Stale { rights_profile: false, verification: false, metadata: false, evidence: false, bulk: false };
    pub(super) const ALL: Stale =
        Stale { rights_profile: true, verification: true, metadata: true, evidence: true, bulk: true };
    /// Party names appear in every document but the verification inputs.
    pub(super) const PARTY_CHANGE: Stale = Stale { verification: false, ..Stale::ALL };
    /// Disputes and certificates feed verification and evidence only.
    pub(super) const VERIFICATION_INPUTS: Stale =
        Stale { rights_profile: false, verification: true, metadata: false, evidence: true, bulk: false };

    pub(super) fn of_topic(topic: Topic) -> Stale {
        match topic {
            Topic::Disputes | Topic::Certificates => Stale::VERIFICATION_INPUTS,
            _ => Stale::ALL,
        }
    }

    pub(super) fn merge(&mut self, other: Stale) {
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
    pub(super) works: BTreeMap<String, Stale>,
    pub(super) licenses: BTreeSet<String>,
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
