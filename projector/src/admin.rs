//! The projector's admin listener (`/metrics`, `/healthz`, `/readyz`),
//! separate from any public port. Readiness: the store answers, and for a
//! Kafka source the broker is reachable and no partition is stalled.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use read_model::Store;

use crate::metrics::ProjectorMetrics;
use crate::source::kafka::consumer::ConsumerShared;

/// What the admin listener reads.
#[derive(Debug, Clone)]
pub struct AdminState {
    pub metrics: Arc<ProjectorMetrics>,
    pub kafka: Option<Arc<ConsumerShared>>,
    pub store: Arc<dyn Store>,
}

/// Why the projector is not ready, if it is not.
pub async fn readiness(state: &AdminState) -> Result<(), String> {
    state.store.ping().await.map_err(|error| error.to_string())?;
    if let Some(kafka) = &state.kafka {
        if !kafka.broker_reachable.load(Ordering::Relaxed) {
            return Err("the Kafka broker is not reachable".into());
        }
        let stalled: Vec<String> = kafka
            .board
            .report()
            .into_iter()
            .filter(|report| report.stalled)
            .map(|report| format!("{}/{}", report.topic, report.partition))
            .collect();
        if !stalled.is_empty() {
            return Err(format!("stalled partitions: {}", stalled.join(", ")));
        }
    }
    Ok(())
}

/// The admin listener's router (`/metrics`, `/healthz`, `/readyz`).
pub fn admin_router(state: AdminState) -> Router {
    let metrics_state = state.clone();
    telemetry::admin::router(
        move || metrics_state.metrics.render(metrics_state.kafka.as_deref()),
        move || {
            let state = state.clone();
            async move { readiness(&state).await }
        },
    )
}
