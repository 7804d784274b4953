-- Production API keys and webhook subscriptions (file `api-keys.sqlite`
-- beside the store): what the operator sets up. Only the
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

-- Webhook subscriptions, set up by the operator command `query-api
-- webhooks`: each binds a production key (its notifications and filter) to
-- an HTTPS endpoint. `enabled` and `resumed_at_ms` are the operator's.
CREATE TABLE IF NOT EXISTS webhook_subscriptions (
    id TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    resumed_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- Each subscription's delivery state (the API's JSON) and the lease of the
-- one replica that delivers it: written only by the lease's holder.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    lease_owner TEXT NOT NULL,
    lease_until_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- The newest delivery attempts of each subscription (the API's JSON).
CREATE TABLE IF NOT EXISTS webhook_attempts (
    id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_attempts_by_time ON webhook_attempts (id, at_ms);
