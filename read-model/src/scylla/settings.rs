//! How to reach a ScyllaDB cluster and how to use it: contact points,
//! keyspace, consistency, datacenter, timeouts. Parsing and validation live
//! here; building the driver session from them lives in `session`.

use std::collections::BTreeSet;
use std::time::Duration;

use scylla::statement::Consistency;

/// Connection and usage settings of the ScyllaDB backend.
#[derive(Clone)]
pub struct ScyllaSettings {
    /// Contact points, `host:port` (port 9042 by default in ScyllaDB).
    pub nodes: Vec<String>,
    /// The catalog keyspace; model version N lives in `<keyspace>_v<N>`.
    pub keyspace: String,
    /// Consistency of every read and write.
    pub consistency: Consistency,
    /// The datacenter whose nodes serve requests; others are not used.
    pub local_datacenter: Option<String>,
    /// Replicas per datacenter for keyspaces that `migrate` creates.
    pub replication_factor: u32,
    pub request_timeout: Duration,
    /// How long a read waits before asking a second replica too.
    pub speculative_delay: Duration,
    /// User name and password, when authentication is on.
    pub credentials: Option<(String, String)>,
    /// How far behind now change-feed reads stop, for the changes of other
    /// projectors committed in the same moment to land first.
    pub change_feed_settle: Duration,
    /// Memory for documents the query API has read, in bytes; 0 turns the
    /// cache off (see `document_cache`).
    pub document_cache_bytes: u64,
}

impl std::fmt::Debug for ScyllaSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password never reaches a log line.
        formatter
            .debug_struct("ScyllaSettings")
            .field("nodes", &self.nodes)
            .field("keyspace", &self.keyspace)
            .field("consistency", &self.consistency)
            .field("local_datacenter", &self.local_datacenter)
            .field("replication_factor", &self.replication_factor)
            .field("request_timeout", &self.request_timeout)
            .field("speculative_delay", &self.speculative_delay)
            .field("change_feed_settle", &self.change_feed_settle)
            .field("document_cache_bytes", &self.document_cache_bytes)
            .field("user", &self.credentials.as_ref().map(|(user, _)| user))
            .finish()
    }
}

impl ScyllaSettings {
    /// Settings with the documented defaults for the given contact points.
    pub fn new(nodes: Vec<String>) -> ScyllaSettings {
        ScyllaSettings {
            nodes,
            keyspace: "rights".into(),
            consistency: Consistency::LocalQuorum,
            local_datacenter: None,
            replication_factor: 1,
            request_timeout: Duration::from_secs(5),
            speculative_delay: Duration::from_millis(50),
            credentials: None,
            change_feed_settle: Duration::from_secs(10),
            document_cache_bytes: crate::sqlite::DEFAULT_DOCUMENT_CACHE_BYTES,
        }
    }

    /// The keyspace of a model version.
    pub fn model_keyspace(&self, version: crate::store::ModelVersion) -> String {
        format!("{}_v{}", self.keyspace, version.0)
    }

    /// Why a projector cannot write with these settings to a cluster of
    /// `datacenters`, if it cannot. Its check of a batch's read set after
    /// writing, its read of write times and its bucket recounts must see
    /// its own writes: that needs quorum reads and writes, within one
    /// datacenter when the cluster has several.
    pub fn writer_problem(&self, datacenters: &BTreeSet<String>) -> Option<String> {
        let quorum = matches!(
            self.consistency,
            Consistency::Quorum | Consistency::LocalQuorum | Consistency::EachQuorum | Consistency::All
        );
        if !quorum {
            return Some(format!(
                "consistency {:?} is below quorum, so the projector could miss its own writes; use LOCAL_QUORUM",
                self.consistency
            ));
        }
        let listed = || datacenters.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
        match &self.local_datacenter {
            None if datacenters.len() > 1 => Some(format!(
                "the cluster has the datacenters {}; give --scylla-local-datacenter so that the projector \
                 reads and writes in one of them",
                listed()
            )),
            Some(local) if !datacenters.is_empty() && !datacenters.contains(local) => {
                Some(format!("the cluster has no datacenter {local:?}, only {}", listed()))
            }
            _ => None,
        }
    }
}

