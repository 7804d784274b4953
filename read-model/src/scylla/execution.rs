//! Preparing and executing statements, and reading their rows: the only
//! place that talks to the driver's request API.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use futures_util::{StreamExt, TryStreamExt, stream};
use scylla::client::execution_profile::ExecutionProfileHandle;
use scylla::client::session::Session;
use scylla::deserialize::row::DeserializeRow;
use scylla::response::query_result::QueryResult;
use scylla::serialize::row::SerializeRow;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::unprepared::Statement;

use super::errors::{corrupt, execution_failed, unavailable};
use super::statements::{Access, ModelStatement};
use crate::store::StoreError;

/// Requests one batch keeps in flight at once: enough to hide round trips,
/// few enough not to queue behind each other on a node's shards.
const WRITES_IN_FLIGHT: usize = 256;

/// The most writes to one partition sent as one batch.
const WRITES_PER_BATCH: usize = 64;

/// Point reads a projector batch keeps in flight at once.
const READS_IN_FLIGHT: usize = 128;

/// The most keys one listing read names: ScyllaDB refuses a query that
/// restricts more partition or clustering keys than its
/// `max_partition_key_restrictions_per_query` and
/// `max_clustering_key_restrictions_per_query` (100 each by default).
const KEYS_PER_READ: usize = 100;

/// How long a schema change may take: creating or dropping a keyspace waits
/// for every node to agree on the schema, which takes far longer than a
/// request (a dropped keyspace's files are removed on every node).
pub(super) const DDL_TIMEOUT: Duration = Duration::from_secs(120);

/// A schema change, with [`DDL_TIMEOUT`] rather than the request timeout.
pub(super) fn ddl_statement(text: &str) -> Statement {
    let mut statement = Statement::new(text);
    statement.set_request_timeout(Some(DDL_TIMEOUT));
    statement
}

/// A prepared statement, with how it runs.
#[derive(Debug)]
pub(super) struct Ready {
    statement: PreparedStatement,
    access: Access,
}

/// A set of prepared statements, looked up by what they do.
#[derive(Debug)]
pub(super) struct Prepared<S> {
    statements: HashMap<S, Ready>,
}

impl<S: Copy + Eq + Hash + std::fmt::Debug> Prepared<S> {
    /// Prepares each (statement, CQL, access). Every statement is marked
    /// idempotent, which lets the driver retry it and speculate on it: a
    /// read, an upsert or deletion with an explicit timestamp, or a write of
    /// an absolute value has the same effect however often it runs.
    pub(super) async fn prepare(
        session: &Session,
        read_profile: &ExecutionProfileHandle,
        statements: impl IntoIterator<Item = (S, String, Access)>,
    ) -> Result<Prepared<S>, StoreError> {
        let mut prepared = HashMap::new();
        for (statement, text, access) in statements {
            let mut ready = session
                .prepare(text.as_str())
                .await
                .map_err(|error| unavailable(&format!("cannot prepare {text}"), error))?;
            ready.set_is_idempotent(true);
            if access != Access::Write {
                ready.set_execution_profile_handle(Some(read_profile.clone()));
            }
            prepared.insert(statement, Ready { statement: ready, access });
        }
        Ok(Prepared { statements: prepared })
    }

    pub(super) fn get(&self, statement: S) -> Result<&Ready, StoreError> {
        self.statements.get(&statement).ok_or_else(|| StoreError::Corrupt(format!("{statement:?} is not prepared")))
    }
}

/// Executes one prepared statement in one request.
pub(super) async fn execute(
    session: &Session,
    ready: &Ready,
    values: impl SerializeRow,
) -> Result<QueryResult, StoreError> {
    session
        .execute_unpaged(&ready.statement, values)
        .await
        .map_err(|error| execution_failed(&format!("{} failed", ready.statement.get_statement()), &error))
}

/// Executes one prepared read and returns its rows: in one request, or
/// page by page for a read of [`Access::ReadInPages`].
pub(super) async fn select<R>(session: &Session, ready: &Ready, values: impl SerializeRow) -> Result<Vec<R>, StoreError>
where
    R: for<'frame, 'metadata> DeserializeRow<'frame, 'metadata>,
{
    let context = ready.statement.get_statement();
    if ready.access == Access::ReadInPages {
        let pager = session
            .execute_iter(ready.statement.clone(), values)
            .await
            .map_err(|error| unavailable(&format!("{context} failed"), error))?;
        let rows = pager.rows_stream::<R>().map_err(|error| corrupt(context, error))?;
        return rows.try_collect().await.map_err(|error| unavailable(&format!("{context} failed"), error));
    }
    let result = execute(session, ready, values).await?;
    let rows = result.into_rows_result().map_err(|error| corrupt(context, error))?;
    let typed = rows.rows::<R>().map_err(|error| corrupt(context, error))?;
    typed.collect::<Result<Vec<R>, _>>().map_err(|error| corrupt(context, error))
}

