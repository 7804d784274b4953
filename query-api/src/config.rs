//! The service's configuration: flags with environment fallbacks and
//! defaults that work on one machine, and the settings they become. Shared
//! by `query-api serve` and the single-machine `rights-service` binary.
//!
//! It knows nothing of the application state or the router: `App` is built
//! from it, and the server reads its connection settings.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use telemetry::open_files::OpenFileLimits;

use crate::keys::sandbox::secret_kept_in;
use crate::signing::{KeyringSource, Signer, keyring_kept_in};
use crate::snapshots::{DEFAULT_ROWS_PER_FILE, SnapshotLibrary, SnapshotSchedule};

/// Where the service runs: interactive documentation only outside production.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Environment {
    Development,
    Sandbox,
    Production,
}

/// Settings that shape responses.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The public origin, for links in responses (`https://api.example.org`).
    pub public_base_url: String,
    pub environment: Environment,
    /// Requests per minute for clients without a key of their own quota.
    pub default_rate_limit: u32,
    /// Largest `limit` the bulk endpoint accepts.
    pub bulk_max_limit: u32,
    /// Whether requests come through a proxy that appends the client's
    /// address to `X-Forwarded-For` (see `routes::ClientAddress`).
    pub trust_x_forwarded_for: bool,
    /// The address OAI-PMH's `Identify` names for the repository's administrator.
    pub oai_admin_email: String,
    /// Timeouts and caps of the public listener's connections.
    pub connections: ConnectionSettings,
}

