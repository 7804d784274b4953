//! Every statement checked against the committed DDL: the table exists,
//! the columns exist, a read restricts one whole partition (three reads of
//! the projector a list of them, or of a partition's rows), a write names
//! the whole key, model writes carry a timestamp, and reads that can grow
//! are paged.

use super::*;
use crate::scylla::schema::{CATALOG_CQL, MODEL_CQL, TableShape, render, tables};

const KEYWORDS: [&str; 23] = [
    "ORDER",
    "BY",
    "DESC",
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "INSERT",
    "INTO",
    "VALUES",
    "USING",
    "TIMESTAMP",
    "DELETE",
    "LIMIT",
    "COUNT",
    "WRITETIME",
    "IN",
    "UPDATE",
    "SET",
    "IF",
    "NOT",
    "EXISTS",
    "k",
];

/// The table a statement names, and every other identifier in it.
fn table_and_columns(text: &str) -> (String, Vec<String>) {
    let table = text
        .split_whitespace()
        .find_map(|word| word.strip_prefix("k."))
        .map(|name| name.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_').to_owned())
        .expect("a table of keyspace k");
    let columns = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .filter(|word| !word.is_empty() && !word.starts_with("k.") && !KEYWORDS.contains(word))
        .filter(|word| !word.bytes().all(|byte| byte.is_ascii_digit()))
        .map(str::to_owned)
        .collect();
    (table, columns)
}

fn restricted_by_equality(text: &str, column: &str) -> bool {
    text.split_once(" WHERE ").is_some_and(|(_, filter)| filter.contains(&format!("{column} = ?")))
}

/// Whether a read names a list of `column`'s values (its last restriction):
/// at most `KEYS_PER_READ` keys, a row each.
fn restricted_by_list(text: &str, column: &str) -> bool {
    text.starts_with("SELECT ") && text.ends_with(&format!(" {column} IN ?"))
}

fn check(text: &str, shapes: &[TableShape]) {
    let (table, columns) = table_and_columns(text);
    let shape = shapes.iter().find(|shape| shape.name == table).unwrap_or_else(|| panic!("{text}: no {table}"));
    for column in &columns {
        assert!(shape.columns.contains(column), "{text}: {table} has no column {column}");
    }
    if text.starts_with("INSERT ") {
        for column in shape.partition_key.iter().chain(&shape.clustering_key) {
            assert!(columns.contains(column), "{text}: the write leaves key column {column} out");
        }
    } else {
        for (index, column) in shape.partition_key.iter().enumerate() {
            let last = index + 1 == shape.partition_key.len();
            let listed = last && restricted_by_list(text, column);
            assert!(restricted_by_equality(text, column) || listed, "{text}: not whole partitions ({column} unbound)");
        }
    }
    // Retention removes a whole day of notifications at once, and a removed
    // webhook all its attempts, by design.
    let whole_partition =
        text.starts_with("DELETE FROM k.notifications ") || text.starts_with("DELETE FROM k.webhook_attempts ");
    if text.starts_with("DELETE ") && !whole_partition {
        for column in &shape.clustering_key {
            assert!(restricted_by_equality(text, column), "{text}: deletes more than one row");
        }
    }
    // A lightweight transaction takes no timestamp of ours.
    let conditional = text.contains(" IF ");
    let writes = text.starts_with("INSERT ") || text.starts_with("DELETE ") || text.starts_with("UPDATE ");
    if writes && !conditional {
        assert!(text.contains("USING TIMESTAMP ?"), "{text}: a versioned write without its timestamp");
    }
}

#[test]
fn every_model_statement_reads_or_writes_one_partition_of_a_committed_table() {
    let shapes = tables(&render(MODEL_CQL, "k", 1));
    let statements = ModelStatement::all();
    assert_eq!(statements.len(), 5 * 3 + 51);
    for statement in statements {
        check(&statement.text("k"), &shapes);
    }
}

#[test]
fn only_the_projectors_reads_name_a_list_of_keys() {
    let listing: Vec<ModelStatement> =
        ModelStatement::all().into_iter().filter(|statement| statement.text("k").contains(" IN ?")).collect();
    let projectors =
        [ModelStatement::SelectBulkRowWriteTimes, ModelStatement::SelectAggregates, ModelStatement::SelectChangeHeads];
    assert_eq!(listing, projectors);
}

#[test]
fn every_catalog_statement_reads_or_writes_one_partition_of_a_committed_table() {
    let shapes = tables(&render(CATALOG_CQL, "k", 1));
    for statement in CatalogStatement::ALL {
        check(&statement.text("k"), &shapes);
    }
}

#[test]
fn every_model_table_has_a_writer_and_a_reader() {
    let shapes = tables(&render(MODEL_CQL, "k", 1));
    let texts: Vec<String> = ModelStatement::all().into_iter().map(|statement| statement.text("k")).collect();
    for shape in shapes {
        let named =
            |prefix: &str| texts.iter().any(|text| text.starts_with(prefix) && table_and_columns(text).0 == shape.name);
        assert!(named("INSERT "), "nothing writes {}", shape.name);
        assert!(named("SELECT "), "nothing reads {}", shape.name);
    }
}

#[test]
fn a_delete_binds_its_timestamp_first_and_an_insert_last() {
    let delete = ModelStatement::DeleteBulkRow.text("k");
    assert!(delete.find("USING TIMESTAMP ?") < delete.find("WHERE"));
    let insert = ModelStatement::UpsertBulkRow.text("k");
    assert!(insert.ends_with("USING TIMESTAMP ?"));
    assert_eq!(ModelStatement::SelectBulkRowIds.access(), Access::Read);
    assert_eq!(ModelStatement::UpsertBulkRow.access(), Access::Write);
}

/// Unpaged, the referrers of a party named by a million documents
/// would exceed ScyllaDB's limit for unpaged results, and every batch
/// touching the party would fail and be retried.
#[test]
fn every_read_that_can_return_many_rows_is_read_in_pages() {
    let model = tables(&render(MODEL_CQL, "k", 1));
    let catalog = tables(&render(CATALOG_CQL, "k", 1));
    let statements = ModelStatement::all()
        .into_iter()
        .map(|statement| (statement.text("k"), statement.access(), &model))
        .chain(CatalogStatement::ALL.into_iter().map(|statement| (statement.text("k"), statement.access(), &catalog)));
    for (text, access, shapes) in statements {
        if !text.starts_with("SELECT ") {
            assert_eq!(access, Access::Write, "{text}");
            continue;
        }
        let (table, _) = table_and_columns(&text);
        let shape = shapes.iter().find(|shape| shape.name == table).expect("a committed table");
        let one_row = shape
            .clustering_key
            .iter()
            .all(|column| restricted_by_equality(&text, column) || restricted_by_list(&text, column));
        let many_rows = !one_row && !text.contains("COUNT(") && !text.contains(" LIMIT ");
        assert_eq!(access, if many_rows { Access::ReadInPages } else { Access::Read }, "{text}");
    }
    assert_eq!(ModelStatement::SelectPartyReferrers.access(), Access::ReadInPages);
}
