-- Upgrades a model file from schema revision 1 to 2, after model.sql has
-- created `work_documents`: each work's documents move from the four tables
-- of revision 1, one per kind, into one row.

INSERT INTO work_documents (id, rights_profile, verification, metadata, evidence)
SELECT
    ids.id,
    (SELECT body FROM rights_profiles WHERE id = ids.id),
    (SELECT body FROM verification_inputs WHERE id = ids.id),
    (SELECT body FROM dublin_core_records WHERE id = ids.id),
    (SELECT body FROM evidence_inputs WHERE id = ids.id)
FROM (
    SELECT id FROM rights_profiles
    UNION SELECT id FROM verification_inputs
    UNION SELECT id FROM dublin_core_records
    UNION SELECT id FROM evidence_inputs
) AS ids;

DROP TABLE rights_profiles;
DROP TABLE verification_inputs;
DROP TABLE dublin_core_records;
DROP TABLE evidence_inputs;
