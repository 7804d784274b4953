//! `projector run` and `rebuild`: the source and its dead-letter sink chosen
//! from `--source`, the admin listener, and the loop until caught up (when
//! asked) or a signal; then the run's totals as one JSON line. A rebuild
//! also shows its progress on standard error.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::Context;
use projector::admin::{AdminState, admin_router};
use projector::contract::Contract;
use projector::metrics::ProjectorMetrics;
use projector::run_progress::{LOG_INTERVAL, RunProgress, TERMINAL_INTERVAL};
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
    // A sorted catch-up holds one file open for each run it merges.
    telemetry::open_files::raise_open_file_limit();
    let contract = Arc::new(Contract::load()?);
    let options = tuning.run_options(rebuild, &store_arguments.data_dir);
    let SourceAndSink { feed, dead_letters, kafka } =
        start_source(source, contract, &tuning.source_options(&store_arguments.data_dir))?;
    tracing::info!(source = %feed.source_id, %version, rebuild, "projecting");
    let progress = Arc::new(RunProgress::new(feed.backlog.clone()));
    let metrics = Arc::new(
        ProjectorMetrics::new(version, rebuild)
            .and_then(|metrics| metrics.with_progress(Arc::clone(&progress)))
            .context("failed to register metrics")?,
    );

    let mut observers: Vec<Arc<dyn BatchObserver>> =
        vec![Arc::clone(&metrics) as Arc<dyn BatchObserver>, Arc::clone(&progress) as Arc<dyn BatchObserver>];
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

    let shown = rebuild.then(|| tokio::spawn(show_progress(Arc::clone(&progress), version, stop_admin.subscribe())));
    let totals =
        run(store, version, feed, dead_letters, Arc::new(Observers(observers)), options, telemetry::shutdown::signal())
            .await;
    let _ = stop_admin.send(true);
    let _ = admin_server.await;
    if let Some(shown) = shown {
        let _ = shown.await;
    }
    print_totals(totals?);
    Ok(())
}

/// Shows a rebuild's progress until `finished`: on a terminal, a line on
/// standard error rewritten every [`TERMINAL_INTERVAL`]; otherwise a log
/// line every [`LOG_INTERVAL`]. Either way a last line says where it ended.
async fn show_progress(progress: Arc<RunProgress>, version: ModelVersion, mut finished: watch::Receiver<bool>) {
    let terminal = std::io::stderr().is_terminal();
    let mut ticks = tokio::time::interval(if terminal { TERMINAL_INTERVAL } else { LOG_INTERVAL });
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = finished.wait_for(|finished| *finished) => break,
        }
        let line = progress.report().line();
        if terminal {
            telemetry::status_line::show(&format!("rebuilding model version {version}: {line}"));
        } else {
            tracing::info!(%version, "rebuild progress: {line}");
        }
    }
    let line = progress.report().line();
    if terminal {
        telemetry::status_line::finish(&format!("rebuild into model version {version} ended: {line}"));
    } else {
        tracing::info!(%version, "rebuild ended: {line}");
    }
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
