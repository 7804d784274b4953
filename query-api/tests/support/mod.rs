//! A real service for tests: the sandbox fixtures and a small generated
//! production stream projected by the real projector into a SQLite store,
//! production keys issued through the key store, and the router driven with
//! `tower::ServiceExt::oneshot`.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use projector::contract::Contract;
use projector::dead_letter::DeadLetterFile;
use projector::generate::{GenerateOptions, generate};
use projector::runner::{NoObserver, RunOptions, run};
use projector::source::file::FileSource;
use query_api::app::App;
use query_api::config::{Environment, Settings};
use query_api::keys::production::ProductionKeys;
use query_api::keys::sandbox::SandboxKeys;
use query_api::keys::{Scope, Scopes};
use query_api::rate_limit::RateLimits;
use query_api::routes::router;
use read_model::{ModelVersion, ModelVersions, SqliteStore, Store};
use tower::ServiceExt;

pub const BASE: &str = "/api/v1/public/v1";

pub struct Service {
    pub directory: tempfile::TempDir,
    pub app: Arc<App>,
    /// The router over `app`, built once as the server builds it.
    pub router: query_api::routes::PublicRouter,
    pub store: SqliteStore,
    /// A production key with every scope and a high limit.
    pub full_key: String,
}

async fn project(store: &SqliteStore, events: &Path, dead_letters: &Path) {
    project_into(store, ModelVersion(1), events, dead_letters).await;
}

async fn project_into(store: &SqliteStore, version: ModelVersion, events: &Path, dead_letters: &Path) {
    let source = FileSource::new(events, Arc::new(Contract::load().expect("contract")));
    let letters = DeadLetterFile::open(dead_letters).expect("dead letters");
    let options = RunOptions {
        batch_size: 5_000,
        linger: Duration::from_millis(100),
        exit_when_caught_up: true,
        ..RunOptions::default()
    };
    let store: Arc<dyn Store> = Arc::new(store.clone());
    let feed = source.start(options.batch_size, Duration::from_millis(10)).expect("reader");
    run(store, version, feed, Box::new(letters), Arc::new(NoObserver), options, std::future::pending())
        .await
        .expect("projection");
}

fn app(
    store: &SqliteStore,
    production_keys: Arc<ProductionKeys>,
    environment: Environment,
    behind_proxy: bool,
    clock: read_model::clock::Clock,
) -> Arc<App> {
    Arc::new(App {
        store: Arc::new(store.clone()),
        production_keys,
        sandbox_keys: SandboxKeys::new(b"test-secret", 3_600, 100_000),
        rate_limits: RateLimits::new(60),
        metrics: Arc::new(query_api::metrics::Metrics::new().expect("metrics")),
        settings: Settings {
            public_base_url: "https://api.example.org".into(),
            environment,
            default_rate_limit: 60,
            bulk_max_limit: 1_000,
            trust_x_forwarded_for: behind_proxy,
            oai_admin_email: "registry@example.org".into(),
            connections: Default::default(),
        },
        snapshots: query_api::snapshots::SnapshotLibrary::new(store.directory().join("snapshots")),
        signer: query_api::signing::Signer::of(&signing_keyring()),
        draining: Default::default(),
        notification_streams: Default::default(),
        webhooks: Arc::new(store.clone()),
        clock,
    })
}

/// The keyring every test instance signs with: fixed seeds, so that a test
/// can rebuild the key set it verifies against.
pub fn signing_keyring() -> query_api::signing::Keyring {
    let created = read_model::calendar::Timestamp::parse("2026-01-01T00:00:00.000Z").expect("instant");
    query_api::signing::Keyring::first(created, [[21; 32], [22; 32]])
}

