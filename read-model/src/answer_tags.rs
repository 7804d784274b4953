//! The entity tags of the API's answers, computed here so that the query
//! API (which serves them in `ETag`) and the projector (which records them
//! in notifications) compute the same tag from the same stored bytes.
//!
//! An answer served as stored (a rights profile, a Dublin Core record as
//! JSON, a license status) gets a strong tag over its bytes. An answer
//! computed at request time gets a weak tag over what it states, computed
//! from the stored inputs without what the answer leaves out or derives
//! from the instant of the request:
//! - verification: the stored inputs (but their `updatedAt`), and whether
//!   protection is in force on the day; not `checkedOn`;
//! - provenance: the newest applied version of each of the work's topics,
//!   which name the set of its entries (an entry is recorded exactly when
//!   an event raises one of those versions);
//! - evidence: the stored inputs (but their `updatedAt`), whether protection
//!   is in force, and the provenance versions; not the remaining term, the
//!   issue instant or the signature.
//!
//! So a weak tag changes exactly when the registry's records change what the
//! answer states, or when a term of protection ends. Tags are 128-bit XXH3
//! hashes, the same on every replica and in every process of one build.

use std::hash::{BuildHasher, Hasher};

use foldhash::quality::FixedState;

use crate::calendar::Date;
use crate::identifiers::Audience;

/// The content type of JSON answers, as the API sends it.
pub const JSON: &[u8] = b"application/json";

/// The topics whose events a work's provenance records, in the order of
/// [`ProvenanceVersions`].
pub const PROVENANCE_TOPICS: [&str; 4] = ["works", "rights", "disputes", "certificates"];

/// Who an answer is served to: answers to a sandbox key, a production key
/// and no key are tagged apart even when their bytes are equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Requester {
    Keyless = 0,
    Sandbox = 1,
    Production = 2,
}

impl Requester {
    /// The requester of a keyed answer about a record of `audience`.
    pub fn keyed(audience: Audience) -> Requester {
        match audience {
            Audience::Sandbox => Requester::Sandbox,
            Audience::Production => Requester::Production,
        }
    }
}

/// The newest applied version of each of a work's own topics, in the order
/// of [`PROVENANCE_TOPICS`] (0 where none was applied).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProvenanceVersions(pub [u64; 4]);

impl ProvenanceVersions {
    /// Raises the version of `topic` to `version` (entries arrive in any order).
    pub fn note(&mut self, topic: &str, version: u64) {
        if let Some(index) = PROVENANCE_TOPICS.iter().position(|name| *name == topic) {
            self.0[index] = self.0[index].max(version);
        }
    }
}

/// The strong tag of an answer sent as `body` with `content_type`.
pub fn strong(requester: Requester, content_type: &[u8], body: &[u8]) -> String {
    quoted(hash(requester, content_type, &[body]))
}

/// The strong tag of a JSON answer served exactly as stored.
pub fn stored_json(audience: Audience, body: &[u8]) -> String {
    strong(Requester::keyed(audience), JSON, body)
}

/// The weak tag of a verification answer computed from the stored inputs
/// `inputs` on a day when protection is (or is not) `in_force`.
/// `file_hash_matches` is the outcome of the file check a request asked
/// for, `None` for the plain answer (the one notifications name).
pub fn verification(audience: Audience, inputs: &[u8], in_force: bool, file_hash_matches: Option<bool>) -> String {
    let file_check = match file_hash_matches {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    };
    weak(hash(Requester::keyed(audience), b"verification", &[stated(inputs), &[u8::from(in_force), file_check]]))
}

/// The weak tag of a work's provenance.
pub fn provenance(audience: Audience, lcc_id: &str, versions: ProvenanceVersions) -> String {
    let versions = versions_bytes(versions);
    weak(hash(Requester::keyed(audience), b"provenance", &[lcc_id.as_bytes(), &versions]))
}

/// The weak tag of an evidence package: what it states, without the instant
/// it was issued at and the remaining term counted from it.
pub fn evidence(audience: Audience, inputs: &[u8], in_force: bool, versions: ProvenanceVersions) -> String {
    let versions = versions_bytes(versions);
    weak(hash(Requester::keyed(audience), b"evidence", &[stated(inputs), &[u8::from(in_force)], &versions]))
}

/// Whether a term of protection ending on `ends_on` is in force on `today`.
pub fn in_force(ends_on: Option<Date>, today: Date) -> bool {
    ends_on.is_some_and(|ends| ends >= today)
}

/// The stored inputs without their `updatedAt`, which no answer states.
/// Stored inputs are serialized with `updatedAt` as their last member (a
/// unit test of each input document holds it there).
fn stated(inputs: &[u8]) -> &[u8] {
    const UPDATED_AT: &[u8] = b",\"updatedAt\":";
    inputs.windows(UPDATED_AT.len()).rposition(|window| window == UPDATED_AT).map_or(inputs, |at| &inputs[..at])
}

fn versions_bytes(versions: ProvenanceVersions) -> [u8; 32] {
    let mut bytes = [0; 32];
    for (chunk, version) in bytes.chunks_exact_mut(8).zip(versions.0) {
        chunk.copy_from_slice(&version.to_be_bytes());
    }
    bytes
}

