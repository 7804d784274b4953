//! Mapping driver failures onto [`StoreError`]: a failed request (a node
//! down, a timeout, a missing table before `migrate`) is `Unavailable`, so
//! the API answers 503 and the projector pauses and retries; a row that does
//! not have the shape the schema promises is `Corrupt`.

use std::fmt::Display;

use crate::store::StoreError;

pub(super) fn unavailable(context: &str, error: impl Display) -> StoreError {
    StoreError::Unavailable(format!("{context}: {error}"))
}

pub(super) fn corrupt(context: &str, error: impl Display) -> StoreError {
    StoreError::Corrupt(format!("{context}: {error}"))
}