/// How the public listener treats connections.
#[derive(Debug, Clone)]
pub struct ConnectionSettings {
    /// A connection whose request head has not fully arrived this long after
    /// it opened, or after its previous answer, is closed.
    pub header_read_timeout: Duration,
    /// A request whose answer is not ready within this is answered 503
    /// (`request_timeout`); a streamed body may take longer.
    pub request_timeout: Duration,
    /// Connections open at once, in all.
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub max_connections_per_address: usize,
    /// How long requests in flight may finish once shutdown begins.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionSettings {
    fn default() -> ConnectionSettings {
        ConnectionSettings {
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            max_connections_per_address: 256,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    /// Address of the public listener.
    #[arg(long, env = "LCC_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Address of the admin listener (`/metrics`, `/healthz`, `/readyz`).
    #[arg(long, env = "LCC_ADMIN_LISTEN", default_value = "127.0.0.1:8081")]
    pub admin_listen: String,
    /// Public origin used in links (`publicLookupUrl`, bulk `links`).
    #[arg(long, env = "LCC_PUBLIC_BASE_URL", default_value = "http://127.0.0.1:8080")]
    pub public_base_url: String,
    #[arg(long, env = "LCC_ENVIRONMENT", value_enum, default_value = "development")]
    pub environment: Environment,
    /// Secret that signs sandbox keys; every replica needs the same one.
    /// Required in production; elsewhere one is generated once and kept in
    /// `DATA_DIR/sandbox-key-secret`.
    #[arg(long, env = "LCC_SANDBOX_KEY_SECRET", hide_env_values = true)]
    pub sandbox_key_secret: Option<String>,
    /// Lifetime of a sandbox key, in days.
    #[arg(long, env = "LCC_SANDBOX_KEY_DAYS", default_value_t = 30)]
    pub sandbox_key_days: u64,
    /// Requests per minute for sandbox keys and for endpoints without a key.
    #[arg(long, env = "LCC_DEFAULT_RATE_LIMIT", default_value_t = 60)]
    pub default_rate_limit: u32,
    /// Largest page size of the bulk export.
    #[arg(long, env = "LCC_BULK_MAX_LIMIT", default_value_t = 1_000)]
    pub bulk_max_limit: u32,
    /// Take the client address of unauthenticated limits from the last
    /// `X-Forwarded-For` entry. Set it only behind a proxy that appends it.
    #[arg(long, env = "LCC_TRUST_X_FORWARDED_FOR")]
    pub trust_x_forwarded_for: bool,
    /// The administrator's address that OAI-PMH's `Identify` names.
    #[arg(long, env = "LCC_OAI_ADMIN_EMAIL", default_value = "registry@example.org")]
    pub oai_admin_email: String,
    /// Directory of the catalogue snapshots every replica serves
    /// (`DATA_DIR/snapshots` by default); replicas share it.
    #[arg(long, env = "LCC_SNAPSHOT_DIR")]
    pub snapshot_dir: Option<PathBuf>,
    /// The longest the newest snapshot may lag the change feed, in minutes;
    /// a snapshot is cut sooner once the feed is quiet. 0: this replica
    /// serves snapshots but never cuts them.
    #[arg(long, env = "LCC_SNAPSHOT_INTERVAL_MINUTES", default_value_t = 360)]
    pub snapshot_interval_minutes: u64,
    /// Snapshots kept per audience.
    #[arg(long, env = "LCC_SNAPSHOTS_KEPT", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshots_kept: u64,
    /// The most rows a snapshot file holds.
    #[arg(long, env = "LCC_SNAPSHOT_ROWS_PER_FILE", default_value_t = DEFAULT_ROWS_PER_FILE, value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshot_rows_per_file: u64,
    #[command(flatten)]
    pub signing_keys: SigningKeysArguments,
    #[command(flatten)]
    pub webhooks: WebhookArguments,
    /// Seconds a connection may take to send a request head, counted from
    /// its opening and again from each answer (so also the longest a
    /// keep-alive connection stays idle); then it is closed.
    #[arg(long, env = "LCC_HEADER_READ_TIMEOUT_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=30))]
    pub header_read_timeout_seconds: u64,
    /// Seconds a request may take to be answered; then it gets 503
    /// (`request_timeout`). A streamed file body may take longer.
    #[arg(long, env = "LCC_REQUEST_TIMEOUT_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_seconds: u64,
    /// Connections open at once; kept below the open-file limit, which the
    /// process raises to its hard limit at start. Past it, connections are
    /// closed at once.
    #[arg(long, env = "LCC_MAX_CONNECTIONS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// Connections open at once from one client address (behind a balancer,
    /// its address: set this as high as `--max-connections` there).
    #[arg(long, env = "LCC_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_address: u64,
    /// Seconds requests in flight may take to finish once shutdown begins.
    #[arg(long, env = "LCC_SHUTDOWN_GRACE_SECONDS", default_value_t = 10)]
    pub shutdown_grace_seconds: u64,
}

/// How webhooks are delivered, and where endpoints may be.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookArguments {
    /// Whether this replica delivers webhooks (each subscription is
    /// delivered by one replica at a time, whichever holds its lease).
    #[arg(long, env = "LCC_DELIVER_WEBHOOKS", default_value_t = true, action = clap::ArgAction::Set)]
    pub deliver_webhooks: bool,
    /// Seconds one delivery attempt may take, connection to last byte.
    #[arg(long, env = "LCC_WEBHOOK_TIMEOUT_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub webhook_timeout_seconds: u64,
    /// The most notifications one delivery holds.
    #[arg(long, env = "LCC_WEBHOOK_BATCH", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub webhook_batch: u32,
    /// How often, in milliseconds, subscriptions are listed and a caught-up
    /// subscription looks for new notifications.
    #[arg(long, env = "LCC_WEBHOOK_POLL_MILLISECONDS", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub webhook_poll_milliseconds: u64,
    /// Seconds a replica's lease on a subscription lasts unrenewed: how
    /// soon another replica takes over from one that stopped.
    #[arg(long, env = "LCC_WEBHOOK_LEASE_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(3..=3_600))]
    pub webhook_lease_seconds: u64,
    /// Pins a host name to an address (`HOST=ADDRESS`, repeatable, or
    /// comma-separated), as curl's `--resolve`; other names are resolved by
    /// the system at every delivery.
    #[arg(long, env = "LCC_WEBHOOK_RESOLVE", value_delimiter = ',')]
    pub webhook_resolve: Vec<String>,
    /// A PEM file of the root certificates endpoints' certificates are
    /// checked against, instead of Mozilla's.
    #[arg(long, env = "LCC_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<PathBuf>,
}

impl WebhookArguments {
    /// Where endpoints may be: in production only public addresses over
    /// HTTPS; elsewhere (development, tests) also local ones, and plain HTTP.
    pub fn resolution(&self, environment: Environment) -> anyhow::Result<crate::webhooks::addresses::Resolution> {
        let pinned = crate::webhooks::addresses::PinnedNames::parse(self.webhook_resolve.iter().map(String::as_str))
            .map_err(anyhow::Error::msg)
            .context("failed to read --webhook-resolve")?;
        Ok(crate::webhooks::addresses::Resolution { pinned, refuse_private: environment == Environment::Production })
    }

