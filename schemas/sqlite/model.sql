-- One model version of the read model (file `model-v<N>.sqlite`).
--
-- Documents, provenance entries, bulk rows, changes and the projector's
-- states are stored as zstd frames, each compressed with the dictionary of
-- its kind (read_model::stored_bodies, schemas/dictionaries/), and read
-- back to the exact JSON written; a value that is not a frame is read as
-- it is. Every table keyed by text but the sandbox fixtures (a few rows,
-- read whole) is WITHOUT ROWID, so that a lookup or an insert is one
-- b-tree, not a key index and a table, and the key is stored once. That
-- includes a work's documents: their frames take about 700 bytes a row
-- (999 in 1,000 of a million generated works under 1,100), under the
-- 2,000 bytes that an 8 KiB page keeps in a WITHOUT ROWID leaf before the
-- rest of a row goes to an overflow page. The change feed's key is its rowid.
--
-- Only the projector writes here, one transaction per batch, checkpoints
-- included.

-- Single-key documents (see read_model::DocumentKind). A work's four
-- documents share one row, NULL where the work has none of that kind yet:
-- a batch that changes a work rewrites one page for it, not one page in each
-- of four tables (a third fewer log bytes per run, README benchmarks).
CREATE TABLE IF NOT EXISTS work_documents (
    id TEXT PRIMARY KEY,
    rights_profile BLOB,
    verification BLOB,
    metadata BLOB,
    evidence BLOB
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS license_statuses (id TEXT PRIMARY KEY, body BLOB NOT NULL) WITHOUT ROWID;

-- Provenance: the entries one batch writes for a work, as one row keyed by
-- the first of them (read-model/src/sqlite/provenance_groups.rs); a read
-- merges a work's rows into its entries in (recorded_at, topic,
-- aggregate_version) order.
CREATE TABLE IF NOT EXISTS provenance_entries (
    lcc_id TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    topic TEXT NOT NULL,
    aggregate_version INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (lcc_id, recorded_at, topic, aggregate_version)
) WITHOUT ROWID;

-- ISWC and ISRC indexes, split by audience so a sandbox key finds sandbox works only.
CREATE TABLE IF NOT EXISTS identifier_index (
    kind TEXT NOT NULL,
    code TEXT NOT NULL,
    audience TEXT NOT NULL,
    lcc_id TEXT NOT NULL,
    PRIMARY KEY (kind, code, audience, lcc_id)
) WITHOUT ROWID;

-- Bulk export rows in (audience, bucket, lcc_id) order; see read_model::bulk.
CREATE TABLE IF NOT EXISTS bulk_rows (
    audience TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    lcc_id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (audience, bucket, lcc_id)
) WITHOUT ROWID;

-- Row count per bulk bucket, kept in the same transaction as bulk_rows.
CREATE TABLE IF NOT EXISTS bulk_bucket_counts (
    audience TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    row_count INTEGER NOT NULL,
    PRIMARY KEY (audience, bucket)
) WITHOUT ROWID;

-- The change feed (see read_model::change_feed): every change of a bulk row,
-- written in the transaction that changes the row. `sequence` is the commit
-- millisecond shifted left by 20 bits plus the change's index in its batch,
-- so it orders changes by commit and names their time. `body` is the row as
-- the export serves it; NULL for a withdrawal. Retention removes changes a
-- later change of the same work supersedes, and withdrawals, once older
-- than its period.
CREATE TABLE IF NOT EXISTS change_feed (
    sequence INTEGER PRIMARY KEY,
    audience TEXT NOT NULL,
    lcc_id TEXT NOT NULL,
    body BLOB
);
CREATE INDEX IF NOT EXISTS change_feed_by_audience ON change_feed (audience, sequence);
CREATE INDEX IF NOT EXISTS change_feed_by_work ON change_feed (lcc_id, sequence);

