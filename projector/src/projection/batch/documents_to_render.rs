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
            to_render.add(document.clone(), Stale::ALL);
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

    /// Every document with the parts of it to render: works first, then
    /// licenses (whose one document has no parts), each kind in key order.
    pub fn into_sorted(self) -> impl Iterator<Item = (PartyReferrer, Parts)> {
        let works = self.works.into_iter().map(|(id, stale)| (PartyReferrer::Work(id), Parts::of(stale)));
        let licenses = self.licenses.into_iter().map(|id| (PartyReferrer::License(id), Parts(0)));
        works.chain(licenses)
    }

    /// Adds a document with the parts of it to render.
    pub fn insert(&mut self, document: PartyReferrer, parts: Parts) {
        self.add(document, parts.stale());
    }

    /// Adds a document: a work with the parts `stale` names, a license whole.
    fn add(&mut self, document: PartyReferrer, stale: Stale) {
        match document {
            PartyReferrer::Work(id) => self.works.entry(id).or_default().merge(stale),
            PartyReferrer::License(id) => {
                self.licenses.insert(id);
            }
        }
    }
}

/// The parts of a document to render, as one byte: what
/// [`DocumentsToRender::into_sorted`] gives and [`DocumentsToRender::insert`]
/// takes back, for whoever keeps documents waiting in a form of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts(u8);

impl Parts {
    fn of(stale: Stale) -> Parts {
        let bits = [stale.rights_profile, stale.verification, stale.metadata, stale.evidence, stale.bulk];
        Parts(bits.iter().enumerate().fold(0, |byte, (bit, set)| byte | (u8::from(*set) << bit)))
    }

    fn stale(self) -> Stale {
        let set = |bit: u8| self.0 & (1 << bit) != 0;
        Stale { rights_profile: set(0), verification: set(1), metadata: set(2), evidence: set(3), bulk: set(4) }
    }

    pub fn to_byte(self) -> u8 {
        self.0
    }

    pub fn from_byte(byte: u8) -> Parts {
        Parts(byte)
    }

    /// The parts of either.
    pub fn union(self, other: Parts) -> Parts {
        Parts(self.0 | other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_survive_their_byte_and_documents_their_sorted_form() {
        for stale in [Stale::NONE, Stale::ALL, Stale::PARTY_CHANGE, Stale::VERIFICATION_INPUTS] {
            assert_eq!(Parts::from_byte(Parts::of(stale).to_byte()).stale(), stale);
        }
        let mut documents = DocumentsToRender::of(&[PartyReferrer::License("L-1".into())]);
        documents.works.insert("LCC-2".into(), Stale::VERIFICATION_INPUTS);
        documents.works.insert("LCC-1".into(), Stale::PARTY_CHANGE);
        let sorted: Vec<(PartyReferrer, Parts)> = documents.clone().into_sorted().collect();
        assert_eq!(
            sorted.iter().map(|(document, _)| document.clone()).collect::<Vec<_>>(),
            [
                PartyReferrer::Work("LCC-1".into()),
                PartyReferrer::Work("LCC-2".into()),
                PartyReferrer::License("L-1".into())
            ]
        );
        let mut again = DocumentsToRender::default();
        for (document, parts) in sorted {
            again.insert(document, parts);
        }
        assert_eq!(again, documents);
    }
}
