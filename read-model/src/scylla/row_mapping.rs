//! Rows as the driver returns them, mapped onto the store's types. Values
//! that the schema allows but the store never writes (a negative version, a
//! bucket out of range) are reported as corrupt data, not passed on.

use crate::api_keys::ApiKeyRecord;
use crate::bulk::BULK_BUCKETS;
use crate::store::{Checkpoint, ModelVersion, StoreError, StoredAggregate};

/// An `aggregates` row: (version, state).
/// An `aggregates` row as the state it stores (see [`crate::stored_bodies`]).
pub fn stored_aggregate((version, state): (i64, Vec<u8>)) -> Result<StoredAggregate, StoreError> {
    let version = u64::try_from(version).map_err(|_| StoreError::Corrupt(format!("aggregate version {version}")))?;
    Ok(StoredAggregate { version, state: crate::stored_bodies::decompress(state)? })
}

/// An `api_keys` row: (hash, id, partner, scopes, limit, created, revoked).
pub type ApiKeyRow = (String, String, String, String, i32, i64, Option<i64>);

/// An `api_keys` row as a key record.
pub fn api_key(
    (key_hash, key_id, partner, scopes, rate_limit, created_at_ms, revoked_at_ms): ApiKeyRow,
) -> Result<ApiKeyRecord, StoreError> {
    let rate_limit_per_minute =
        u32::try_from(rate_limit).map_err(|_| StoreError::Corrupt(format!("key {key_id} with limit {rate_limit}")))?;
    Ok(ApiKeyRecord {
        key_hash,
        key_id,
        partner,
        scopes,
        rate_limit_per_minute,
        created_at_ms,
        revoked_at_ms,
        notification_filter: None,
    })
}

/// A `checkpoints` row of `source`: (stream, partition, next offset).
pub fn checkpoint(source: &str, (stream, partition, next_offset): (String, i32, i64)) -> Checkpoint {
    Checkpoint { source: source.to_owned(), stream, partition, next_offset }
}

/// `bulk_bucket_counts` rows, (bucket, row count), as the page planner takes them.
pub fn bucket_counts(rows: Vec<(i32, i64)>) -> Result<Vec<(u32, u64)>, StoreError> {
    let mut counts = rows
        .into_iter()
        .map(|(bucket, rows)| match (u32::try_from(bucket), u64::try_from(rows)) {
            (Ok(bucket), Ok(rows)) if bucket < BULK_BUCKETS => Ok((bucket, rows)),
            _ => Err(StoreError::Corrupt(format!("bulk bucket {bucket} with {rows} rows"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Clustering order already sorts them; the planner relies on it, so make sure.
    counts.sort_unstable();
    Ok(counts)
}

/// A model version number as the catalog stores it.
pub fn model_version(version: i32) -> Result<ModelVersion, StoreError> {
    u32::try_from(version).map(ModelVersion).map_err(|_| StoreError::Corrupt(format!("model version {version}")))
}

/// A model version as the catalog stores it.
pub fn version_column(version: ModelVersion) -> Result<i32, StoreError> {
    i32::try_from(version.0).map_err(|_| StoreError::Corrupt(format!("model version {version} is out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_rows_map_to_states_and_refuse_negative_versions() {
        let stored = stored_aggregate((4, b"{}".to_vec())).expect("valid row");
        assert_eq!(stored, StoredAggregate { version: 4, state: b"{}".to_vec() });
        assert!(matches!(stored_aggregate((-1, Vec::new())), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn checkpoint_rows_name_their_source() {
        let read = checkpoint("kafka:", ("works".into(), 3, 120));
        assert_eq!(
            read,
            Checkpoint { source: "kafka:".into(), stream: "works".into(), partition: 3, next_offset: 120 }
        );
    }

    #[test]
    fn bucket_counts_come_out_sorted_and_in_range() {
        assert_eq!(bucket_counts(vec![(9, 2), (1, 5), (0, 0)]).expect("valid"), [(0, 0), (1, 5), (9, 2)]);
        assert!(bucket_counts(vec![(1024, 1)]).is_err());
        assert!(bucket_counts(vec![(-1, 1)]).is_err());
        assert!(bucket_counts(vec![(3, -2)]).is_err());
    }

    #[test]
    fn model_versions_round_trip_through_the_catalog_column() {
        assert_eq!(model_version(version_column(ModelVersion(12)).expect("fits")).expect("valid"), ModelVersion(12));
        assert!(model_version(-3).is_err());
        assert!(version_column(ModelVersion(u32::MAX)).is_err());
    }
}
