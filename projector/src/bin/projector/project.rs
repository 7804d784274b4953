//! `projector run` and `rebuild`: the source and its dead-letter sink chosen
//! from `--source`, the admin listener, and the loop until caught up (when
//! asked) or a signal; then the run's totals as one JSON line.

use std::sync::Arc;

use anyhow::Context;
use projector::admin::{AdminState, admin_router};
use projector::contract::Contract;
use projector::metrics::ProjectorMetrics;
use projector::runner::{BatchObserver, Observers, RunTotals, run};
use projector::source_and_sink::{SourceAndSink, start_source};
use read_model::store_arguments::StoreArguments;
use read_model::{ModelVersion, Store};
use tokio::sync::watch;

use crate::arguments::RunTuning;

/// Runs the projection from `source` into `version`, with the admin listener, until
/// caught up (when asked) or a signal.
pub(crate) async fn project(
    store: Arc<dyn Store>,
    store_arguments: &StoreArguments,
    version: ModelVersion,
    source: &str,
    tuning: &RunTuning,
    rebuild: bool,
) -> anyhow::Result<()> {
    store.check_writer_settings().await.context("the projector cannot write to this store")?;
    let contract = Arc::new(Contract::load()?);
    let options = tuning.run_options();
    let metrics = Arc::new(ProjectorMetrics::new(version, rebuild).context("failed to register metrics")?);
    let SourceAndSink { feed, dead_letters, kafka } =
        start_source(source, contract, &tuning.source_options(&store_arguments.data_dir))?;
    tracing::info!(source = %feed.source_id, %version, rebuild, "projecting");

    let mut observers: Vec<Arc<dyn BatchObserver>> = vec![Arc::clone(&metrics) as Arc<dyn BatchObserver>];
    if let Some(shared) = &kafka {
        observers.push(Arc::clone(shared) as Arc<dyn BatchObserver>);
    }
    let admin = AdminState { metrics, kafka, store: Arc::clone(&store) };
    let listener = tokio::net::TcpListener::bind(tuning.admin_listen)
        .await
        .with_context(|| format!("failed to listen on {}", tuning.admin_listen))?;
    tracing::info!(admin = %listener.local_addr()?, "admin listener");
    telemetry::listening::announce(&[("admin", listener.local_addr()?)]);
    let (stop_admin, admin_stopped) = watch::channel(false);
    let admin_server = tokio::spawn(async move {
        let mut stopped = admin_stopped;
        axum::serve(listener, admin_router(admin))
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
    });

    let totals =
        run(store, version, feed, dead_letters, Arc::new(Observers(observers)), options, telemetry::shutdown::signal())
            .await;
    let _ = stop_admin.send(true);
    let _ = admin_server.await;
    print_totals(totals?);
    Ok(())
}

fn print_totals(totals: RunTotals) {
    println!(
        "{}",
        serde_json::json!({
            "events": totals.events,
            "applied": totals.applied,
            "skippedAsDuplicates": totals.skipped_as_duplicates,
            "parked": totals.parked,
            "batches": totals.batches,
            "writeConflicts": totals.write_conflicts,
        })
    );
}
