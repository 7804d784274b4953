//! The CQL DDL (from `schemas/cql/`) and how it is applied.
//!
//! The files are compiled in, so the schema the backend creates is exactly the
//! committed one. They name keyspaces and the replication factor through
//! `{{keyspace}}` and `{{replication_factor}}`; [`render`] fills those in and
//! splits a file into the statements the driver executes one at a time.

/// The catalog keyspace's DDL, exactly as committed.
pub const CATALOG_CQL: &str = include_str!("../../../schemas/cql/catalog.cql");
/// A model version keyspace's DDL, exactly as committed.
pub const MODEL_CQL: &str = include_str!("../../../schemas/cql/model.cql");

/// The schema revision this binary creates and reads. A store at a higher
/// revision was written by a newer program and is refused. Revision 2 adds
/// the catalog's clock, which every catalog write must go through; revision
/// 3 the bulk bucket marks, which every bulk-row write must go through;
/// revision 4 may hold LZ4 blocks (`stored_bodies`), which a program of
/// revision 3 would serve as they are.
pub const SCHEMA_REVISION: i32 = 4;

/// The statement that drops keyspace `keyspace` (a model version, or the
/// catalog when decommissioning), which no DDL file holds.
pub fn drop_keyspace(keyspace: &str) -> String {
    format!("DROP KEYSPACE IF EXISTS {keyspace}")
}

/// The statements of a DDL file, with its placeholders filled in.
///
/// Comments (`--` to the end of a line) are dropped before splitting at `;`,
/// so a comment may contain any character.
pub fn render(ddl: &str, keyspace: &str, replication_factor: u32) -> Vec<String> {
    let without_comments: String =
        ddl.lines().map(|line| line.split_once("--").map_or(line, |(code, _)| code)).collect::<Vec<_>>().join("\n");
    without_comments
        .split(';')
        .map(|statement| statement.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|statement| !statement.is_empty())
        .map(|statement| {
            statement
                .replace("{{keyspace}}", keyspace)
                .replace("{{replication_factor}}", &replication_factor.to_string())
        })
        .collect()
}

/// A table as a DDL file declares it, for checking statements against it.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableShape {
    pub name: String,
    pub columns: Vec<String>,
    pub partition_key: Vec<String>,
    pub clustering_key: Vec<String>,
}

/// The tables of a rendered DDL file. Understands the forms our files use:
/// `PRIMARY KEY` after a column, or `PRIMARY KEY ((a, b), c)` as a clause.
#[cfg(test)]
pub fn tables(statements: &[String]) -> Vec<TableShape> {
    statements
        .iter()
        .filter_map(|statement| statement.strip_prefix("CREATE TABLE IF NOT EXISTS "))
        .map(|rest| {
            let (name, rest) = rest.split_once(" (").expect("table name, then columns");
            let rest = rest.split(" WITH ").next().unwrap_or(rest).trim_end();
            let body = rest.strip_suffix(')').expect("closing parenthesis");
            let mut shape = TableShape {
                name: name.rsplit('.').next().unwrap_or(name).to_owned(),
                columns: Vec::new(),
                partition_key: Vec::new(),
                clustering_key: Vec::new(),
            };
            let (columns, key_clause) = match body.split_once("PRIMARY KEY ((") {
                Some((columns, key)) => (columns, Some(key)),
                None => (body, None),
            };
            for column in columns.split(',').map(str::trim).filter(|column| !column.is_empty()) {
                let mut words = column.split_whitespace();
                let name = words.next().expect("column name").to_owned();
                if column.ends_with("PRIMARY KEY") {
                    shape.partition_key.push(name.clone());
                }
                shape.columns.push(name);
            }
            if let Some(key) = key_clause {
                let (partition, clustering) = key.split_once(')').expect("partition key closes");
                shape.partition_key = partition.split(',').map(|column| column.trim().to_owned()).collect();
                shape.clustering_key = clustering
                    .trim()
                    .trim_end_matches(')')
                    .split(',')
                    .map(str::trim)
                    .filter(|column| !column.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            shape
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_fills_every_placeholder_and_drops_comments() {
        for ddl in [CATALOG_CQL, MODEL_CQL] {
            let statements = render(ddl, "rights_v7", 3);
            assert!(statements.len() > 2);
            for statement in &statements {
                assert!(!statement.contains("{{") && !statement.contains("--"), "{statement}");
                assert!(statement.starts_with("CREATE "), "{statement}");
            }
            assert!(statements[0].starts_with("CREATE KEYSPACE IF NOT EXISTS rights_v7 WITH replication"));
            assert!(statements[0].contains("'class': 'NetworkTopologyStrategy', 'replication_factor': 3"));
        }
    }

    #[test]
    fn every_table_is_created_idempotently_in_the_rendered_keyspace() {
        let statements = render(MODEL_CQL, "rights_v1", 1);
        for statement in &statements[1..] {
            assert!(statement.starts_with("CREATE TABLE IF NOT EXISTS rights_v1."), "{statement}");
        }
    }

    #[test]
    fn the_table_parser_reads_both_key_forms() {
        let statements = render(MODEL_CQL, "k", 1);
        let shapes = tables(&statements);
        let by_name = |name: &str| shapes.iter().find(|shape| shape.name == name).expect(name).clone();
        let profiles = by_name("rights_profiles");
        assert_eq!((profiles.columns, profiles.partition_key), (vec!["id".into(), "body".into()], vec!["id".into()]));
        let bulk = by_name("bulk_rows");
        assert_eq!(bulk.partition_key, ["audience", "bucket"]);
        assert_eq!(bulk.clustering_key, ["lcc_id"]);
        assert_eq!(bulk.columns, ["audience", "bucket", "lcc_id", "body"]);
    }

    #[test]
    fn read_heavy_tables_use_leveled_compaction() {
        let statements = render(MODEL_CQL, "k", 1);
        for table in ["rights_profiles", "provenance_entries", "identifier_index", "bulk_rows", "sandbox_fixtures"] {
            let create = statements.iter().find(|statement| statement.contains(&format!("k.{table} ("))).expect(table);
            assert!(create.contains("'LeveledCompactionStrategy'"), "{create}");
        }
    }
}
