//! Mapping SQLite failures onto [`StoreError`]: transient conditions become
//! `Unavailable` (the API answers 503 and recovers), anything else `Corrupt`.

use rusqlite::ErrorCode;

use crate::store::StoreError;

pub(super) fn from_sqlite(error: rusqlite::Error) -> StoreError {
    match &error {
        rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::DiskFull
            | ErrorCode::OutOfMemory
            | ErrorCode::ReadOnly
            | ErrorCode::NotADatabase
            | ErrorCode::PermissionDenied => StoreError::Unavailable(error.to_string()),
            _ => StoreError::Corrupt(error.to_string()),
        },
        _ => StoreError::Corrupt(error.to_string()),
    }
}
