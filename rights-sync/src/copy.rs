//! The copy: a SQLite file that DuckDB, pandas and the `sqlite3` shell read
//! as it is. `works` holds each published work with typed columns and the
//! row exactly as `/bulk/works` serves it; `sync_state` where the copy
//! stands (registry, audience, snapshot, cursor, the key that signed the
//! snapshot); `sync_runs` one line per run.
//!
//! Every change is one transaction with the state it leads to: a snapshot
//! replaces all rows and sets the cursor it names; a feed page applies its
//! items and moves the cursor past them. So a run stopped at any point
//! leaves a copy that is consistent at its last cursor. This module must
//! not talk to the registry.

use std::io::BufRead;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Deserialize;

/// The copy's tables.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS works (
    lcc_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    iswc TEXT,
    isrcs TEXT NOT NULL,              -- JSON array of ISRCs
    work_type TEXT NOT NULL,
    language TEXT,
    created_on TEXT,                  -- YYYY-MM-DD
    published_at TEXT NOT NULL,       -- RFC 3339, UTC
    creators TEXT NOT NULL,           -- JSON array of {name, role}
    open_for_licensing INTEGER NOT NULL,
    version INTEGER NOT NULL,         -- the change feed's version of the row; 0 from a snapshot
    row_json TEXT NOT NULL            -- the row exactly as /bulk/works serves it
);
CREATE TABLE IF NOT EXISTS sync_state (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    registry TEXT NOT NULL,
    audience TEXT NOT NULL,
    snapshot_id TEXT NOT NULL,
    model_version INTEGER NOT NULL,
    cursor TEXT NOT NULL,             -- /bulk/changes?since= continues from here
    signed_by TEXT NOT NULL,          -- the key that signed the snapshot's manifest
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sync_runs (
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    outcome TEXT NOT NULL,            -- caught_up, interrupted or failed
    snapshot_rows INTEGER NOT NULL,   -- rows loaded from a snapshot in the run
    feed_items INTEGER NOT NULL,      -- change feed items applied in the run
    detail TEXT
);
";

/// Rows loaded between two progress reports.
pub const ROWS_PER_REPORT: u64 = 10_000;

/// Where the copy stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncState {
    pub registry: String,
    pub audience: String,
    pub snapshot_id: String,
    pub model_version: u32,
    pub cursor: String,
    pub signed_by: String,
}

/// One item of a change feed page.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeItem {
    pub lcc_id: String,
    pub kind: String,
    pub version: u64,
    /// The row exactly as served; absent for a withdrawal.
    pub row: Option<Box<serde_json::value::RawValue>>,
}

/// The typed columns of a row.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    lcc_id: String,
    title: String,
    iswc: Option<String>,
    isrcs: serde_json::Value,
    work_type: String,
    language: Option<String>,
    created_on: Option<String>,
    published_at: String,
    creators: serde_json::Value,
    open_for_licensing: bool,
}

/// A run's summary, as `sync_runs` keeps it.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub started_at: String,
    pub outcome: &'static str,
    pub snapshot_rows: u64,
    pub feed_items: u64,
    pub detail: Option<String>,
}

/// The open copy.
#[derive(Debug)]
pub struct Copy {
    connection: Connection,
}

impl Copy {
    /// Opens the copy at `path`, creating its tables when new.
    pub fn open(path: &Path) -> anyhow::Result<Copy> {
        let connection = Connection::open(path)?;
        // A reader of the copy (an analyst's query) may hold it for a moment.
        connection.busy_timeout(std::time::Duration::from_secs(30))?;
        connection.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
        connection.execute_batch(SCHEMA)?;
        Ok(Copy { connection })
    }

    pub fn state(&self) -> anyhow::Result<Option<SyncState>> {
        Ok(self
            .connection
            .query_row(
                "SELECT registry, audience, snapshot_id, model_version, cursor, signed_by FROM sync_state",
                [],
                |row| {
                    Ok(SyncState {
                        registry: row.get(0)?,
                        audience: row.get(1)?,
                        snapshot_id: row.get(2)?,
                        model_version: row.get(3)?,
                        cursor: row.get(4)?,
                        signed_by: row.get(5)?,
                    })
                },
            )
            .optional()?)
    }

