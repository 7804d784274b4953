-- Production API keys (file `api-keys.sqlite` beside the store). Only the
-- SHA-256 of a key is stored; the key itself is shown once, when issued.
-- Written by the operator command `query-api keys`; read by the API.

CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,
    key_id TEXT NOT NULL UNIQUE,
    partner TEXT NOT NULL,
    scopes TEXT NOT NULL,
    rate_limit_per_minute INTEGER NOT NULL CHECK (rate_limit_per_minute > 0),
    created_at_ms INTEGER NOT NULL,
    revoked_at_ms INTEGER
) WITHOUT ROWID;

-- What a key's notifications are limited to, as the API spells it
-- (`works:…` or `parties:…`); a key without a row reads every notification
-- of its audience. Written with the key.
CREATE TABLE IF NOT EXISTS notification_filters (
    key_id TEXT PRIMARY KEY,
    filter TEXT NOT NULL
) WITHOUT ROWID;
