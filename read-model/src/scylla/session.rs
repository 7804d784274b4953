//! The driver session and its two execution profiles.
//!
//! - Writes: token- and shard-aware routing to a replica of the partition,
//!   in the local datacenter when one is named; the configured consistency
//!   (`LOCAL_QUORUM` by default); the driver's default retry policy, which
//!   retries a statement on another node only when it is marked idempotent
//!   (all of ours are: see `statements`).
//! - Reads: the same, plus speculative execution: when a replica has not
//!   answered after the speculative delay, a second one is asked too and the
//!   first answer wins, which cuts the latency tail of a slow node.

use std::sync::Arc;

use scylla::client::execution_profile::{ExecutionProfile, ExecutionProfileHandle};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::policies::retry::DefaultRetryPolicy;
use scylla::policies::speculative_execution::SimpleSpeculativeExecutionPolicy;

use super::errors::unavailable;
use super::settings::ScyllaSettings;
use crate::store::StoreError;

/// Speculative executions per read beyond the first request.
const SPECULATIVE_EXECUTIONS: usize = 1;

/// The profile of writes and catalog statements, and the profile of reads.
fn profiles(settings: &ScyllaSettings) -> (ExecutionProfile, ExecutionProfile) {
    let mut routing = DefaultPolicy::builder().token_aware(true);
    if let Some(datacenter) = &settings.local_datacenter {
        routing = routing.prefer_datacenter(datacenter.clone()).permit_dc_failover(false);
    }
    let writes = ExecutionProfile::builder()
        .consistency(settings.consistency)
        .request_timeout(Some(settings.request_timeout))
        .load_balancing_policy(routing.build())
        .retry_policy(Arc::new(DefaultRetryPolicy::new()))
        .build();
    let speculation = SimpleSpeculativeExecutionPolicy {
        max_retry_count: SPECULATIVE_EXECUTIONS,
        retry_interval: settings.speculative_delay,
    };
    let reads = writes.to_builder().speculative_execution_policy(Some(Arc::new(speculation))).build();
    (writes, reads)
}

/// Connects to the cluster; the returned handle is the read profile.
pub async fn connect(settings: &ScyllaSettings) -> Result<(Session, ExecutionProfileHandle), StoreError> {
    let (writes, reads) = profiles(settings);
    let mut builder =
        SessionBuilder::new().known_nodes(&settings.nodes).default_execution_profile_handle(writes.into_handle());
    if let Some((user, password)) = &settings.credentials {
        builder = builder.user(user, password);
    }
    let session = builder.build().await.map_err(|error| unavailable("cannot connect to ScyllaDB", error))?;
    Ok((session, reads.into_handle()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scylla::statement::Consistency;

    use super::*;

    #[test]
    fn reads_speculate_and_writes_do_not() {
        let mut settings = ScyllaSettings::new(vec!["127.0.0.1:9042".into()]);
        settings.consistency = Consistency::Quorum;
        settings.speculative_delay = Duration::from_millis(20);
        let (writes, reads) = profiles(&settings);
        assert!(writes.get_speculative_execution_policy().is_none());
        assert!(reads.get_speculative_execution_policy().is_some());
        for profile in [&writes, &reads] {
            assert_eq!(profile.get_consistency(), Consistency::Quorum);
            assert_eq!(profile.get_request_timeout(), Some(Duration::from_secs(5)));
        }
    }
}
