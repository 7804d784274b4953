//! Webhook delivery figures (`scripts/bench-webhooks.sh`): the real
//! deliverer over a real SQLite store, posting signed messages over
//! loopback HTTP to a receiver in the same process (so the two share the
//! machine's cores).
//!
//! 1. Throughput: one subscription catches up with the whole feed of a
//!    generated registry of WORKS works, in messages of up to 100: the
//!    notifications delivered per second, and the messages.
//! 2. Fan-out: SUBSCRIPTIONS subscriptions (their challenges answered
//!    first), then one projector batch of one segment's events: the time
//!    from its commit until every subscription has acknowledged its
//!    notifications.
//!
//!     webhook_delivery WORKS SUBSCRIPTIONS
//!
//! It prints one JSON line. Nothing asserts on the figures.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use dashmap::DashMap;
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
use query_api::webhooks::addresses::{PinnedNames, Resolution};
use query_api::webhooks::deliverer::run as deliver;
use query_api::webhooks::sending::SenderSettings;
use query_api::webhooks::settings::DeliverySettings;
use read_model::notifications::NotificationQuery;
use read_model::webhooks::WebhookSubscription;
use read_model::{Audience, DocumentReads, ModelVersion, ModelVersions, SqliteStore, Store, Webhooks};

/// What the receiver counts per subscription: notifications acknowledged.
#[derive(Debug, Default)]
struct Counts {
    notifications: DashMap<String, u64>,
    messages: AtomicU64,
}

async fn receive(State(counts): State<Arc<Counts>>, body: Bytes) -> Response {
    let message: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    if message["type"] == "webhook.challenge" {
        return axum::Json(serde_json::json!({"challenge": message["challenge"]})).into_response();
    }
    let subscription = message["subscription"].as_str().unwrap_or_default().to_owned();
    let count = message["notifications"].as_array().map_or(0, Vec::len) as u64;
    *counts.notifications.entry(subscription).or_default() += count;
    counts.messages.fetch_add(1, Ordering::Relaxed);
    axum::http::StatusCode::NO_CONTENT.into_response()
}

async fn project(store: &SqliteStore, events: &Path, letters: &Path) -> anyhow::Result<()> {
    let source = FileSource::new(events, Arc::new(Contract::load().context("failed to load the contract")?));
    let options = RunOptions { exit_when_caught_up: true, ..RunOptions::default() };
    let feed = source.start(options.batch_size, Duration::from_millis(10)).context("failed to read the events")?;
    let letters = DeadLetterFile::open(letters).context("failed to open the dead letters")?;
    let store: Arc<dyn Store> = Arc::new(store.clone());
    run(store, ModelVersion(1), feed, Box::new(letters), Arc::new(NoObserver), options, std::future::pending())
        .await
        .context("failed to project")?;
    Ok(())
}

fn app(store: &SqliteStore, keys: Arc<ProductionKeys>) -> anyhow::Result<Arc<App>> {
    let keyring = query_api::signing::Keyring::first(read_model::calendar::Timestamp::now(), [[1; 32], [2; 32]]);
    Ok(Arc::new(App {
        store: Arc::new(store.clone()),
        production_keys: keys,
        sandbox_keys: SandboxKeys::new(b"bench", 3_600, 60),
        rate_limits: RateLimits::new(60),
        metrics: Arc::new(query_api::metrics::Metrics::new().context("failed to register metrics")?),
        settings: Settings {
            public_base_url: "http://127.0.0.1".into(),
            environment: Environment::Development,
            default_rate_limit: 60,
            bulk_max_limit: 1_000,
            trust_x_forwarded_for: false,
            oai_admin_email: "registry@example.org".into(),
            connections: Default::default(),
        },
        snapshots: query_api::snapshots::SnapshotLibrary::new(store.directory().join("snapshots")),
        signer: query_api::signing::Signer::of(&keyring),
        draining: Default::default(),
        notification_streams: Default::default(),
        webhooks: Arc::new(store.clone()),
        clock: read_model::clock::Clock::system(),
    }))
}

fn settings() -> DeliverySettings {
    DeliverySettings {
        // The production default: a caught-up subscription looks once a second.
        poll: Duration::from_secs(1),
        lease: Duration::from_secs(30),
        batch: 100,
        sender: SenderSettings {
            timeout: Duration::from_secs(10),
            resolution: Resolution { pinned: PinnedNames::default(), refuse_private: false },
            https_only: false,
            roots: None,
        },
    }
}

/// The notifications of the production feed.
async fn feed_length(store: &SqliteStore) -> anyhow::Result<u64> {
    let mut total = 0_u64;
    let mut after = None;
    loop {
        let query = NotificationQuery { audience: Audience::Production, after: after.clone(), limit: 10_000 };
        let read_model::notifications::NotificationsRead::Page(page) = store.notifications(&query).await? else {
            anyhow::bail!("the feed is gone")
        };
        total += page.items.len() as u64;
        if page.items.len() < 10_000 {
            return Ok(total);
        }
        after = Some((page.model_version, page.next));
    }
}

