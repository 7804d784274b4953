//! The projector's Prometheus metrics, which its admin listener
//! (`crate::admin`) serves.
//!
//! Counters move as batches commit ([`BatchObserver`]); partition gauges
//! (lag, stalls), the broker's reachability and the run's progress (rate,
//! events and time left) are read from the consumer's shared state and the
//! [`RunProgress`] when scraped, so they are never older than the scrape.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus::{
    Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use read_model::ModelVersion;

use crate::run_progress::RunProgress;
use crate::runner::{BatchObserver, CommittedBatch};
use crate::source::kafka::consumer::ConsumerShared;

/// Every metric the projector exports.
#[derive(Debug)]
pub struct ProjectorMetrics {
    registry: Registry,
    events: IntCounterVec,
    batches: IntCounter,
    write_conflicts: IntCounter,
    batch_seconds: Histogram,
    rebalances: IntCounter,
    documents_awaiting_render: IntGauge,
    lag_messages: IntGaugeVec,
    lag_seconds: GaugeVec,
    stalled: IntGaugeVec,
    source_up: IntGauge,
    events_per_second: Gauge,
    /// Vectors without labels, so that a value not known is a series absent, not a false 0.
    events_left: GaugeVec,
    seconds_left: GaugeVec,
    progress: Option<Arc<RunProgress>>,
}

impl ProjectorMetrics {
    /// Metrics of a projector writing `version`; `rebuild` marks a rebuild run.
    pub fn new(version: ModelVersion, rebuild: bool) -> Result<ProjectorMetrics, prometheus::Error> {
        let registry = Registry::new();
        let events = IntCounterVec::new(
            Opts::new(
                "lcc_projector_events_total",
                "Events committed, by outcome: applied, skipped_duplicate, parked.",
            ),
            &["outcome"],
        )?;
        let batches = IntCounter::new("lcc_projector_batches_total", "Batches committed to the store.")?;
        let write_conflicts = IntCounter::new(
            "lcc_projector_write_conflicts_total",
            "Batch writes repeated because another projector sharing the store changed their inputs.",
        )?;
        let batch_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "lcc_projector_batch_duration_seconds",
                "From a batch's first event to its commit, checkpoints included.",
            )
            .buckets(vec![0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]),
        )?;
        let rebalances = IntCounter::new(
            "lcc_projector_rebalances_total",
            "Consumer-group rebalances (assignments and revocations).",
        )?;
        let documents_awaiting_render = IntGauge::new(
            "lcc_projector_documents_awaiting_render",
            "Documents whose rendering is deferred while the projector catches up.",
        )?;
        let partition = ["topic", "partition"];
        let lag_messages = IntGaugeVec::new(
            Opts::new(
                "lcc_projector_partition_lag_messages",
                "Messages on the broker not yet applied, per assigned partition.",
            ),
            &partition,
        )?;
        let lag_seconds = GaugeVec::new(
            Opts::new(
                "lcc_projector_partition_lag_seconds",
                "Now minus the recorded-at time of the last applied event, per assigned partition with pending messages (0 without).",
            ),
            &partition,
        )?;
        let stalled = IntGaugeVec::new(
            Opts::new(
                "lcc_projector_partition_stalled",
                "1 when a partition has lag but made no progress for the stall time.",
            ),
            &partition,
        )?;
        let source_up = IntGauge::new("lcc_projector_source_up", "1 when the event source (the broker) is reachable.")?;
        let events_per_second = Gauge::new(
            "lcc_projector_events_per_second",
            "Events committed per second over the last 20 seconds (since the start in a younger run).",
        )?;
        let events_left = GaugeVec::new(
            Opts::new(
                "lcc_projector_events_left",
                "Events the source holds that are not committed (absent while unknown).",
            ),
            &[],
        )?;
        let seconds_left = GaugeVec::new(
            Opts::new(
                "lcc_projector_estimated_seconds_left",
                "Events left at the current rate, in seconds (absent while unknown); deferred rendering comes after.",
            ),
            &[],
        )?;
        let model_version = IntGauge::new("lcc_projector_model_version", "The model version this projector writes.")?;
        let rebuilding =
            IntGauge::new("lcc_projector_rebuild", "1 when this projector is rebuilding a model version.")?;
        let build = IntGaugeVec::new(Opts::new("lcc_projector_build_info", "The running build."), &["version"])?;
        model_version.set(i64::from(version.0));
        rebuilding.set(i64::from(rebuild));
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        registry.register(Box::new(events.clone()))?;
        registry.register(Box::new(batches.clone()))?;
        registry.register(Box::new(write_conflicts.clone()))?;
        registry.register(Box::new(batch_seconds.clone()))?;
        registry.register(Box::new(rebalances.clone()))?;
        registry.register(Box::new(documents_awaiting_render.clone()))?;
        registry.register(Box::new(lag_messages.clone()))?;
        registry.register(Box::new(lag_seconds.clone()))?;
        registry.register(Box::new(stalled.clone()))?;
        registry.register(Box::new(source_up.clone()))?;
        registry.register(Box::new(model_version))?;
        registry.register(Box::new(rebuilding))?;
        registry.register(Box::new(build))?;
        for outcome in ["applied", "skipped_duplicate", "parked"] {
            events.with_label_values(&[outcome]);
        }
        Ok(ProjectorMetrics {
            registry,
            events,
            batches,
            write_conflicts,
            batch_seconds,
            rebalances,
            documents_awaiting_render,
            lag_messages,
            lag_seconds,
            stalled,
            source_up,
            events_per_second,
            events_left,
            seconds_left,
            progress: None,
        })
    }

    /// These metrics, exporting `progress` too: its rate always, the
    /// events and the time left while they are known.
    pub fn with_progress(mut self, progress: Arc<RunProgress>) -> Result<ProjectorMetrics, prometheus::Error> {
        self.registry.register(Box::new(self.events_per_second.clone()))?;
        self.registry.register(Box::new(self.events_left.clone()))?;
        self.registry.register(Box::new(self.seconds_left.clone()))?;
        self.progress = Some(progress);
        Ok(self)
    }

    /// Sets the progress gauges from the run's progress now.
    fn read_progress(&self) {
        let Some(progress) = &self.progress else { return };
        let report = progress.report();
        self.events_per_second.set(report.events_per_second);
        for (gauge, value) in
            [(&self.events_left, report.events_left.map(|left| left as f64)), (&self.seconds_left, report.seconds_left)]
        {
            gauge.reset();
            if let Some(value) = value {
                gauge.with_label_values::<&str>(&[]).set(value);
            }
        }
    }

    /// The exposition text, with the consumer's state read now.
    pub fn render(&self, kafka: Option<&ConsumerShared>) -> String {
        if let Some(kafka) = kafka {
            self.source_up.set(i64::from(kafka.broker_reachable.load(Ordering::Relaxed)));
            let rebalances = kafka.rebalances.load(Ordering::Relaxed);
            self.rebalances.inc_by(rebalances.saturating_sub(self.rebalances.get()));
            self.lag_messages.reset();
            self.lag_seconds.reset();
            self.stalled.reset();
            for report in kafka.board.report() {
                let partition = report.partition.to_string();
                let labels = [report.topic.as_str(), partition.as_str()];
                // A partition whose high watermark is not known yet has no lag series, rather than a false 0.
                if let Some(lag_messages) = report.lag_messages {
                    self.lag_messages.with_label_values(&labels).set(lag_messages);
                }
                self.lag_seconds.with_label_values(&labels).set(report.lag_seconds);
                self.stalled.with_label_values(&labels).set(i64::from(report.stalled));
            }
        } else {
            self.source_up.set(1);
        }
        self.read_progress();
        let mut buffer = Vec::new();
        // Encoding gathered families into a Vec cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buffer);
        String::from_utf8(buffer).unwrap_or_default()
    }
}