    /// Replaces every row with the snapshot's NDJSON files and sets the
    /// state it leads to, in one transaction, telling `loaded` the rows so
    /// far every [`ROWS_PER_REPORT`]. Returns the rows loaded.
    pub fn replace_with_snapshot(
        &mut self,
        files: &[impl AsRef<Path>],
        state: &SyncState,
        mut loaded: impl FnMut(u64),
    ) -> anyhow::Result<u64> {
        let transaction = self.connection.transaction()?;
        transaction.execute("DELETE FROM works", [])?;
        let mut rows: u64 = 0;
        for file in files {
            let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(std::fs::File::open(file)?));
            for line in reader.lines() {
                let line = line?;
                if !line.is_empty() {
                    upsert(&transaction, &line, 0)?;
                    rows += 1;
                    if rows.is_multiple_of(ROWS_PER_REPORT) {
                        loaded(rows);
                    }
                }
            }
        }
        set_state(&transaction, state)?;
        transaction.commit()?;
        Ok(rows)
    }

    /// Applies one page of the change feed and moves the cursor to `next`,
    /// in one transaction. An item whose version is not above the row's is
    /// already applied. Returns the items that changed the copy.
    pub fn apply_page(&mut self, items: &[ChangeItem], next: &str) -> anyhow::Result<u64> {
        let transaction = self.connection.transaction()?;
        let mut applied = 0;
        for item in items {
            let stored: Option<u64> = transaction
                .query_row("SELECT version FROM works WHERE lcc_id = ?1", [&item.lcc_id], |row| row.get(0))
                .optional()?;
            if stored.is_some_and(|version| version >= item.version) {
                continue;
            }
            match (item.kind.as_str(), &item.row) {
                ("upsert", Some(row)) => upsert(&transaction, row.get(), item.version)?,
                ("withdrawn", None) => {
                    transaction.execute("DELETE FROM works WHERE lcc_id = ?1", [&item.lcc_id])?;
                }
                (kind, _) => anyhow::bail!("the change feed sent an item of kind {kind} for {}", item.lcc_id),
            }
            applied += 1;
        }
        transaction.execute("UPDATE sync_state SET cursor = ?1, updated_at = ?2", params![next, now()])?;
        transaction.commit()?;
        Ok(applied)
    }

    pub fn record_run(&self, run: &RunRecord) -> anyhow::Result<()> {
        self.connection.execute(
            "INSERT INTO sync_runs (started_at, finished_at, outcome, snapshot_rows, feed_items, detail) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![run.started_at, now(), run.outcome, run.snapshot_rows, run.feed_items, run.detail],
        )?;
        Ok(())
    }

    /// Every row's lccId and exact JSON, in lccId order.
    pub fn rows(&self, mut each: impl FnMut(&str, &str) -> anyhow::Result<()>) -> anyhow::Result<u64> {
        let mut statement = self.connection.prepare("SELECT lcc_id, row_json FROM works ORDER BY lcc_id")?;
        let mut rows = statement.query([])?;
        let mut count = 0;
        while let Some(row) = rows.next()? {
            each(row.get_ref(0)?.as_str()?, row.get_ref(1)?.as_str()?)?;
            count += 1;
        }
        Ok(count)
    }
}

fn upsert(transaction: &Transaction<'_>, row_json: &str, version: u64) -> anyhow::Result<()> {
    let row: Row = serde_json::from_str(row_json)?;
    transaction
        .prepare_cached(
            "INSERT OR REPLACE INTO works (lcc_id, title, iswc, isrcs, work_type, language, created_on, \
             published_at, creators, open_for_licensing, version, row_json) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            row.lcc_id,
            row.title,
            row.iswc,
            row.isrcs.to_string(),
            row.work_type,
            row.language,
            row.created_on,
            row.published_at,
            row.creators.to_string(),
            row.open_for_licensing,
            version,
            row_json,
        ])?;
    Ok(())
}

