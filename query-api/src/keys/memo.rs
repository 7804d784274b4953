//! The production key a connection presented last and whose it is, so a
//! client sending many requests over one connection pays for hashing and
//! finding its key once, not on every request.
//!
//! A memo belongs to one connection (`crate::connection`) and ends with
//! it: no table of the process holds keys as presented, and no `Debug`
//! output shows one. It holds only while the active keys are the ones it
//! was checked against (the generation of
//! [`super::production::ProductionKeys`]), so a reload that revokes a key
//! voids every memo at once. Behind a balancer one upstream connection
//! carries many clients' requests, so a presented key is compared with the
//! remembered one in constant time: no request learns another client's key
//! from how long a comparison took. This module must not decide whether a
//! key is valid: it only remembers what `ProductionKeys` decided.

use std::sync::{Mutex, PoisonError};

use super::Principal;

/// One connection's memo.
#[derive(Default)]
pub struct KeyMemo(Mutex<Option<Remembered>>);

impl std::fmt::Debug for KeyMemo {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("KeyMemo").finish_non_exhaustive()
    }
}

struct Remembered {
    key: Box<[u8]>,
    generation: u64,
    principal: Principal,
}

impl KeyMemo {
    /// The principal of `key` if it is the key remembered, checked against
    /// the active keys of `generation`.
    pub fn recall(&self, key: &[u8], generation: u64) -> Option<Principal> {
        let remembered = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let remembered = remembered.as_ref()?;
        (remembered.generation == generation && same_bytes(&remembered.key, key)).then(|| remembered.principal.clone())
    }

    /// Remembers that `key` is `principal`'s under the active keys of `generation`.
    pub fn remember(&self, key: &[u8], generation: u64, principal: &Principal) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Remembered { key: key.into(), generation, principal: principal.clone() });
    }
}

/// Whether two byte strings are equal, in a time that depends on their
/// lengths only (keys of one kind all have the same length).
fn same_bytes(remembered: &[u8], presented: &[u8]) -> bool {
    remembered.len() == presented.len()
        && std::hint::black_box(remembered.iter().zip(presented).fold(0_u8, |difference, (a, b)| difference | (a ^ b)))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{KeyKind, Scopes};

    fn principal(key_id: &str) -> Principal {
        Principal {
            kind: KeyKind::Production,
            key_id: key_id.into(),
            rate_client: crate::rate_limit::Client::named(key_id),
            scopes: Scopes::all(),
            rate_limit: 60,
            notification_filter: None,
        }
    }

    #[test]
    fn a_memo_recalls_only_the_same_key_under_the_same_generation() {
        let memo = KeyMemo::default();
        assert_eq!(memo.recall(b"lcc_live_a", 1), None, "empty");
        memo.remember(b"lcc_live_a", 1, &principal("live_a"));
        assert_eq!(memo.recall(b"lcc_live_a", 1), Some(principal("live_a")));
        assert_eq!(memo.recall(b"lcc_live_b", 1), None, "another key of the same length");
        assert_eq!(memo.recall(b"lcc_live_ab", 1), None, "a longer key");
        assert_eq!(memo.recall(b"lcc_live_a", 2), None, "the active keys changed since");
        memo.remember(b"lcc_live_b", 2, &principal("live_b"));
        assert_eq!(memo.recall(b"lcc_live_a", 2), None, "only the last key is remembered");
        assert_eq!(memo.recall(b"lcc_live_b", 2), Some(principal("live_b")));
        assert!(!format!("{memo:?}").contains("lcc_live"), "{memo:?}");
    }
}