    /// How this replica delivers.
    pub fn delivery_settings(
        &self,
        environment: Environment,
    ) -> anyhow::Result<crate::webhooks::settings::DeliverySettings> {
        let roots = match &self.webhook_ca_file {
            None => None,
            Some(path) => {
                let pem = std::fs::read(path).with_context(|| format!("failed to read {}", path.display()))?;
                let certificates = ureq::tls::parse_pem(&pem)
                    .filter_map(|item| match item {
                        Ok(ureq::tls::PemItem::Certificate(certificate)) => Some(Ok(certificate)),
                        Ok(_) => None,
                        Err(error) => Some(Err(error)),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .with_context(|| format!("failed to read the certificates of {}", path.display()))?;
                if certificates.is_empty() {
                    bail!("{} holds no certificate", path.display());
                }
                Some(certificates)
            }
        };
        Ok(crate::webhooks::settings::DeliverySettings {
            poll: Duration::from_millis(self.webhook_poll_milliseconds),
            lease: Duration::from_secs(self.webhook_lease_seconds),
            batch: self.webhook_batch,
            sender: crate::webhooks::sending::SenderSettings {
                timeout: Duration::from_secs(self.webhook_timeout_seconds),
                resolution: self.resolution(environment)?,
                https_only: environment == Environment::Production,
                roots,
            },
        })
    }
}

/// File descriptors kept for the store, the snapshot files and the admin
/// listener when the connection cap is fitted under the open-file limit.
const DESCRIPTORS_KEPT_BESIDE_CONNECTIONS: u64 = 256;

/// Where the keyring that signs evidence packages and snapshot manifests is.
#[derive(Debug, Clone, clap::Args)]
pub struct SigningKeysArguments {
    /// The keyring file (`DATA_DIR/signing-keys.json` by default), read again
    /// when it changes. Outside production it is created on first start with
    /// one active key per audience.
    #[arg(long, env = "LCC_SIGNING_KEYS_FILE")]
    pub signing_keys_file: Option<PathBuf>,
    /// The keyring's JSON itself, instead of a file (a secret given by the
    /// environment); read at start only.
    #[arg(long, env = "LCC_SIGNING_KEYS", hide_env_values = true, conflicts_with = "signing_keys_file")]
    pub signing_keys: Option<String>,
}

impl SigningKeysArguments {
    /// The keyring file these arguments name.
    pub fn file(&self, data_dir: &Path) -> PathBuf {
        self.signing_keys_file.clone().unwrap_or_else(|| data_dir.join("signing-keys.json"))
    }

    /// The signer over the keyring; a missing keyring file is created when
    /// `create` is set (everywhere but production, where every replica must
    /// sign with the keys the operator gave them all).
    pub fn open(&self, data_dir: &Path, create: bool) -> anyhow::Result<Arc<Signer>> {
        if let Some(text) = &self.signing_keys {
            return Signer::open(KeyringSource::Given(text.clone()))
                .context("failed to read the signing keyring given by LCC_SIGNING_KEYS");
        }
        let file = self.file(data_dir);
        if create {
            keyring_kept_in(&file, read_model::calendar::Timestamp::now())
                .with_context(|| format!("failed to keep a signing keyring in {}", file.display()))?;
        } else if !file.exists() {
            bail!(
                "no signing keyring at {}: in production, create one with `query-api signing-keys init` and \
                 give every replica the same one (--signing-keys-file or LCC_SIGNING_KEYS)",
                file.display()
            );
        }
        Signer::open(KeyringSource::File(file.clone()))
            .with_context(|| format!("failed to read the signing keyring {}", file.display()))
    }
}

impl ServeConfig {
    /// The directory snapshots are served from.
    pub fn snapshot_library(&self, data_dir: &Path) -> SnapshotLibrary {
        SnapshotLibrary::new(self.snapshot_dir.clone().unwrap_or_else(|| data_dir.join("snapshots")))
    }

    /// What the snapshot task is told, or `None` when this replica does not
    /// cut; `signer` signs the manifests.
    pub fn snapshot_schedule(&self, data_dir: &Path, signer: &Arc<Signer>) -> Option<SnapshotSchedule> {
        (self.snapshot_interval_minutes > 0).then(|| SnapshotSchedule {
            library: self.snapshot_library(data_dir),
            interval: Duration::from_secs(self.snapshot_interval_minutes.saturating_mul(60)),
            keep: usize::try_from(self.snapshots_kept).unwrap_or(usize::MAX),
            rows_per_file: self.snapshot_rows_per_file,
            signer: Arc::clone(signer),
        })
    }

    /// The listener's timeouts and caps, with the total cap fitted under
    /// the open-file limit the process has after raising it.
    pub fn connection_settings(&self, open_files: &OpenFileLimits) -> ConnectionSettings {
        let fitting =
            open_files.soft.map_or(u64::MAX, |limit| limit.saturating_sub(DESCRIPTORS_KEPT_BESIDE_CONNECTIONS));
        let max_connections = self.max_connections.min(fitting).max(1);
        if max_connections < self.max_connections {
            tracing::warn!(
                asked = self.max_connections,
                max_connections,
                "the connection cap is lowered to fit the open-file limit"
            );
        }
        let as_usize = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
        ConnectionSettings {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_seconds),
            request_timeout: Duration::from_secs(self.request_timeout_seconds),
            max_connections: as_usize(max_connections),
            max_connections_per_address: as_usize(self.max_connections_per_address.min(max_connections)),
            shutdown_grace: Duration::from_secs(self.shutdown_grace_seconds),
        }
    }

    /// The settings that shape responses; `open_files` bounds the connection cap.
    pub fn settings(&self, open_files: &OpenFileLimits) -> Settings {
        Settings {
            public_base_url: self.public_base_url.clone(),
            environment: self.environment,
            default_rate_limit: self.default_rate_limit,
            bulk_max_limit: self.bulk_max_limit,
            trust_x_forwarded_for: self.trust_x_forwarded_for,
            oai_admin_email: self.oai_admin_email.clone(),
            connections: self.connection_settings(open_files),
        }
    }

    /// The secret that signs sandbox keys: the one given, or outside
    /// production one generated once and kept in `data_dir`.
    pub fn sandbox_key_secret(&self, data_dir: &Path) -> anyhow::Result<Vec<u8>> {
        match (&self.sandbox_key_secret, self.environment) {
            (Some(secret), _) => Ok(secret.clone().into_bytes()),
            (None, Environment::Production) => {
                bail!("--sandbox-key-secret (LCC_SANDBOX_KEY_SECRET) is required in production")
            }
            (None, _) => secret_kept_in(data_dir)
                .with_context(|| format!("failed to keep a sandbox key secret in {}", data_dir.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use read_model::Audience;

    use super::*;
    use crate::signing::Keyring;

    fn arguments(file: Option<PathBuf>, given: Option<String>) -> SigningKeysArguments {
        SigningKeysArguments { signing_keys_file: file, signing_keys: given }
    }

    #[test]
    fn production_needs_a_keyring_and_elsewhere_one_is_kept_in_the_data_directory() {
        let data = tempfile::tempdir().expect("tempdir");
        let refused = arguments(None, None).open(data.path(), false).expect_err("production without a keyring");
        assert!(refused.to_string().contains("signing-keys init"), "{refused}");
        assert!(!data.path().join("signing-keys.json").exists(), "nothing is created in production");

        let signer = arguments(None, None).open(data.path(), true).expect("created");
        let kept = Keyring::read(&data.path().join("signing-keys.json")).expect("kept in the data directory");
        assert_eq!(signer.key_set(Audience::Production), Signer::of(&kept).key_set(Audience::Production));
        assert!(arguments(None, None).open(data.path(), false).is_ok(), "production reads an existing keyring");
    }

    #[test]
    fn a_keyring_given_by_the_environment_is_used_as_it_is() {
        let data = tempfile::tempdir().expect("tempdir");
        let keyring = Keyring::first(read_model::calendar::Timestamp(0), [[5; 32], [6; 32]]);
        let signer = arguments(None, Some(keyring.to_json())).open(data.path(), false).expect("given");
        assert_eq!(signer.key_set(Audience::Sandbox), Signer::of(&keyring).key_set(Audience::Sandbox));
        assert!(!data.path().join("signing-keys.json").exists());
        let broken = arguments(None, Some("{".into())).open(data.path(), false).expect_err("not a keyring");
        assert!(format!("{broken:#}").contains("LCC_SIGNING_KEYS"), "{broken:#}");
    }
}