fn set_state(transaction: &Transaction<'_>, state: &SyncState) -> anyhow::Result<()> {
    transaction.execute(
        "INSERT OR REPLACE INTO sync_state (singleton, registry, audience, snapshot_id, model_version, cursor, \
         signed_by, updated_at) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            state.registry,
            state.audience,
            state.snapshot_id,
            state.model_version,
            state.cursor,
            state.signed_by,
            now()
        ],
    )?;
    Ok(())
}

/// Now, RFC 3339 in UTC to the millisecond.
pub fn now() -> String {
    read_model::calendar::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn row(id: &str, title: &str) -> String {
        format!(
            r#"{{"lccId":"{id}","title":"{title}","iswc":null,"isrcs":["QZ1"],"workType":"musical_work","language":"en","createdOn":null,"publishedAt":"2026-01-01T00:00:00.000Z","creators":[],"openForLicensing":true}}"#
        )
    }

    fn item(id: &str, kind: &str, version: u64, title: Option<&str>) -> ChangeItem {
        let row = title.map(|title| serde_json::value::RawValue::from_string(row(id, title)).expect("json"));
        ChangeItem { lcc_id: id.into(), kind: kind.into(), version, row }
    }

    fn state(cursor: &str) -> SyncState {
        SyncState {
            registry: "http://registry".into(),
            audience: "production".into(),
            snapshot_id: "S1".into(),
            model_version: 1,
            cursor: cursor.into(),
            signed_by: "k1".into(),
        }
    }

    fn titles(copy: &Copy) -> Vec<(String, String)> {
        let mut statement = copy.connection.prepare("SELECT lcc_id, title FROM works ORDER BY lcc_id").expect("select");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("rows")
            .map(|row| row.expect("row"))
            .collect()
    }

    #[test]
    fn a_snapshot_replaces_every_row_and_feed_items_apply_once_in_version_order() {
        let directory = tempfile::tempdir().expect("tempdir");
        let file = directory.path().join("works-00001.ndjson.gz");
        let mut encoder =
            flate2::write::GzEncoder::new(std::fs::File::create(&file).expect("file"), Default::default());
        writeln!(encoder, "{}\n{}", row("A", "a"), row("B", "b")).expect("write");
        encoder.finish().expect("gzip");
        let mut copy = Copy::open(&directory.path().join("copy.sqlite")).expect("open");
        assert_eq!(copy.state().expect("state"), None);
        assert_eq!(copy.replace_with_snapshot(&[&file], &state("c1.start"), drop).expect("load"), 2);
        assert_eq!(copy.state().expect("state").map(|state| state.cursor).as_deref(), Some("c1.start"));

        let page =
            [item("A", "upsert", 5, Some("a2")), item("B", "withdrawn", 6, None), item("C", "upsert", 7, Some("c"))];
        assert_eq!(copy.apply_page(&page, "c1.next").expect("apply"), 3);
        assert_eq!(titles(&copy), [("A".into(), "a2".into()), ("C".into(), "c".into())]);
        // The same page again, and an older item of A, change nothing.
        assert_eq!(copy.apply_page(&page[..1], "c1.again").expect("apply"), 0);
        assert_eq!(copy.apply_page(&[item("A", "upsert", 4, Some("old"))], "c1.again").expect("apply"), 0);
        assert_eq!(titles(&copy), [("A".into(), "a2".into()), ("C".into(), "c".into())]);
        assert_eq!(copy.state().expect("state").map(|state| state.cursor).as_deref(), Some("c1.again"));

        // A page that cannot be applied leaves rows and cursor as they were.
        assert!(copy.apply_page(&[item("C", "upsert", 9, None)], "c1.bad").is_err());
        assert_eq!(copy.state().expect("state").map(|state| state.cursor).as_deref(), Some("c1.again"));
        assert_eq!(copy.replace_with_snapshot(&[&file], &state("c1.restart"), drop).expect("load"), 2);
        assert_eq!(titles(&copy), [("A".into(), "a".into()), ("B".into(), "b".into())]);
    }
}