/// Waits until `done` holds, checking every 5 ms.
async fn until(done: impl Fn() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let arguments: Vec<usize> = std::env::args().skip(1).map(|argument| argument.parse()).collect::<Result<_, _>>()?;
    let [works, subscriptions] = arguments[..] else { anyhow::bail!("usage: webhook_delivery WORKS SUBSCRIPTIONS") };
    let directory = tempfile::tempdir()?;
    let (generated, events) = (directory.path().join("generated"), directory.path().join("events"));
    generate(&GenerateOptions { works, seed: 50, events_per_segment: 100, sandbox: false }, &generated)?;
    // The last segment is held back: the change the fan-out delivers.
    let mut files: Vec<_> = std::fs::read_dir(&generated)?
        .map(|entry| entry.map(|entry| entry.path()))
        .filter(|path| path.as_ref().map_or(true, |path| path.extension().is_some_and(|extension| extension == "avro")))
        .collect::<Result<_, _>>()?;
    files.sort();
    let segment = |path: &std::path::PathBuf| {
        path.file_name().map(|name| name.to_string_lossy().split('-').next().unwrap_or_default().to_owned())
    };
    let last_segment = files.last().and_then(segment).context("no events")?;
    std::fs::create_dir_all(&events)?;
    let mut held_back = Vec::new();
    for file in &files {
        let name = file.file_name().context("a file")?.to_owned();
        if segment(file).as_ref() == Some(&last_segment) {
            held_back.push(file.clone());
        } else {
            std::fs::copy(file, events.join(&name))?;
        }
    }
    let store = SqliteStore::open(directory.path().join("data"))?;
    store.migrate().await?;
    store.create_model_version(ModelVersion(1)).await?;
    store.activate_model_version(ModelVersion(1)).await?;
    project(&store, &events, &directory.path().join("letters-1.jsonl")).await?;

    let keys = ProductionKeys::start(Arc::new(store.clone()));
    let scopes: Scopes = [Scope::NotificationsRead].into_iter().collect();
    let (_, key) = keys.issue("Bench", scopes, 1_000).await?;
    let app = app(&store, keys)?;
    let counts = Arc::new(Counts::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}/hooks", listener.local_addr()?);
    let router = axum::Router::new().route("/hooks", axum::routing::post(receive)).with_state(Arc::clone(&counts));
    tokio::spawn(async move { axum::serve(listener, router).await });

    // 1. One subscription from the oldest notification.
    let first =
        store.notifications(&NotificationQuery { audience: Audience::Production, after: None, limit: 1 }).await?;
    let oldest = match first {
        read_model::notifications::NotificationsRead::Page(page) => {
            page.items.first().map(|item| item.position.sequence)
        }
        read_model::notifications::NotificationsRead::Gone { .. } => None,
    }
    .context("no notification")?;
    let oldest_ms = read_model::change_feed::millisecond_of_sequence(oldest);
    let subscription = |id: String, created_at_ms: i64| WebhookSubscription {
        id,
        key_id: key.key_id.clone(),
        endpoint: endpoint.clone(),
        created_at_ms,
        enabled: true,
        resumed_at_ms: created_at_ms,
    };
    store.insert_webhook(&subscription("wh_throughput".into(), oldest_ms)).await?;
    let total = feed_length(&store).await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let deliverer = tokio::spawn(deliver(Arc::clone(&app), settings(), async move {
        let _ = stopped.await;
    }));
    until(|| counts.notifications.get("wh_throughput").is_some_and(|count| *count >= total)).await;
    let throughput = started.elapsed();
    let messages = counts.messages.load(Ordering::Relaxed);
    let _ = stop.send(());
    deliverer.await?;
    store.remove_webhook("wh_throughput").await?;

    // 2. Fan-out of one batch to many subscriptions.
    let now = read_model::calendar::Timestamp::now().0;
    for index in 0..subscriptions {
        store.insert_webhook(&subscription(format!("wh_fanout_{index:05}"), now)).await?;
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let challenged = Instant::now();
    let deliverer = tokio::spawn(deliver(Arc::clone(&app), settings(), async move {
        let _ = stopped.await;
    }));
    loop {
        let records = store.webhooks().await?;
        if records.iter().all(|record| record.state.contains("\"cursor\":\"n1.")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let challenges = challenged.elapsed();
    for file in &held_back {
        std::fs::copy(file, events.join(file.file_name().context("a file")?))?;
    }
    project(&store, &events, &directory.path().join("letters-2.jsonl")).await?;
    let committed = Instant::now();
    let per_subscription = feed_length(&store).await? - total;
    until(|| {
        let done = counts.notifications.iter().filter(|entry| entry.key().starts_with("wh_fanout_"));
        done.filter(|entry| *entry.value() == per_subscription).count() == subscriptions
    })
    .await;
    let fan_out = committed.elapsed();
    let _ = stop.send(());
    deliverer.await?;
    println!(
        "{}",
        serde_json::json!({
            "works": works,
            "notifications": total,
            "messages": messages,
            "seconds": throughput.as_secs_f64(),
            "notifications_per_second": total as f64 / throughput.as_secs_f64(),
            "messages_per_second": messages as f64 / throughput.as_secs_f64(),
            "subscriptions": subscriptions,
            "challenges_seconds": challenges.as_secs_f64(),
            "batch_notifications_per_subscription": per_subscription,
            "fan_out_seconds": fan_out.as_secs_f64(),
        })
    );
    Ok(())
}
