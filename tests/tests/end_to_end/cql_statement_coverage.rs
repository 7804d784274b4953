//! Every CQL statement the backend can send was executed on a real node by
//! some test of the run. The Cassandra node `scripts/test.sh` starts audits
//! each statement it executes, as the client prepared it (values are not
//! logged), in its `audit.log`; `scripts/test.sh` runs this check after
//! every other test, with `CQL_AUDIT_LOG` naming that log, and it finds each
//! statement of `read_model::scylla::every_statement_text` there.

use std::collections::BTreeMap;

use read_model::scylla::every_statement_text;

/// What a statement names its keyspaces by, once read: every test has
/// keyspaces of its own, and a statement is the same whichever it names.
const CATALOG: &str = "CATALOG";
const MODEL: &str = "MODEL";

/// `operation` with the keyspace `keyspace` it ran on named [`CATALOG`], or
/// [`MODEL`] for a model version keyspace (`<catalog>_v<N>`).
fn normalized(operation: &str, keyspace: &str) -> String {
    let is_model_version = keyspace
        .rsplit_once("_v")
        .is_some_and(|(_, version)| !version.is_empty() && version.bytes().all(|byte| byte.is_ascii_digit()));
    let name = if is_model_version { MODEL } else { CATALOG };
    operation
        .replace(&format!("{keyspace}."), &format!("{name}."))
        .replace(&format!("EXISTS {keyspace} "), &format!("EXISTS {name} "))
        .replace(&format!("EXISTS {keyspace}"), &format!("EXISTS {name}"))
}

/// Each statement the audit log `log` records, normalized, with how often it ran.
fn executed_statements(log: &str) -> BTreeMap<String, usize> {
    let mut executed = BTreeMap::new();
    for line in log.lines() {
        let Some((fields, operation)) = line.split_once("|operation:") else { continue };
        let keyspace = fields.split('|').find_map(|field| field.strip_prefix("ks:")).unwrap_or_default();
        *executed.entry(normalized(operation.trim(), keyspace)).or_insert(0) += 1;
    }
    executed
}

#[test]
fn audited_statements_are_named_by_the_kind_of_keyspace_they_ran_on() {
    let log = "user:anonymous|type:SELECT|category:QUERY|ks:shape_1_v2|scope:works|operation:SELECT body FROM shape_1_v2.works WHERE id = ?\n\
               user:anonymous|type:DROP_KEYSPACE|category:DDL|ks:shape_1_v2|operation:DROP KEYSPACE IF EXISTS shape_1_v2\n\
               user:anonymous|type:SELECT|category:QUERY|ks:shape_1|scope:api_keys|operation:SELECT key_hash FROM shape_1.api_keys WHERE catalog = ?\n\
               user:anonymous|type:SELECT|category:QUERY|ks:shape_2|scope:api_keys|operation:SELECT key_hash FROM shape_2.api_keys WHERE catalog = ?\n";
    let executed = executed_statements(log);
    assert_eq!(executed.get("SELECT body FROM MODEL.works WHERE id = ?"), Some(&1));
    assert_eq!(executed.get("DROP KEYSPACE IF EXISTS MODEL"), Some(&1));
    assert_eq!(executed.get("SELECT key_hash FROM CATALOG.api_keys WHERE catalog = ?"), Some(&2));
    assert_eq!(executed.len(), 3);
}

#[test]
fn every_statement_the_cql_backend_can_send_was_executed_by_the_run() {
    let path = std::env::var("CQL_AUDIT_LOG").expect(
        "CQL_AUDIT_LOG names the audit log of the run's Cassandra node; scripts/test.sh runs this check after every other test",
    );
    let log = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("cannot read {path}: {error}"));
    let executed = executed_statements(&log);
    // The shared node holds one replica of everything (see `Cluster::shared`).
    let expected = every_statement_text(CATALOG, MODEL, 1);
    let missing: Vec<&String> = expected.iter().filter(|text| !executed.contains_key(*text)).collect();
    let executions: usize = expected.iter().filter_map(|text| executed.get(text)).sum();
    eprintln!(
        "{} statements the CQL backend can send; {} of them executed on Apache Cassandra in this run, {executions} times in all",
        expected.len(),
        expected.len() - missing.len()
    );
    assert!(missing.is_empty(), "statements no test executed on the real node: {missing:#?}");
}
