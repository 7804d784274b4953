//! The shared state every handler reads ([`App`]), built once from the
//! configuration. Access decisions over it live in `access`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use read_model::{ApiKeys, DocumentReads, Store, Webhooks};
use telemetry::open_files::raise_open_file_limit;

use crate::config::{Environment, ServeConfig, Settings};
use crate::keys::production::ProductionKeys;
use crate::keys::sandbox::SandboxKeys;
use crate::metered_reads::MeteredReads;
use crate::metrics::Metrics;
use crate::notification_streams::StreamSlots;
use crate::rate_limit::RateLimits;
use crate::signing::Signer;
use crate::snapshots::SnapshotLibrary;

/// The base path of every public endpoint.
pub const BASE_PATH: &str = "/api/v1/public/v1";

/// Everything a request handler needs.
pub struct App {
    pub store: Arc<dyn DocumentReads>,
    pub production_keys: Arc<ProductionKeys>,
    pub sandbox_keys: SandboxKeys,
    pub rate_limits: RateLimits,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    /// Signs evidence packages and publishes the key sets at `/keys`.
    pub signer: Arc<Signer>,
    /// The catalogue snapshots served under `/bulk/snapshots`.
    pub snapshots: SnapshotLibrary,
    /// The calendar time of answers computed at request time (a remaining
    /// term, a verification date): the system's, or a manual one in tests.
    pub clock: read_model::clock::Clock,
    /// Set once shutdown begins: `/readyz` answers 503 from then on, and
    /// notification streams end.
    pub draining: Arc<AtomicBool>,
    /// The notification streams each key holds open.
    pub notification_streams: StreamSlots,
    /// The webhook subscriptions, which `GET /webhooks` shows and the
    /// deliverer delivers.
    pub webhooks: Arc<dyn Webhooks>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("App").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl App {
    /// The application state over `store`, whose production keys it reads;
    /// a generated sandbox key secret and keyring are kept in `data_dir`.
    /// Spawns the tasks that keep the keys fresh, so it runs on a Tokio runtime.
    pub fn from_config(config: &ServeConfig, store: Arc<dyn Store>, data_dir: &Path) -> anyhow::Result<Arc<App>> {
        let secret = config.sandbox_key_secret(data_dir)?;
        let keys: Arc<dyn ApiKeys> = store.clone();
        let webhooks: Arc<dyn Webhooks> = store.clone();
        let production_keys = ProductionKeys::start(keys);
        let reads: Arc<dyn DocumentReads> = store;
        let metrics = Arc::new(Metrics::new().context("failed to register metrics")?);
        let signer = config.signing_keys.open(data_dir, config.environment != Environment::Production)?;
        signer.keep_reloaded();
        Ok(Arc::new(App {
            store: Arc::new(MeteredReads { inner: reads, metrics: Arc::clone(&metrics) }),
            metrics,
            production_keys,
            sandbox_keys: SandboxKeys::new(&secret, config.sandbox_key_days * 86_400, config.default_rate_limit),
            rate_limits: RateLimits::new(config.default_rate_limit),
            settings: config.settings(&raise_open_file_limit()),
            snapshots: config.snapshot_library(data_dir),
            signer,
            draining: Default::default(),
            notification_streams: StreamSlots::default(),
            webhooks,
            clock: read_model::clock::Clock::system(),
        }))
    }

    /// The absolute URL of a path under the public base path.
    pub fn public_url(&self, path: &str) -> String {
        format!("{}{BASE_PATH}{path}", self.settings.public_base_url.trim_end_matches('/'))
    }
}