impl Service {
    pub async fn start() -> Service {
        let directory = tempfile::tempdir().expect("tempdir");
        let data = directory.path().join("data");
        let store = SqliteStore::open(&data).expect("store");
        store.migrate().await.expect("migrate");
        store.create_model_version(ModelVersion(1)).await.expect("create");
        store.activate_model_version(ModelVersion(1)).await.expect("activate");
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
        project(&store, &workspace.join("schemas/fixtures/sandbox"), &directory.path().join("sandbox.jsonl")).await;
        let events = directory.path().join("events");
        generate(&GenerateOptions { works: 300, seed: 12, events_per_segment: 10_000, sandbox: false }, &events)
            .expect("generate");
        project(&store, &events, &directory.path().join("production.jsonl")).await;

        let library = query_api::snapshots::SnapshotLibrary::new(store.directory().join("snapshots"));
        for audience in [read_model::Audience::Sandbox, read_model::Audience::Production] {
            let signer = query_api::signing::Signer::of(&signing_keyring());
            query_api::snapshots::cut_snapshot(&store, &library, &signer, audience, 250_000).await.expect("snapshot");
        }
        let keys = ProductionKeys::start(Arc::new(store.clone()));
        let (full_key, _) = keys.issue("Everything Ltd", Scopes::all(), 100_000).await.expect("issue");
        let app = app(&store, keys, Environment::Development, false, read_model::clock::Clock::system());
        Service { directory, router: router(Arc::clone(&app)), app, store, full_key }
    }

    /// Another instance of the service over the same store and keys, in `environment`.
    pub fn in_environment(&self, environment: Environment) -> Arc<App> {
        app(&self.store, Arc::clone(&self.app.production_keys), environment, false, read_model::clock::Clock::system())
    }

    /// Another instance of the service that trusts `X-Forwarded-For`, as behind the compose load balancer.
    pub fn behind_a_proxy(&self) -> Arc<App> {
        app(
            &self.store,
            Arc::clone(&self.app.production_keys),
            Environment::Development,
            true,
            read_model::clock::Clock::system(),
        )
    }

    /// Another instance of the service whose calendar is `clock` (a manual one the test moves).
    pub fn with_clock(&self, clock: read_model::clock::Clock) -> Arc<App> {
        app(&self.store, Arc::clone(&self.app.production_keys), Environment::Development, false, clock)
    }

    pub async fn issue_key(&self, scopes: &[Scope], rate_limit: u32) -> String {
        let scopes = scopes.iter().copied().collect();
        self.app.production_keys.issue("Test Partner", scopes, rate_limit).await.expect("issue").0
    }

    pub fn sandbox_key(&self) -> String {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
        self.app.sandbox_keys.issue(now).expect("issue").key
    }

    pub async fn send(&self, request: Request<Body>) -> Response {
        self.router.clone().oneshot(request).await.expect("infallible")
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> (StatusCode, serde_json::Value, Response) {
        let mut request = Request::get(format!("{BASE}{path}"));
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        let response = self.send(request.body(Body::empty()).expect("request")).await;
        split(response).await
    }

    /// Projects the same sandbox and production events into a new model
    /// version, as `projector rebuild` does, and activates it.
    pub async fn rebuild_into(&self, version: ModelVersion) {
        self.store.create_model_version(version).await.expect("create");
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
        let letters = self.directory.path().join(format!("rebuild-{version}"));
        std::fs::create_dir_all(&letters).expect("dead letters");
        project_into(&self.store, version, &workspace.join("schemas/fixtures/sandbox"), &letters.join("sandbox.jsonl"))
            .await;
        project_into(&self.store, version, &self.directory.path().join("events"), &letters.join("production.jsonl"))
            .await;
        self.store.activate_model_version(version).await.expect("activate");
    }

    /// Every notification of the key's audience, oldest first, read in
    /// pages of `limit` from the start of the feed.
    pub async fn every_notification(&self, key: &str, limit: usize) -> Vec<serde_json::Value> {
        let mut items = Vec::new();
        let mut since = String::new();
        loop {
            let (status, page, _) = self.get(&format!("/notifications?limit={limit}{since}"), Some(key)).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            let batch = page["items"].as_array().expect("items").clone();
            let next = page["next"].as_str().expect("next").to_owned();
            assert!(next.starts_with("n1."), "{next}");
            items.extend(batch.iter().cloned());
            if page["caughtUp"] == true {
                assert!(batch.len() < limit);
                return items;
            }
            since = format!("&since={next}");
        }
    }

    /// A production work id that exists in the store.
    pub fn production_work(&self) -> &'static str {
        "LCC-0000000001"
    }
}

/// Status, JSON body (null when not JSON), and the response head.
pub async fn split(response: Response) -> (StatusCode, serde_json::Value, Response) {
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.expect("body").to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    (parts.status, json, Response::from_parts(parts, Body::from(bytes)))
}

pub async fn text(response: Response) -> String {
    String::from_utf8(response.into_body().collect().await.expect("body").to_bytes().to_vec()).expect("utf-8")
}
