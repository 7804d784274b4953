//! The `query-api` command: serve the public API, manage production keys
//! and signing keys, cut a catalogue snapshot, or verify a signed document.

use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use query_api::config::Environment;
use query_api::config::{ServeConfig, SigningKeysArguments};
use query_api::keys::Scopes;
use query_api::keys::notification_filter::NotificationFilter;
use query_api::keys::production::ProductionKeys;
use query_api::signing::{KeySet, Keyring, keyring_kept_in, verify_document};
use query_api::snapshots::{DEFAULT_ROWS_PER_FILE, SnapshotLibrary, cut_snapshot, run_snapshot_schedule};
use read_model::Audience;
use read_model::calendar::Timestamp;
use read_model::store_arguments::StoreArguments;

#[derive(Debug, Parser)]
#[command(name = "query-api", version, about = "The public, read-only rights data API.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the public API.
    Serve(Box<ServeArguments>),
    /// Manage production API keys, kept in the store (`--store`, `--data-dir`, `--scylla-*`).
    Keys {
        #[command(subcommand)]
        command: KeyCommand,
        #[command(flatten)]
        store: Box<StoreArguments>,
    },
    /// Manage webhook subscriptions, kept in the store (`--store`, `--data-dir`, `--scylla-*`).
    Webhooks {
        #[command(subcommand)]
        command: WebhookCommand,
        #[command(flatten)]
        store: Box<StoreArguments>,
    },
    /// Cut a snapshot of the catalogue now, into the directory the API
    /// serves snapshots from, and keep the newest few.
    Snapshot(Box<SnapshotArguments>),
    /// Manage the keys that sign evidence packages and snapshot manifests,
    /// kept in a keyring file readable by its owner only.
    SigningKeys {
        #[command(subcommand)]
        command: SigningKeyCommand,
        /// The keyring file (`DATA_DIR/signing-keys.json` by default).
        #[arg(long, env = "LCC_SIGNING_KEYS_FILE", global = true)]
        signing_keys_file: Option<std::path::PathBuf>,
        /// The data directory the default keyring file is in.
        #[arg(long, env = "LCC_DATA_DIR", default_value = "data", global = true)]
        data_dir: std::path::PathBuf,
    },
    /// Check saved signed documents.
    Evidence {
        #[command(subcommand)]
        command: EvidenceCommand,
    },
}

#[derive(Debug, Subcommand)]
enum SigningKeyCommand {
    /// Create the keyring, with one active key per audience, unless it exists.
    Init,
    /// Add a key; it is published at once and signs once activated.
    Generate {
        #[arg(long, value_parser = ["production", "sandbox"])]
        audience: String,
        /// Make it the signing key now. Without it, activate it later, once
        /// caches of the key set (5 minutes) hold it.
        #[arg(long)]
        activate: bool,
    },
    /// Make a key the signing key of its audience; the previous one stays published.
    Activate { kid: String },
    /// Retire a key: it never signs again, its private half is erased, and
    /// it stays published with the date so that what it signed still verifies.
    Retire { kid: String },
    /// List the keys (never their private halves).
    List,
}

