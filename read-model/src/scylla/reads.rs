//! Every read of a model version: one partition per lookup, and for a bulk
//! page one partition of counts plus one or two bucket partitions. The
//! projector's reads of aggregate states, of bulk rows' write times and of
//! feed heads are the exception: a list of keys to a request
//! (`execution::read_listed`).

use std::collections::HashMap;

use futures_util::FutureExt;
use scylla::client::session::Session;

use super::bulk_pages::{BucketQuery, bucket_query};
use super::execution::{Prepared, read_concurrently, read_listed, select};
use super::row_mapping;
use super::statements::{FIXTURES_PARTITION, ModelStatement};
use crate::bulk::{BULK_BUCKETS, plan_page};
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::store::{
    AggregateKey, Body, BulkKey, BulkPage, Checkpoint, IdentifierKind, PartyReferrer, StoreError, StoredAggregate,
};
use crate::stored_bodies;

/// The statements of one model version, with the session that runs them.
#[derive(Debug, Clone, Copy)]
pub(super) struct VersionReads<'a> {
    pub session: &'a Session,
    pub statements: &'a Prepared<ModelStatement>,
}

impl VersionReads<'_> {
    pub(super) async fn document(&self, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
        self.stored_document(kind, key).await?.map(stored_bodies::decompress).transpose()
    }

    /// A document as stored (see `stored_bodies`), for a cache that holds it so.
    pub(super) async fn stored_document(&self, kind: DocumentKind, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectDocument(kind))?;
        let rows: Vec<(Vec<u8>,)> = select(self.session, statement, (key,)).await?;
        Ok(rows.into_iter().next().map(|(stored,)| stored))
    }

    pub(super) async fn provenance(&self, lcc_id: &str) -> Result<Vec<Body>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectProvenance)?;
        let rows: Vec<(Vec<u8>,)> = select(self.session, statement, (lcc_id,)).await?;
        rows.into_iter().map(|(body,)| stored_bodies::decompress(body)).collect()
    }

    pub(super) async fn works_by_identifier(
        &self,
        kind: IdentifierKind,
        code: &str,
        audience: Audience,
    ) -> Result<Vec<String>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectIdentifiers)?;
        let rows: Vec<(String,)> = select(self.session, statement, (kind.code(), code, audience.code())).await?;
        Ok(rows.into_iter().map(|(lcc_id,)| lcc_id).collect())
    }

    pub(super) async fn bulk_page(&self, audience: Audience, offset: u64, limit: u32) -> Result<BulkPage, StoreError> {
        let counts = self.statements.get(ModelStatement::SelectBucketCounts)?;
        let counts = row_mapping::bucket_counts(select(self.session, counts, (audience.code(),)).await?)?;
        let plan = plan_page(&counts, offset, u64::from(limit));
        let mut page = BulkPage { rows: Vec::with_capacity(limit as usize), total: plan.total };
        for read in plan.reads {
            let bucket = i32::try_from(read.bucket).map_err(|_| StoreError::Corrupt("bucket".into()))?;
            let bodies: Vec<(Vec<u8>,)> = match bucket_query(read) {
                BucketQuery::Head { limit } => {
                    let statement = self.statements.get(ModelStatement::SelectBulkBodies)?;
                    select(self.session, statement, (audience.code(), bucket, limit)).await?
                }
                BucketQuery::AfterSkipping { ids_to_read, skip, limit } => {
                    let statement = self.statements.get(ModelStatement::SelectBulkRowIds)?;
                    let ids: Vec<(String,)> =
                        select(self.session, statement, (audience.code(), bucket, ids_to_read)).await?;
                    // Fewer rows than counted: a count is being repaired, and the page is short until it is.
                    let Some((first,)) = ids.into_iter().nth(skip) else { continue };
                    let statement = self.statements.get(ModelStatement::SelectBulkBodiesFrom)?;
                    select(self.session, statement, (audience.code(), bucket, first, limit)).await?
                }
            };
            for (body,) in bodies {
                page.rows.push(stored_bodies::decompress(body)?);
            }
        }
        Ok(page)
    }

    /// Rows after `after` in (bucket, lccId) order, a bucket partition at a time.
    pub(super) async fn bulk_rows_after(
        &self,
        audience: Audience,
        after: Option<&BulkKey>,
        limit: u32,
    ) -> Result<Vec<(BulkKey, Body)>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectBulkRowsAfter)?;
        let mut rows = Vec::new();
        let (first_bucket, mut after_id) = after.map_or((0, String::new()), |key| (key.bucket, key.lcc_id.clone()));
        for bucket in first_bucket..BULK_BUCKETS {
            let wanted = i32::try_from(limit as usize - rows.len()).unwrap_or(i32::MAX);
            let bucket_column = i32::try_from(bucket).map_err(|_| StoreError::Corrupt("bucket".into()))?;
            let found: Vec<(String, Vec<u8>)> =
                select(self.session, statement, (audience.code(), bucket_column, after_id.as_str(), wanted)).await?;
            for (lcc_id, body) in found {
                rows.push((BulkKey { bucket, lcc_id }, stored_bodies::decompress(body)?));
            }
            if rows.len() >= limit as usize {
                break;
            }
            after_id.clear();
        }
        Ok(rows)
    }

    pub(super) async fn sandbox_fixtures(&self) -> Result<Vec<Body>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectFixtures)?;
        let rows: Vec<(Vec<u8>,)> = select(self.session, statement, (FIXTURES_PARTITION,)).await?;
        Ok(rows.into_iter().map(|(body,)| body).collect())
    }

    /// States in the order of `keys`, read by the hundred ids of one topic
    /// to a request: a projector batch reads tens of thousands of states,
    /// and with one request per state a node spends most of its time on
    /// handling requests rather than on reading rows.
    pub(super) async fn aggregates(&self, keys: &[AggregateKey]) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectAggregates)?;
        let listed = keys.iter().map(|key| (key.topic.as_str(), key.id.as_str()));
        let rows = read_listed(listed, |topic, ids| {
            async move {
                let rows: Vec<(String, i64, Vec<u8>)> = select(self.session, statement, (topic, ids)).await?;
                Ok(rows.into_iter().map(|row| (topic, row)).collect())
            }
            .boxed()
        })
        .await?;
        let mut found: HashMap<&str, HashMap<String, StoredAggregate>> = HashMap::new();
        for (topic, (id, version, state)) in rows {
            found.entry(topic).or_default().insert(id, row_mapping::stored_aggregate((version, state))?);
        }
        Ok(keys.iter().map(|key| found.get(key.topic.as_str()).and_then(|ids| ids.get(&key.id)).cloned()).collect())
    }

    pub(super) async fn party_referrers(
        &self,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectPartyReferrers)?;
        let requests = party_ids
            .iter()
            .map(|party_id| {
                async move {
                    let rows: Vec<(String, String)> = select(self.session, statement, (party_id.as_str(),)).await?;
                    rows.into_iter()
                        .map(|(kind, id)| Ok((party_id.clone(), PartyReferrer::from_columns(&kind, id)?)))
                        .collect::<Result<Vec<_>, StoreError>>()
                }
                .boxed()
            })
            .collect();
        Ok(read_concurrently(requests).await?.into_iter().flatten().collect())
    }

    pub(super) async fn checkpoints(&self, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectCheckpoints)?;
        let rows: Vec<(String, i32, i64)> = select(self.session, statement, (source,)).await?;
        Ok(rows.into_iter().map(|row| row_mapping::checkpoint(source, row)).collect())
    }
}