-- One row: `horizon` is the newest sequence retention has removed (cursors
-- behind it are gone), `swept_through` the newest it has looked at. Both
-- start at the file's creation, so a cursor of a file created anew under
-- the same name is behind the horizon of the new one.
CREATE TABLE IF NOT EXISTS change_feed_state (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    horizon INTEGER NOT NULL,
    swept_through INTEGER NOT NULL
);
INSERT INTO change_feed_state (singleton, horizon, swept_through)
SELECT 1, CAST(unixepoch('subsec') * 1000 AS INTEGER) << 20, CAST(unixepoch('subsec') * 1000 AS INTEGER) << 20
WHERE NOT EXISTS (SELECT 1 FROM change_feed_state);

-- Notifications (see read_model::notifications): every change of an
-- answer a key can read, written in the transaction that changes the
-- documents. `sequence` is ordered and spelled as the change feed's;
-- `body` is the notification in its compact stored form
-- (`Notification::encode`). Retention removes every notification older than
-- its period; `horizon` is the newest sequence it has removed (cursors
-- behind it are gone), starting at the file's creation as the change feed's
-- does.
CREATE TABLE IF NOT EXISTS notifications (
    sequence INTEGER PRIMARY KEY,
    audience TEXT NOT NULL,
    id TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS notifications_by_audience ON notifications (audience, sequence);
CREATE TABLE IF NOT EXISTS notifications_state (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    horizon INTEGER NOT NULL
);
INSERT INTO notifications_state (singleton, horizon)
SELECT 1, CAST(unixepoch('subsec') * 1000 AS INTEGER) << 20
WHERE NOT EXISTS (SELECT 1 FROM notifications_state);

-- The sandbox fixture catalogue.
CREATE TABLE IF NOT EXISTS sandbox_fixtures (id TEXT PRIMARY KEY, body BLOB NOT NULL);

-- The projector's state of each upstream aggregate and the version it reflects.
CREATE TABLE IF NOT EXISTS aggregates (
    topic TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    state BLOB NOT NULL,
    PRIMARY KEY (topic, id)
) WITHOUT ROWID;

-- Which documents name which party, so a party change reaches all of them.
CREATE TABLE IF NOT EXISTS party_references (
    party_id TEXT NOT NULL,
    referrer_kind TEXT NOT NULL,
    referrer_id TEXT NOT NULL,
    PRIMARY KEY (party_id, referrer_kind, referrer_id)
) WITHOUT ROWID;

-- Party references and identifier index entries that batches of a sorted
-- catch-up deferred (WriteBatch::defer_index_entries), in the order their
-- batches committed: a later batch writes them into party_references and
-- identifier_index in key order, where each batch writing its own would
-- rewrite pages all over those two tables. `present` is 1 for an entry
-- added, 0 for one removed. Reads of party references count them.
CREATE TABLE IF NOT EXISTS deferred_party_references (
    party_id TEXT NOT NULL,
    referrer_kind TEXT NOT NULL,
    referrer_id TEXT NOT NULL,
    present INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deferred_identifiers (
    kind TEXT NOT NULL,
    code TEXT NOT NULL,
    audience TEXT NOT NULL,
    lcc_id TEXT NOT NULL,
    present INTEGER NOT NULL
);
-- Next offset to read per source stream and partition.
CREATE TABLE IF NOT EXISTS checkpoints (
    source TEXT NOT NULL,
    stream TEXT NOT NULL,
    partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (source, stream, partition)
) WITHOUT ROWID;

-- The keys of the documents each batch wrote, one row per batch in commit
-- order, so that a process holding documents in memory (the query API's
-- document cache) drops exactly those. `keys` is a JSON array of strings.
-- The projector keeps the newest 1,000 rows; a reader that falls further
-- behind drops everything it holds. The first row is numbered from the
-- time the file was created, in microseconds, so that a model file created
-- anew never continues the numbering of one it replaces.
CREATE TABLE IF NOT EXISTS document_changes (
    sequence INTEGER PRIMARY KEY,
    keys TEXT NOT NULL
);
INSERT INTO document_changes (sequence, keys)
SELECT CAST(unixepoch('subsec') * 1000000 AS INTEGER), '[]'
WHERE NOT EXISTS (SELECT 1 FROM document_changes);