/// A 128-bit XXH3 of `parts`, seeded with the requester and `label` (the
/// content type of a strong tag, the answer's name for a weak one). One
/// pass over the body: it runs on every answer.
fn hash(requester: Requester, label: &[u8], parts: &[&[u8]]) -> u128 {
    let mut seed = FixedState::with_seed(0x6c63_635f_7461_6733).build_hasher();
    seed.write_u8(requester as u8);
    seed.write(label);
    match parts {
        [body] => twox_hash::XxHash3_128::oneshot_with_seed(seed.finish(), body),
        parts => {
            // Each part with its length, so that no two splits of one byte string hash alike.
            let mut joined = Vec::with_capacity(parts.iter().map(|part| part.len() + 8).sum());
            for part in parts {
                joined.extend_from_slice(&(part.len() as u64).to_be_bytes());
                joined.extend_from_slice(part);
            }
            twox_hash::XxHash3_128::oneshot_with_seed(seed.finish(), &joined)
        }
    }
}

/// A strong tag with this digest, as the API serves it.
pub(crate) fn quoted(digest: u128) -> String {
    tag_text("", digest)
}

/// A weak tag with this digest, as the API serves it.
pub(crate) fn weak(digest: u128) -> String {
    tag_text("W/", digest)
}

/// `prefix`, then the digest as 32 lowercase hexadecimal digits in quotes.
/// Written without the formatting machinery, which costs more than hashing
/// the body: every answer to a `GET` gets a tag.
fn tag_text(prefix: &str, digest: u128) -> String {
    let mut quoted = [b'"'; 34];
    crate::hex::write_lower_hex(&digest.to_be_bytes(), &mut quoted[1..33]);
    let mut text = String::with_capacity(prefix.len() + quoted.len());
    text.push_str(prefix);
    // Only quotes and digits were written, so this never falls back.
    text.push_str(std::str::from_utf8(&quoted).unwrap_or_default());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strong_tags_differ_by_requester_content_type_and_bytes() {
        let json = strong(Requester::Sandbox, JSON, b"{}");
        assert_eq!(json, strong(Requester::Sandbox, JSON, b"{}"), "stable");
        assert_eq!(json.len(), 34);
        assert_ne!(json, strong(Requester::Production, JSON, b"{}"));
        assert_ne!(json, strong(Requester::Keyless, JSON, b"{}"));
        assert_ne!(json, strong(Requester::Sandbox, b"application/xml", b"{}"));
        assert_ne!(json, strong(Requester::Sandbox, JSON, b"{ }"));
        assert_eq!(stored_json(Audience::Sandbox, b"{}"), json);
    }

    #[test]
    fn a_tag_is_its_digest_in_quoted_lowercase_hexadecimal() {
        for digest in [0, 1, 0xabc, u128::from(u64::MAX) << 3, u128::MAX] {
            assert_eq!(quoted(digest), format!("\"{digest:032x}\""));
            assert_eq!(weak(digest), format!("W/\"{digest:032x}\""));
        }
    }

    #[test]
    fn weak_tags_leave_out_the_update_instant_and_follow_the_day_and_versions() {
        let inputs = br#"{"lccId":"LCC-1","status":"Active","updatedAt":"2026-01-01T00:00:00Z"}"#;
        let later = br#"{"lccId":"LCC-1","status":"Active","updatedAt":"2026-02-01T00:00:00Z"}"#;
        let changed = br#"{"lccId":"LCC-1","status":"Withdrawn","updatedAt":"2026-01-01T00:00:00Z"}"#;
        let tag = verification(Audience::Production, inputs, true, None);
        assert!(tag.starts_with("W/\"") && tag.ends_with('"'), "{tag}");
        assert_eq!(tag, verification(Audience::Production, later, true, None));
        assert_ne!(tag, verification(Audience::Production, changed, true, None));
        assert_ne!(tag, verification(Audience::Production, inputs, false, None));
        assert_ne!(tag, verification(Audience::Production, inputs, true, Some(true)));
        assert_ne!(tag, verification(Audience::Sandbox, inputs, true, None));
        let versions = ProvenanceVersions([3, 1, 0, 0]);
        let evidence_tag = evidence(Audience::Production, inputs, true, versions);
        assert_ne!(evidence_tag, evidence(Audience::Production, inputs, true, ProvenanceVersions([3, 2, 0, 0])));
        assert_ne!(evidence_tag, tag, "each answer has its own tags");
        assert_ne!(
            provenance(Audience::Production, "LCC-1", versions),
            provenance(Audience::Production, "LCC-2", versions)
        );
    }

    #[test]
    fn provenance_versions_keep_the_newest_of_each_topic() {
        let mut versions = ProvenanceVersions::default();
        versions.note("rights", 4);
        versions.note("rights", 2);
        versions.note("works", 1);
        versions.note("parties", 9);
        assert_eq!(versions, ProvenanceVersions([1, 4, 0, 0]));
    }

    #[test]
    fn protection_is_in_force_through_its_last_day() {
        let today = Date::parse("2026-11-26").expect("date");
        assert!(in_force(Some(today), today));
        assert!(!in_force(Date::parse("2026-11-25"), today));
        assert!(!in_force(None, today));
    }
}
