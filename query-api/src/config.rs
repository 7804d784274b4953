//! The service's configuration: flags with environment fallbacks and
//! defaults that work on one machine. Shared by `query-api serve` and the
//! single-machine `rights-service` binary.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use read_model::{ApiKeys, DocumentReads, Store};

use crate::app::{App, Environment, Settings};
use crate::keys::production::ProductionKeys;
use crate::keys::sandbox::SandboxKeys;
use crate::keys::sandbox::secret_kept_in;
use crate::metrics::{MeteredReads, Metrics};
use crate::rate_limit::RateLimits;

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
}

impl ServeConfig {
    /// The application state over `store`, whose production keys it reads;
    /// a generated sandbox key secret is kept in `data_dir`. Spawns the task
    /// that keeps the keys fresh, so it runs on a Tokio runtime.
    pub fn build_app(&self, store: Arc<dyn Store>, data_dir: &Path) -> anyhow::Result<Arc<App>> {
        let secret = match (&self.sandbox_key_secret, self.environment) {
            (Some(secret), _) => secret.clone().into_bytes(),
            (None, Environment::Production) => {
                bail!("--sandbox-key-secret (LCC_SANDBOX_KEY_SECRET) is required in production")
            }
            (None, _) => secret_kept_in(data_dir)
                .with_context(|| format!("failed to keep a sandbox key secret in {}", data_dir.display()))?,
        };
        let keys: Arc<dyn ApiKeys> = store.clone();
        let production_keys = ProductionKeys::start(keys);
        let reads: Arc<dyn DocumentReads> = store;
        let metrics = Arc::new(Metrics::new().context("failed to register metrics")?);
        Ok(Arc::new(App {
            store: Arc::new(MeteredReads { inner: reads, metrics: Arc::clone(&metrics) }),
            metrics,
            production_keys,
            sandbox_keys: SandboxKeys::new(&secret, self.sandbox_key_days * 86_400, self.default_rate_limit),
            rate_limits: RateLimits::new(self.default_rate_limit),
            settings: Settings {
                public_base_url: self.public_base_url.clone(),
                environment: self.environment,
                default_rate_limit: self.default_rate_limit,
                bulk_max_limit: self.bulk_max_limit,
                trust_x_forwarded_for: self.trust_x_forwarded_for,
            },
            openapi_document: Default::default(),
        }))
    }
}