#[derive(Debug, Subcommand)]
enum EvidenceCommand {
    /// Check a saved evidence package or snapshot manifest against a key
    /// set, and say plainly why it fails when it does. Exits 1 when it fails.
    Verify {
        /// The saved document (JSON).
        file: std::path::PathBuf,
        /// The key set, saved from `/keys` (`/keys?audience=sandbox` for sandbox documents).
        #[arg(long, required_unless_present = "keys_url", conflicts_with = "keys_url")]
        keys: Option<std::path::PathBuf>,
        /// The key set's address, for example
        /// `https://api.example.org/api/v1/public/v1/keys`. Never take it from the document itself.
        #[arg(long)]
        keys_url: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
struct SnapshotArguments {
    #[command(flatten)]
    store: StoreArguments,
    /// Whose works: `production`, `sandbox`, or `both`.
    #[arg(long, value_parser = ["production", "sandbox", "both"], default_value = "both")]
    audience: String,
    /// Directory of the snapshots (`DATA_DIR/snapshots` by default).
    #[arg(long, env = "LCC_SNAPSHOT_DIR")]
    snapshot_dir: Option<std::path::PathBuf>,
    /// Snapshots kept per audience.
    #[arg(long, env = "LCC_SNAPSHOTS_KEPT", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    snapshots_kept: u64,
    /// The most rows a file holds.
    #[arg(long, env = "LCC_SNAPSHOT_ROWS_PER_FILE", default_value_t = DEFAULT_ROWS_PER_FILE, value_parser = clap::value_parser!(u64).range(1..))]
    rows_per_file: u64,
    /// In production a missing signing keyring is an error; elsewhere it is
    /// created, as `serve` creates it.
    #[arg(long, env = "LCC_ENVIRONMENT", value_enum, default_value = "development")]
    environment: Environment,
    #[command(flatten)]
    signing_keys: SigningKeysArguments,
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Issue a key; it is printed once and stored only as a hash.
    Issue {
        #[arg(long)]
        partner: String,
        /// Comma-separated scopes, for example `rights:read,bulk:read`.
        #[arg(long)]
        scopes: String,
        /// Requests per minute.
        #[arg(long, default_value_t = 60)]
        rate_limit: u32,
        /// Limit the key's notifications to these works (comma-separated lccIds).
        #[arg(long, conflicts_with = "notify_parties")]
        notify_works: Option<String>,
        /// Limit the key's notifications to the works and licenses naming
        /// these parties (comma-separated IPI name numbers).
        #[arg(long)]
        notify_parties: Option<String>,
    },
    /// List the keys (ids, partners, scopes, limits; never the keys).
    List,
    /// Revoke a key by its id.
    Revoke { key_id: String },
}

#[derive(Debug, Subcommand)]
enum WebhookCommand {
    /// Subscribe a production key's notifications (with its filter) to an
    /// endpoint; deliveries start once the endpoint answers the challenge,
    /// with what changed from now on.
    Add {
        /// The key's id (`live_…`, from `keys list`).
        #[arg(long)]
        key: String,
        /// Where deliveries are posted: `https://` in production, on a public address.
        #[arg(long)]
        endpoint: String,
        #[arg(long, env = "LCC_ENVIRONMENT", value_enum, default_value = "development")]
        environment: Environment,
        #[command(flatten)]
        delivery: query_api::config::WebhookArguments,
    },
    /// List the subscriptions with where their deliveries stand.
    List,
    /// Stop deliveries until resumed; nothing is lost meanwhile.
    Pause { id: String },
    /// Resume deliveries from where they stopped, also after the deliverer
    /// paused them (a 410 answer, or the retry schedule spent).
    Resume { id: String },
    /// Remove a subscription and its delivery state.
    Remove { id: String },
}

#[derive(Debug, clap::Args)]
struct ServeArguments {
    #[command(flatten)]
    store: StoreArguments,
    #[command(flatten)]
    config: ServeConfig,
}

/// Each request allocates its document and response; the same allocator as the
/// projector's keeps one allocator to reason about across the service.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

fn main() -> anyhow::Result<()> {
    telemetry::logging::init();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("failed to start the runtime")?;
    match Cli::parse().command {
        Command::Keys { command, store } => runtime.block_on(keys(command, &store)),
        Command::Webhooks { command, store } => runtime.block_on(webhooks(command, &store)),
        Command::Serve(arguments) => runtime.block_on(serve(*arguments)),
        Command::Snapshot(arguments) => runtime.block_on(snapshot(*arguments)),
        Command::SigningKeys { command, signing_keys_file, data_dir } => {
            signing_keys(command, &signing_keys_file.unwrap_or_else(|| data_dir.join("signing-keys.json")))
        }
        Command::Evidence { command: EvidenceCommand::Verify { file, keys, keys_url } } => {
            verify(&file, keys.as_deref(), keys_url.as_deref())
        }
    }
}

fn signing_keys(command: SigningKeyCommand, file: &std::path::Path) -> anyhow::Result<()> {
    let now = Timestamp::now();
    let read = || Keyring::read(file).with_context(|| format!("failed to read {}", file.display()));
    let (keyring, changed) = match command {
        SigningKeyCommand::Init => {
            (keyring_kept_in(file, now).with_context(|| format!("failed to create {}", file.display()))?, None)
        }
        SigningKeyCommand::List => (read()?, None),
        SigningKeyCommand::Generate { audience, activate } => {
            let mut keyring = read()?;
            let audience = if audience == "sandbox" { Audience::Sandbox } else { Audience::Production };
            let seed = query_api::keys::random_bytes::<32>().context("failed to read random bytes")?;
            let kid = keyring.generate(audience, seed, now).kid.clone();
            if activate {
                keyring.activate(&kid)?;
            }
            (keyring, Some(kid))
        }
        SigningKeyCommand::Activate { kid } => {
            let mut keyring = read()?;
            keyring.activate(&kid)?;
            (keyring, Some(kid))
        }
        SigningKeyCommand::Retire { kid } => {
            let mut keyring = read()?;
            keyring.retire(&kid, now)?;
            (keyring, Some(kid))
        }
    };
    if let Some(kid) = changed {
        keyring.write(file).with_context(|| format!("failed to write {}", file.display()))?;
        eprintln!("{kid}: done; running replicas read the keyring again within seconds");
    }
    for key in &keyring.keys {
        let retired = key.retired_at.map(|at| format!("\tretired {at}")).unwrap_or_default();
        println!("{}\t{}\t{}\tcreated {}{retired}", key.kid, key.audience.code(), key.status.name(), key.created_at);
    }
    Ok(())
}

fn verify(file: &std::path::Path, keys: Option<&std::path::Path>, keys_url: Option<&str>) -> anyhow::Result<()> {
    let document = std::fs::read(file).with_context(|| format!("failed to read {}", file.display()))?;
    let key_set_text = match (keys, keys_url) {
        (Some(path), _) => {
            std::fs::read_to_string(path).with_context(|| format!("failed to read {}", path.display()))?
        }
        (None, Some(url)) => ureq::get(url)
            .call()
            .and_then(|mut response| response.body_mut().read_to_string())
            .with_context(|| format!("failed to fetch the key set from {url}"))?,
        (None, None) => bail!("give the key set with --keys or --keys-url"),
    };
    let key_set: KeySet = serde_json::from_str(&key_set_text).context("the key set is not a JWK Set")?;
    match verify_document(&document, &key_set) {
        Ok(verified) => {
            let status = verified.status.map(|status| format!(" ({})", status.name())).unwrap_or_default();
            let dated = verified.dated.map(|at| format!(", dated {at}")).unwrap_or_default();
            println!("valid: {} is signed by key {}{status}{dated}", file.display(), verified.kid);
            Ok(())
        }
        Err(rejection) => {
            println!("invalid: {}: {rejection}", file.display());
            std::process::exit(1);
        }
    }
}

async fn snapshot(arguments: SnapshotArguments) -> anyhow::Result<()> {
    let store =
        arguments.store.open().await.with_context(|| format!("failed to open the {}", arguments.store.describe()))?;
    let directory = arguments.snapshot_dir.unwrap_or_else(|| arguments.store.data_dir.join("snapshots"));
    let library = SnapshotLibrary::new(directory);
    let audiences = match arguments.audience.as_str() {
        "production" => vec![Audience::Production],
        "sandbox" => vec![Audience::Sandbox],
        _ => vec![Audience::Production, Audience::Sandbox],
    };
    let creates_keyring = arguments.environment != Environment::Production;
    let signer = arguments.signing_keys.open(&arguments.store.data_dir, creates_keyring)?;
    for audience in audiences {
        let manifest = cut_snapshot(store.as_ref(), &library, &signer, audience, arguments.rows_per_file)
            .await
            .with_context(|| format!("failed to cut a {} snapshot", audience.code()))?;
        library.prune(audience, usize::try_from(arguments.snapshots_kept).unwrap_or(usize::MAX));
        println!("{} {} {} rows", audience.code(), manifest.snapshot_id, manifest.row_count);
    }
    Ok(())
}

async fn keys(command: KeyCommand, store_arguments: &StoreArguments) -> anyhow::Result<()> {
    let store =
        store_arguments.open().await.with_context(|| format!("failed to open the {}", store_arguments.describe()))?;
    let keys = ProductionKeys::start(store);
    match command {
        KeyCommand::Issue { partner, scopes, rate_limit, notify_works, notify_parties } => {
            let scopes = Scopes::parse_list(&scopes).map_err(anyhow::Error::msg)?;
            if scopes == Scopes::default() {
                bail!("give at least one scope");
            }
            if rate_limit == 0 {
                bail!("the rate limit must be at least 1 request per minute");
            }
            let filter = match (notify_works, notify_parties) {
                (Some(works), _) => Some(format!("works:{works}")),
                (None, Some(parties)) => Some(format!("parties:{parties}")),
                (None, None) => None,
            };
            let filter = filter.as_deref().map(NotificationFilter::parse).transpose().map_err(anyhow::Error::msg)?;
            let (key, record) = keys
                .issue_filtered(&partner, scopes, rate_limit, filter.as_ref())
                .await
                .context("failed to issue the key")?;
            println!("{key}");
            let notifications = filter.map(|filter| format!(", notifications of {filter}")).unwrap_or_default();
            eprintln!(
                "issued {} for {} with scopes {} at {rate_limit}/min{notifications}; the key is shown only now",
                record.key_id,
                record.partner,
                scopes.to_list()
            );
        }
        KeyCommand::List => {
            for key in keys.list().await.context("failed to list keys")? {
                let state = if key.revoked { "revoked" } else { "active" };
                let filter =
                    key.notification_filter.map(|filter| format!("\tnotifications of {filter}")).unwrap_or_default();
                println!(
                    "{}\t{}\t{}\t{}/min\t{state}{filter}",
                    key.key_id,
                    key.partner,
                    key.scopes.to_list(),
                    key.rate_limit
                );
            }
        }
        KeyCommand::Revoke { key_id } => {
            if !keys.revoke(&key_id).await.context("failed to revoke the key")? {
                bail!("no key {key_id}");
            }
            println!("revoked {key_id}");
        }
    }
    Ok(())
}

async fn webhooks(command: WebhookCommand, store_arguments: &StoreArguments) -> anyhow::Result<()> {
    let store =
        store_arguments.open().await.with_context(|| format!("failed to open the {}", store_arguments.describe()))?;
    let now = Timestamp::now().0;
    match command {
        WebhookCommand::Add { key, endpoint, environment, delivery } => {
            let keys = ProductionKeys::start(store.clone());
            let stored = keys.list().await.context("failed to list keys")?;
            let Some(key) = stored.iter().find(|stored| stored.key_id == key) else { bail!("no key {key}") };
            if key.revoked {
                bail!("the key {} is revoked", key.key_id);
            }
            let resolution = delivery.resolution(environment)?;
            let endpoint =
                query_api::webhooks::check_endpoint(&endpoint, environment == Environment::Production, &resolution)
                    .map_err(anyhow::Error::msg)?;
            let subscription = read_model::webhooks::WebhookSubscription {
                id: query_api::webhooks::new_id().context("failed to read random bytes")?,
                key_id: key.key_id.clone(),
                endpoint,
                created_at_ms: now,
                enabled: true,
                resumed_at_ms: now,
            };
            store.insert_webhook(&subscription).await.context("failed to add the webhook")?;
            println!("{}", subscription.id);
            eprintln!(
                "added {} for {} ({}) to {}; it is sent a challenge first",
                subscription.id, key.partner, key.key_id, subscription.endpoint
            );
        }
        WebhookCommand::List => {
            for record in store.webhooks().await.context("failed to list webhooks")? {
                let subscription = &record.subscription;
                let state = query_api::webhooks::state::DeliveryState::parse(&subscription.id, &record.state);
                let status = query_api::webhooks::status_of(subscription, &state);
                let reason = state.paused.as_ref().map(|pause| format!("\t{}", pause.reason)).unwrap_or_default();
                println!(
                    "{}\t{}\t{}\t{}\t{} delivered{reason}",
                    subscription.id,
                    subscription.key_id,
                    subscription.endpoint,
                    status.name(),
                    state.delivered
                );
            }
        }
        WebhookCommand::Pause { id } => {
            let Some(record) = store.webhook(&id).await.context("failed to read the webhook")? else {
                bail!("no webhook {id}")
            };
            let resumed_at_ms = record.subscription.resumed_at_ms;
            if !store.set_webhook_enabled(&id, false, resumed_at_ms).await.context("failed to pause the webhook")? {
                bail!("no webhook {id}");
            }
            println!("paused {id}");
        }
        WebhookCommand::Resume { id } => {
            if !store.set_webhook_enabled(&id, true, now).await.context("failed to resume the webhook")? {
                bail!("no webhook {id}");
            }
            println!("resumed {id}");
        }
        WebhookCommand::Remove { id } => {
            if !store.remove_webhook(&id).await.context("failed to remove the webhook")? {
                bail!("no webhook {id}");
            }
            println!("removed {id}");
        }
    }
    Ok(())
}

async fn serve(arguments: ServeArguments) -> anyhow::Result<()> {
    // The API never migrates: the projector owns the schema. Until it exists, reads answer 503.
    let store = arguments
        .store
        .open_waiting()
        .await
        .with_context(|| format!("failed to open the {}", arguments.store.describe()))?;
    tracing::info!(store = %arguments.store.describe(), "reading the read model");
    let app = query_api::app::App::from_config(&arguments.config, store, &arguments.store.data_dir)?;
    let listener = tokio::net::TcpListener::bind(&arguments.config.listen)
        .await
        .with_context(|| format!("failed to listen on {}", arguments.config.listen))?;
    let admin = tokio::net::TcpListener::bind(&arguments.config.admin_listen)
        .await
        .with_context(|| format!("failed to listen on {}", arguments.config.admin_listen))?;
    tracing::info!(address = %listener.local_addr()?, admin = %admin.local_addr()?, "serving the public API");
    telemetry::listening::announce(&[("public", listener.local_addr()?), ("admin", admin.local_addr()?)]);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let wait_for_stop = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    // The admin listener outlives the public one, so that `/readyz` answers
    // false while requests in flight finish.
    let (stop_admin, admin_stopped) = tokio::sync::oneshot::channel::<()>();
    let admin_server = tokio::spawn(query_api::server::admin::run(admin, Arc::clone(&app), async move {
        let _ = admin_stopped.await;
    }));
    let snapshots = arguments.config.snapshot_schedule(&arguments.store.data_dir, &app.signer).map(|schedule| {
        tokio::spawn(run_snapshot_schedule(Arc::clone(&app.store), schedule, wait_for_stop(stopped.clone())))
    });
    let deliverer = if arguments.config.webhooks.deliver_webhooks {
        let settings = arguments.config.webhooks.delivery_settings(arguments.config.environment)?;
        Some(tokio::spawn(query_api::webhooks::deliverer::run(
            Arc::clone(&app),
            settings,
            wait_for_stop(stopped.clone()),
        )))
    } else {
        None
    };
    let public_server = tokio::spawn(query_api::server::run(listener, app, wait_for_stop(stopped)));
    telemetry::shutdown::signal().await;
    let _ = stop.send(true);
    if let Some(deliverer) = deliverer {
        deliverer.await.context("the webhook deliverer failed")?;
    }
    if let Some(snapshots) = snapshots {
        snapshots.await.context("the snapshot task failed")?;
    }
    public_server.await.context("the server task failed")?.context("the server failed")?;
    let _ = stop_admin.send(());
    admin_server.await.context("the admin task failed")?.context("the admin listener failed")
}