/// A statement's values, boxed so that writes of different statements share
/// one batch.
pub(super) type BoundValues<'a> = Box<dyn SerializeRow + Send + Sync + 'a>;

/// Queues `writes` as requests: one each, or, when they share one partition
/// (`together`), one unlogged batch of up to [`WRITES_PER_BATCH`]. A batch
/// of one partition costs the node about what one of its writes costs, and
/// Cassandra exempts it from its batch size limits.
pub(super) fn write_requests<'a>(
    session: &'a Session,
    statements: &'a Prepared<ModelStatement>,
    writes: Vec<(ModelStatement, BoundValues<'a>)>,
    together: bool,
    requests: &mut Vec<Request<'a>>,
) -> Result<(), StoreError> {
    let mut writes = writes.into_iter().peekable();
    while writes.peek().is_some() {
        let chunk: Vec<(ModelStatement, BoundValues<'a>)> =
            writes.by_ref().take(if together { WRITES_PER_BATCH } else { 1 }).collect();
        requests.push(match <[_; 1]>::try_from(chunk) {
            Ok([(statement, values)]) => {
                let prepared = statements.get(statement)?;
                async move { execute(session, prepared, values).await.map(drop) }.boxed()
            }
            Err(chunk) => batch_request(session, statements, chunk)?,
        });
    }
    Ok(())
}

/// One unlogged batch of writes to one partition.
fn batch_request<'a>(
    session: &'a Session,
    statements: &'a Prepared<ModelStatement>,
    writes: Vec<(ModelStatement, BoundValues<'a>)>,
) -> Result<Request<'a>, StoreError> {
    let mut batch = Batch::new(BatchType::Unlogged);
    let mut values = Vec::with_capacity(writes.len());
    for (statement, bound) in writes {
        batch.append_statement(statements.get(statement)?.statement.clone());
        values.push(bound);
    }
    batch.set_is_idempotent(true);
    Ok(async move {
        session
            .batch(&batch, values)
            .await
            .map(drop)
            .map_err(|error| execution_failed("a batch of writes failed", &error))
    }
    .boxed())
}

/// A request, boxed so that requests of different shapes share one queue.
pub(super) type Request<'a, T = ()> = BoxFuture<'a, Result<T, StoreError>>;

/// Runs writes with up to [`WRITES_IN_FLIGHT`] at a time; the first failure ends the run.
pub(super) async fn run_concurrently(requests: Vec<Request<'_>>) -> Result<(), StoreError> {
    stream::iter(requests).buffer_unordered(WRITES_IN_FLIGHT).try_collect::<()>().await
}

/// Runs reads with up to [`READS_IN_FLIGHT`] at a time and returns their
/// answers in the order of `requests` (an answer that arrives early waits
/// for those before it, but the reads still overlap).
pub(super) async fn read_concurrently<T>(requests: Vec<Request<'_, T>>) -> Result<Vec<T>, StoreError> {
    stream::iter(requests).buffered(READS_IN_FLIGHT).try_collect().await
}

/// Reads `keys` by listing reads: the keys of one group (a topic, a bulk
/// bucket) [`KEYS_PER_READ`] to a request made by `read`, the requests run
/// as [`read_concurrently`] runs them; returns every row read, in no
/// particular order.
pub(super) async fn read_listed<'a, G, R>(
    keys: impl IntoIterator<Item = (G, &'a str)>,
    read: impl Fn(G, Vec<&'a str>) -> Request<'a, Vec<R>>,
) -> Result<Vec<R>, StoreError>
where
    G: Copy + Eq + Hash,
{
    let mut groups: HashMap<G, Vec<&'a str>> = HashMap::new();
    for (group, key) in keys {
        groups.entry(group).or_default().push(key);
    }
    let requests = groups
        .into_iter()
        .flat_map(|(group, keys)| {
            keys.chunks(KEYS_PER_READ).map(|chunk| read(group, chunk.to_vec())).collect::<Vec<_>>()
        })
        .collect();
    Ok(read_concurrently(requests).await?.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_changes_wait_longer_than_requests() {
        let statement = ddl_statement("DROP KEYSPACE IF EXISTS rights_v1");
        assert_eq!(statement.get_request_timeout(), Some(DDL_TIMEOUT));
        assert!(DDL_TIMEOUT > crate::ScyllaSettings::new(Vec::new()).request_timeout * 10);
    }
}
