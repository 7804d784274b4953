//! The fuzzed service: the real router over the sandbox fixtures and a
//! small generated registry, projected by the real projector into a SQLite
//! store in a temporary directory, configured as `query-api serve` is
//! (from its own flags), with a snapshot of each audience and keys of
//! every kind. One instance per process, driven with
//! `tower::ServiceExt::oneshot` on a runtime of its own.
//!
//! It also owns what an answer must be, whatever the request: never a 5xx,
//! a 4xx is a problem document that names its status, and every answer
//! carries `nosniff`.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, header};
use clap::Parser;
use http_body_util::BodyExt;
use projector::contract::Contract;
use projector::dead_letter::DeadLetterFile;
use projector::generate::{GenerateOptions, generate};
use projector::runner::{NoObserver, RunOptions, run};
use projector::source::file::FileSource;
use query_api::app::BASE_PATH;
use query_api::config::ServeConfig;
use query_api::keys::{Scope, Scopes};
use query_api::routes::{PublicRouter, router};
use read_model::{Audience, ModelVersions, SqliteStore, Store};
use tower::ServiceExt;

use crate::repository;

/// The flags the fuzzed instance is started with: limits too high to be
/// reached, so that requests reach the code behind the limiter.
const FLAGS: [&str; 5] =
    ["query-api", "--default-rate-limit", "4000000000", "--sandbox-key-secret", "the fuzzed instance's secret"];

#[derive(Debug, Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

/// An answer as a client receives it.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The running instance.
#[derive(Debug)]
pub struct FuzzedService {
    runtime: tokio::runtime::Runtime,
    router: PublicRouter,
    /// A production key with every scope.
    pub production_key: String,
    /// A production key with `rights:read` only.
    pub narrow_key: String,
    pub sandbox_key: String,
    /// Every cursor the change feeds of both audiences hand out.
    pub feed_cursors: Vec<String>,
    /// Every cursor the notification feeds of both audiences hand out.
    pub notification_cursors: Vec<String>,
    /// The id of each audience's snapshot.
    pub snapshot_ids: Vec<String>,
    _directory: tempfile::TempDir,
}

/// The process's instance, started on first use.
pub fn service() -> &'static FuzzedService {
    static SERVICE: OnceLock<FuzzedService> = OnceLock::new();
    SERVICE.get_or_init(|| FuzzedService::start().expect("the fuzzed service starts"))
}

impl FuzzedService {
    fn start() -> anyhow::Result<FuzzedService> {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().context("failed to start a runtime")?;
        let directory = tempfile::tempdir().context("failed to make a data directory")?;
        let (router, keys, snapshot_ids) = runtime.block_on(serve(directory.path()))?;
        let [production_key, narrow_key, sandbox_key] = keys;
        let mut service = FuzzedService {
            runtime,
            router,
            production_key,
            narrow_key,
            sandbox_key,
            feed_cursors: Vec::new(),
            notification_cursors: Vec::new(),
            snapshot_ids,
            _directory: directory,
        };
        service.feed_cursors = service.cursors("/bulk/changes?limit=1000")?;
        service.notification_cursors = service.cursors("/notifications?limit=1000")?;
        Ok(service)
    }

    /// The key a fuzzed byte chooses: none, one of the three, or one that is not a key.
    pub fn key(&self, choice: u8) -> Option<&str> {
        match choice % 5 {
            0 => None,
            1 => Some(&self.production_key),
            2 => Some(&self.sandbox_key),
            3 => Some(&self.narrow_key),
            _ => Some("lcc_live_not-a-key"),
        }
    }

    /// Sends `request` through the router and reads the whole answer.
    pub fn send(&self, request: Request<Body>) -> Answer {
        self.runtime.block_on(async {
            let response = self.router.clone().oneshot(request).await.expect("the router is infallible");
            let (parts, body) = response.into_parts();
            let body = body.collect().await.expect("the body can be read").to_bytes();
            Answer { status: parts.status, headers: parts.headers, body }
        })
    }

    /// `GET` of `path_and_query` under the base path, with `key`; the answer
    /// is checked to keep the contract.
    pub fn get(&self, path_and_query: &str, key: &str) -> Answer {
        let request = Request::get(format!("{BASE_PATH}{path_and_query}"))
            .header("x-api-key", key)
            .body(Body::empty())
            .expect("a request");
        let answer = self.send(request);
        assert_keeps_the_contract(&format!("GET {path_and_query}"), &answer);
        answer
    }

    fn get_json(&self, path: &str, key: &str) -> anyhow::Result<serde_json::Value> {
        let answer = self.get(path, key);
        anyhow::ensure!(answer.status == StatusCode::OK, "GET {path} answered {}", answer.status);
        serde_json::from_slice(&answer.body).context("the answer is not JSON")
    }

