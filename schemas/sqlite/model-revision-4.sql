-- Upgrades a model file from schema revision 3 to 4: provenance entries,
-- bulk rows and the projector's states move into WITHOUT ROWID tables keyed
-- as before, so that each is one b-tree instead of a table and its key
-- index. Each table is copied in key order, then replaces the old one.
-- The new tables (`*_revision_4`) are created before this runs from their
-- definitions in model.sql (read_model's sqlite::schema), so the two cannot
-- drift apart.

INSERT INTO provenance_entries_revision_4 (lcc_id, recorded_at, topic, aggregate_version, body)
SELECT lcc_id, recorded_at, topic, aggregate_version, body FROM provenance_entries
ORDER BY lcc_id, recorded_at, topic, aggregate_version;
DROP TABLE provenance_entries;
ALTER TABLE provenance_entries_revision_4 RENAME TO provenance_entries;

INSERT INTO bulk_rows_revision_4 (audience, bucket, lcc_id, body)
SELECT audience, bucket, lcc_id, body FROM bulk_rows ORDER BY audience, bucket, lcc_id;
DROP TABLE bulk_rows;
ALTER TABLE bulk_rows_revision_4 RENAME TO bulk_rows;

INSERT INTO aggregates_revision_4 (topic, id, version, state)
SELECT topic, id, version, state FROM aggregates ORDER BY topic, id;
DROP TABLE aggregates;
ALTER TABLE aggregates_revision_4 RENAME TO aggregates;