impl BatchObserver for ProjectorMetrics {
    fn batch_committed(&self, committed: &CommittedBatch<'_>) {
        self.events.with_label_values(&["applied"]).inc_by(committed.totals.applied);
        self.events.with_label_values(&["skipped_duplicate"]).inc_by(committed.totals.skipped_as_duplicates);
        self.events.with_label_values(&["parked"]).inc_by(committed.totals.parked);
        self.batches.inc();
        self.write_conflicts.inc_by(committed.totals.write_conflicts);
        self.batch_seconds.observe(committed.latency.as_secs_f64());
        self.documents_awaiting_render.set(i64::try_from(committed.documents_awaiting_render).unwrap_or(i64::MAX));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::runner::RunTotals;

    #[test]
    fn a_committed_batch_sets_the_documents_awaiting_render() {
        let metrics = ProjectorMetrics::new(ModelVersion(1), false).expect("metrics");
        let committed = |documents_awaiting_render| CommittedBatch {
            checkpoints: &[],
            held_back: &[],
            last_recorded_at: &[],
            totals: RunTotals { batches: 1, ..RunTotals::default() },
            latency: Duration::from_millis(5),
            documents_awaiting_render,
        };
        metrics.batch_committed(&committed(42));
        assert!(metrics.render(None).contains("\nlcc_projector_documents_awaiting_render 42\n"));
        metrics.batch_committed(&committed(0));
        let text = metrics.render(None);
        assert!(text.contains("\nlcc_projector_documents_awaiting_render 0\n"));
        assert!(text.contains("\nlcc_projector_batches_total 2\n"), "{text}");
    }

    #[test]
    fn the_progress_is_read_when_scraped_and_what_is_unknown_is_absent() {
        use crate::source::file::RecordsFound;

        let found = Arc::new(RecordsFound::default());
        let progress = Arc::new(RunProgress::new(Arc::clone(&found) as Arc<dyn crate::source::Backlog>));
        let metrics = ProjectorMetrics::new(ModelVersion(2), true)
            .expect("metrics")
            .with_progress(Arc::clone(&progress))
            .expect("progress");
        let text = metrics.render(None);
        assert!(text.contains("\nlcc_projector_events_left 0\n"), "{text}");
        assert!(text.contains("\nlcc_projector_events_per_second 0\n"), "{text}");
        assert!(!text.contains("\nlcc_projector_estimated_seconds_left "), "no rate, no estimate: {text}");

        found.add(5_000);
        let committed = CommittedBatch {
            checkpoints: &[],
            held_back: &[],
            last_recorded_at: &[],
            totals: RunTotals { events: 1_000, batches: 1, ..RunTotals::default() },
            latency: Duration::from_millis(5),
            documents_awaiting_render: 0,
        };
        progress.batch_committed(&committed);
        let text = metrics.render(None);
        assert!(text.contains("\nlcc_projector_events_left 4000\n"), "{text}");
        assert!(text.contains("\nlcc_projector_estimated_seconds_left "), "{text}");
        assert!(!text.contains("\nlcc_projector_events_per_second 0\n"), "{text}");
    }
}