    /// Every cursor a page of `feed` hands out to either audience: its items' and its `next`.
    fn cursors(&self, feed: &str) -> anyhow::Result<Vec<String>> {
        let mut cursors = Vec::new();
        for key in [&self.production_key, &self.sandbox_key] {
            let page = self.get_json(feed, key)?;
            let items = page["items"].as_array().context("a page of a feed")?;
            cursors.extend(items.iter().filter_map(|item| item["cursor"].as_str().map(str::to_owned)));
            cursors.extend(page["next"].as_str().map(str::to_owned));
        }
        Ok(cursors)
    }
}

/// Projects the fixtures, builds the app from the flags, cuts a snapshot of
/// each audience and issues keys: the router, the keys (production, narrow,
/// sandbox) and the snapshot ids.
async fn serve(directory: &Path) -> anyhow::Result<(PublicRouter, [String; 3], Vec<String>)> {
    let data = directory.join("data");
    let store = SqliteStore::open(&data).context("failed to open the store")?;
    store.migrate().await?;
    let version = read_model::active_or_first_version(&store).await?;
    let generated = directory.join("generated");
    generate(&GenerateOptions { works: 40, seed: 11, events_per_segment: 1_000, sandbox: false }, &generated)?;
    for (events, letters) in [(repository::sandbox_events(), "sandbox.jsonl"), (generated, "production.jsonl")] {
        let options = RunOptions {
            batch_size: 5_000,
            linger: Duration::from_millis(10),
            exit_when_caught_up: true,
            ..RunOptions::default()
        };
        let source = FileSource::new(&events, Arc::new(Contract::load()?));
        let letters = DeadLetterFile::open(&directory.join(letters))?;
        let store: Arc<dyn Store> = Arc::new(store.clone());
        let feed = source.start(options.batch_size, Duration::from_millis(10))?;
        run(store, version, feed, Box::new(letters), Arc::new(NoObserver), options, std::future::pending()).await?;
    }
    let flags = Flags::try_parse_from(FLAGS)?;
    let app = query_api::app::App::from_config(&flags.serve, Arc::new(store.clone()), &data)?;
    let mut snapshot_ids = Vec::new();
    for audience in [Audience::Sandbox, Audience::Production] {
        let manifest = query_api::snapshots::cut_snapshot(&store, &app.snapshots, &app.signer, audience, 10).await?;
        snapshot_ids.push(manifest.snapshot_id);
    }
    let (production_key, _) = app.production_keys.issue("Fuzzing Ltd", Scopes::all(), u32::MAX).await?;
    let (narrow_key, _) =
        app.production_keys.issue("Narrow Ltd", [Scope::RightsRead].into_iter().collect(), u32::MAX).await?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
    let sandbox_key = app.sandbox_keys.issue(now)?.key;
    Ok((router(app), [production_key, narrow_key, sandbox_key], snapshot_ids))
}

/// Each of `texts` after each key choice byte of `key_choices` (see
/// [`FuzzedService::key`]): the seeds of the targets that send requests.
pub fn after_key_choices(texts: impl IntoIterator<Item = String>, key_choices: &[u8]) -> Vec<Vec<u8>> {
    texts
        .into_iter()
        .flat_map(|text| key_choices.iter().map(move |choice| [&[*choice][..], text.as_bytes()].concat()))
        .collect()
}

/// The code of a problem document, if the answer is one.
pub fn problem_code(answer: &Answer) -> Option<String> {
    let problem: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    problem["code"].as_str().map(str::to_owned)
}

/// `text` as one value of a query string.
pub fn query_value(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// What every answer must be: never a server error; a client error is an
/// RFC 9457 problem document whose `status` is the answer's and whose
/// `code` says which; a JSON answer parses; a `HEAD` has no body; and
/// every answer carries `X-Content-Type-Options: nosniff`.
pub fn assert_keeps_the_contract(request: &str, answer: &Answer) {
    let context = || format!("{request} answered {}: {}", answer.status, String::from_utf8_lossy(&answer.body));
    assert!(!answer.status.is_server_error(), "{}", context());
    assert_eq!(
        answer.headers.get("x-content-type-options").map(|value| value.as_bytes()),
        Some(&b"nosniff"[..]),
        "{}",
        context()
    );
    if request.starts_with("HEAD ") || answer.headers.contains_key(header::CONTENT_ENCODING) {
        assert!(!request.starts_with("HEAD ") || answer.body.is_empty(), "{}", context());
        return;
    }
    let content_type = answer.headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    if answer.status.is_client_error() {
        assert_eq!(content_type, "application/problem+json", "{}", context());
        let problem: serde_json::Value = serde_json::from_slice(&answer.body).expect("a problem is JSON");
        assert_eq!(problem["status"], answer.status.as_u16(), "{}", context());
        assert!(problem["code"].as_str().is_some_and(|code| !code.is_empty()), "{}", context());
        assert!(problem["detail"].as_str().is_some_and(|detail| !detail.is_empty()), "{}", context());
    } else if content_type.starts_with("application/json") || content_type.ends_with("+json") {
        assert!(serde_json::from_slice::<serde_json::Value>(&answer.body).is_ok(), "{}", context());
    }
}
