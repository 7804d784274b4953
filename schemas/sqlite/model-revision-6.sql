-- Upgrades a model file from schema revision 5 to 6: a work's documents and
-- the license statuses move into WITHOUT ROWID tables keyed as before, so
-- that a document's point read descends one b-tree instead of a key index
-- and a table. Each table is copied in key order, then replaces the old
-- one. The new tables (`*_revision_6`) are created before this runs from
-- their definitions in model.sql (read_model's sqlite::schema), so the two
-- cannot drift apart.

INSERT INTO work_documents_revision_6 (id, rights_profile, verification, metadata, evidence)
SELECT id, rights_profile, verification, metadata, evidence FROM work_documents ORDER BY id;
DROP TABLE work_documents;
ALTER TABLE work_documents_revision_6 RENAME TO work_documents;

INSERT INTO license_statuses_revision_6 (id, body) SELECT id, body FROM license_statuses ORDER BY id;
DROP TABLE license_statuses;
ALTER TABLE license_statuses_revision_6 RENAME TO license_statuses;