/// The longest catalog keyspace name: ScyllaDB allows 48 characters, and
/// `_v` with a version number of up to ten digits must still fit.
const MAX_KEYSPACE_LENGTH: usize = 36;

/// Checks a catalog keyspace name. It is written into CQL text, so only
/// lower-case letters, digits and underscores are accepted.
pub fn validate_keyspace(name: &str) -> Result<(), String> {
    let well_formed = name.len() <= MAX_KEYSPACE_LENGTH
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "keyspace {name:?} must start with a lower-case letter and hold at most {MAX_KEYSPACE_LENGTH} \
             lower-case letters, digits and underscores"
        ))
    }
}

/// Parses a consistency level by its CQL name (`LOCAL_QUORUM`, `QUORUM`, ...).
pub fn parse_consistency(name: &str) -> Result<Consistency, String> {
    Ok(match name.to_ascii_uppercase().as_str() {
        "ANY" => Consistency::Any,
        "ONE" => Consistency::One,
        "TWO" => Consistency::Two,
        "THREE" => Consistency::Three,
        "QUORUM" => Consistency::Quorum,
        "ALL" => Consistency::All,
        "LOCAL_QUORUM" => Consistency::LocalQuorum,
        "EACH_QUORUM" => Consistency::EachQuorum,
        "LOCAL_ONE" => Consistency::LocalOne,
        other => return Err(format!("unknown consistency level {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projector_refuses_settings_under_which_it_could_miss_its_own_writes() {
        let one = BTreeSet::from(["dc1".to_owned()]);
        let two = BTreeSet::from(["dc1".to_owned(), "dc2".to_owned()]);
        let mut settings = ScyllaSettings::new(vec!["a:9042".into()]);
        assert_eq!(settings.writer_problem(&one), None, "the defaults on one datacenter");
        let problem = settings.writer_problem(&two).expect("two datacenters and none chosen");
        assert!(problem.contains("dc1, dc2") && problem.contains("--scylla-local-datacenter"), "{problem}");
        settings.local_datacenter = Some("dc2".into());
        assert_eq!(settings.writer_problem(&two), None);
        settings.local_datacenter = Some("dc3".into());
        assert!(settings.writer_problem(&two).is_some_and(|problem| problem.contains("\"dc3\"")));
        settings.local_datacenter = None;
        for consistency in [Consistency::One, Consistency::LocalOne, Consistency::Two, Consistency::Any] {
            settings.consistency = consistency;
            assert!(settings.writer_problem(&one).is_some_and(|problem| problem.contains("below quorum")));
        }
        settings.consistency = Consistency::Quorum;
        assert_eq!(settings.writer_problem(&one), None);
    }
    #[test]
    fn keyspace_names_that_could_inject_cql_are_refused() {
        assert!(validate_keyspace("rights").is_ok());
        assert!(validate_keyspace("rights_eu_2").is_ok());
        for bad in ["", "Rights", "1rights", "rights; DROP", "a.b", &"r".repeat(37)] {
            assert!(validate_keyspace(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn consistency_levels_parse_by_cql_name() {
        assert_eq!(parse_consistency("LOCAL_QUORUM"), Ok(Consistency::LocalQuorum));
        assert_eq!(parse_consistency("local_one"), Ok(Consistency::LocalOne));
        assert!(parse_consistency("SERIAL-ISH").is_err());
    }

    #[test]
    fn defaults_read_and_write_at_local_quorum_and_hide_the_password() {
        let mut settings = ScyllaSettings::new(vec!["127.0.0.1:9042".into()]);
        assert_eq!(settings.consistency, Consistency::LocalQuorum);
        assert_eq!(settings.model_keyspace(crate::store::ModelVersion(3)), "rights_v3");
        settings.credentials = Some(("projector".into(), "s3cret".into()));
        let printed = format!("{settings:?}");
        assert!(printed.contains("projector") && !printed.contains("s3cret"), "{printed}");
    }
}
