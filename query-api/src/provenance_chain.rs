//! The provenance chain: each entry of a work's provenance carries a hash
//! over its predecessor's hash and its own canonical content, so that a
//! holder of an earlier answer (or evidence package, which names the head)
//! can check that today's provenance extends the history it was shown.
//!
//! `chainHash` of entry i is the lowercase hexadecimal SHA-256 of the ASCII
//! of entry i−1's `chainHash` (64 zeros before the first entry) followed by
//! the RFC 8785 canonical JSON of entry i without `chainHash`. Entries are
//! in provenance order (recorded time, topic, aggregate version), which
//! depends on the events alone, so a rebuild gives the same chain.

use read_model::Body;
use read_model::canonical_json::canonical_json;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

/// The hash before the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The member each entry gains.
pub const CHAIN_HASH: &str = "chainHash";

/// The newest entry's hash and the number of entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ChainHead {
    /// `chainHash` of the newest entry (64 zeros when there is none).
    pub hash: String,
    pub length: u64,
}

/// The entries with their `chainHash`, and the head; `None` when a stored
/// entry is not a JSON object.
pub fn chain(entries: &[Body]) -> Option<(Vec<Value>, ChainHead)> {
    let mut previous = GENESIS.to_owned();
    let mut chained = Vec::with_capacity(entries.len());
    for body in entries {
        let mut entry: Map<String, Value> = serde_json::from_slice(body).ok()?;
        let content = canonical_json(&Value::Object(entry.clone()));
        let mut hasher = Sha256::new();
        hasher.update(previous.as_bytes());
        hasher.update(content.as_bytes());
        previous = read_model::hex::lower_hex(&hasher.finalize());
        entry.insert(CHAIN_HASH.to_owned(), Value::String(previous.clone()));
        chained.push(Value::Object(entry));
    }
    Some((chained, ChainHead { hash: previous, length: entries.len() as u64 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_hash_covers_its_predecessor_and_its_canonical_content() {
        let entries = [br#"{"b":1,"a":"x"}"#.to_vec(), br#"{"a":"y"}"#.to_vec()];
        let (chained, head) = chain(&entries).expect("objects");
        let first = format!("{:x}", Sha256::digest(format!("{GENESIS}{{\"a\":\"x\",\"b\":1}}")));
        assert_eq!(chained[0][CHAIN_HASH], first.as_str());
        let second = format!("{:x}", Sha256::digest(format!("{first}{{\"a\":\"y\"}}")));
        assert_eq!((head.hash.as_str(), head.length), (second.as_str(), 2));
        let (extended, _) = chain(&[entries[0].clone()]).expect("objects");
        assert_eq!(extended[0], chained[0], "a shorter history is a prefix of the longer one");
        assert_eq!(chain(&[]).expect("empty").1, ChainHead { hash: GENESIS.to_owned(), length: 0 });
        assert_eq!(chain(&[b"[1]".to_vec()]), None);
    }
}
