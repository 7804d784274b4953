//! A work's documents share one row of `work_documents`, a column per kind.
//! This module writes those rows: a work's consecutive document writes
//! become one upsert of the columns they set, and a row whose last document
//! is removed goes.

use rusqlite::Connection;

use super::errors::from_sqlite;
use super::schema;
use crate::store::StoreError;

/// Gathers a work's consecutive document writes (a batch writes a work's
/// documents one after another) into one upsert of its row, so the row is
/// rebuilt once, not once per kind.
pub(super) struct WorkRowWriter<'a> {
    connection: &'a Connection,
    id: Option<&'a str>,
    /// Per column: untouched, set to a body, or cleared.
    columns: [Option<Option<&'a [u8]>>; schema::WORK_DOCUMENT_COLUMNS.len()],
    /// The upsert of each set of columns, by bit mask, formatted once per batch.
    upserts: [Option<String>; 1 << schema::WORK_DOCUMENT_COLUMNS.len()],
}

impl<'a> WorkRowWriter<'a> {
    pub(super) fn new(connection: &'a Connection) -> WorkRowWriter<'a> {
        WorkRowWriter { connection, id: None, columns: Default::default(), upserts: Default::default() }
    }

    pub(super) fn set(&mut self, id: &'a str, column: usize, body: Option<&'a [u8]>) -> Result<(), StoreError> {
        if self.id.is_some_and(|pending| pending != id) {
            self.flush()?;
        }
        self.id = Some(id);
        self.columns[column] = Some(body);
        Ok(())
    }

    /// Writes the pending work's row; deletes it once it holds no document.
    pub(super) fn flush(&mut self) -> Result<(), StoreError> {
        let Some(id) = self.id.take() else { return Ok(()) };
        let columns = std::mem::take(&mut self.columns);
        let mask = (0..columns.len())
            .filter(|position| columns[*position].is_some())
            .fold(0, |mask, position| mask | 1 << position);
        let sql = self.upserts[mask].get_or_insert_with(|| upsert_work_row(mask));
        let values = columns.iter().flatten();
        let parameters =
            std::iter::once(&id as &dyn rusqlite::ToSql).chain(values.clone().map(|body| body as &dyn rusqlite::ToSql));
        self.connection
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute(rusqlite::params_from_iter(parameters)))
            .map_err(from_sqlite)?;
        if values.clone().any(Option::is_none) {
            self.connection
                .prepare_cached(&delete_empty_work_row())
                .and_then(|mut statement| statement.execute([id]))
                .map_err(from_sqlite)?;
        }
        Ok(())
    }
}

/// Deletes a work's row once every document column is NULL.
fn delete_empty_work_row() -> String {
    let empty: Vec<String> =
        schema::WORK_DOCUMENT_COLUMNS.iter().map(|(_, column)| format!(" AND {column} IS NULL")).collect();
    format!("DELETE FROM work_documents WHERE id = ?1{}", empty.concat())
}

/// The upsert of a work's row that sets the columns in `mask` (bit N: column N).
fn upsert_work_row(mask: usize) -> String {
    let columns: Vec<&str> = schema::WORK_DOCUMENT_COLUMNS
        .iter()
        .enumerate()
        .filter(|(position, _)| mask & (1 << position) != 0)
        .map(|(_, (_, column))| *column)
        .collect();
    let placeholders: Vec<String> = (2..columns.len() + 2).map(|number| format!("?{number}")).collect();
    let assignments: Vec<String> = columns.iter().map(|column| format!("{column} = excluded.{column}")).collect();
    format!(
        "INSERT INTO work_documents (id, {}) VALUES (?1, {}) ON CONFLICT (id) DO UPDATE SET {}",
        columns.join(", "),
        placeholders.join(", "),
        assignments.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_of_columns_has_an_upsert_that_binds_its_values_in_column_order_and_empty_rows_a_delete() {
        assert_eq!(
            upsert_work_row(0b1010),
            "INSERT INTO work_documents (id, verification, evidence) VALUES (?1, ?2, ?3) \
             ON CONFLICT (id) DO UPDATE SET verification = excluded.verification, evidence = excluded.evidence"
        );
        assert_eq!(
            delete_empty_work_row(),
            "DELETE FROM work_documents WHERE id = ?1 AND rights_profile IS NULL \
             AND verification IS NULL AND metadata IS NULL AND evidence IS NULL"
        );
        let connection = schema::in_memory_model();
        connection.prepare(&delete_empty_work_row()).expect("valid SQL");
        for mask in 1..1 << schema::WORK_DOCUMENT_COLUMNS.len() {
            connection.prepare(&upsert_work_row(mask)).expect("valid SQL");
        }
    }
}
