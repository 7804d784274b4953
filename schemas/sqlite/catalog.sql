-- The catalog of the embedded store (file `catalog.sqlite`): which model
-- versions exist and which one readers read. Each model version lives in a file
-- of its own (`model-v<N>.sqlite`, schema in model.sql), so that a rebuild
-- writes a fresh file while readers keep reading the active one, and dropping a
-- version is deleting its file.

CREATE TABLE IF NOT EXISTS model_versions (
    version INTEGER PRIMARY KEY
);

-- At most one row: the version readers read.
CREATE TABLE IF NOT EXISTS active_model_version (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    version INTEGER NOT NULL REFERENCES model_versions (version)
);
