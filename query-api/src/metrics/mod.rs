//! Prometheus metrics of the public API, rendered for the admin listener
//! (`server::admin`).
//!
//! Routes are labelled by their template (`/rights/{lccId}`), never by the
//! concrete path, so label cardinality stays fixed. The series a lookup
//! updates are kept per shard of threads until rendered ([`shards`]).

mod shards;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use prometheus::local::{LocalHistogram, LocalIntCounter};
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use read_model::{DocumentCacheStatistics, DocumentKind};

use shards::Shards;

/// The service's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    rate_limited: IntCounter,
    authentication_failures: IntCounter,
    store_latency: HistogramVec,
    /// `store_latency`'s series of each document kind, in the order of
    /// `DocumentKind::ALL`, found once and sharded: a document read is on
    /// every lookup.
    document_read_latency: Shards<[LocalHistogram; DocumentKind::ALL.len()]>,
    /// The sharded series of every route's `200` answers, added into
    /// `requests` and `latency` when rendered.
    ok_series: Mutex<Vec<Arc<Shards<OkLocal>>>>,
    document_cache: DocumentCacheMetrics,
    connections_open: IntGauge,
    connections_refused: IntCounterVec,
    webhook_attempts: IntCounterVec,
    webhook_notifications: IntCounter,
}

/// The series of one route's `200` answers, found on the first and kept
/// by the edge around that route: finding a series by its labels hashes
/// them, on every request. Answers of another status, or of another route
/// or method than the first (a fallback serves many), are counted by their
/// labels as before.
#[derive(Debug, Default)]
pub struct RouteSeries(OnceLock<OkSeries>);

#[derive(Debug)]
struct OkSeries {
    route: Box<str>,
    method: Method,
    local: Arc<Shards<OkLocal>>,
}

/// One shard's part of a route's `200` series.
#[derive(Debug)]
struct OkLocal {
    requests: LocalIntCounter,
    latency: LocalHistogram,
}

impl OkLocal {
    fn flush(&self) {
        self.requests.flush();
        self.latency.flush();
    }
}

/// Records the time of one document read when dropped ([`Metrics::time_document_read`]).
#[derive(Debug)]
pub struct DocumentReadTimer<'a> {
    metrics: &'a Metrics,
    /// The kind's place in `DocumentKind::ALL`.
    index: usize,
    started: Instant,
}

impl Drop for DocumentReadTimer<'_> {
    fn drop(&mut self) {
        let elapsed = self.started.elapsed().as_secs_f64();
        self.metrics.document_read_latency.update(|latency| latency[self.index].observe(elapsed));
    }
}

/// The store's document cache, copied from its own counters at each scrape.
#[derive(Debug)]
struct DocumentCacheMetrics {
    hits: IntCounter,
    misses: IntCounter,
    resets: IntCounter,
    bytes: IntGauge,
    holds_stored: IntGauge,
    /// Held while the series catch up, so two scrapes at once add each increase once.
    catching_up: Mutex<()>,
}

impl Metrics {
    pub fn new() -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("lcc_http_requests_total", "Requests answered, by route template, method and status."),
            &["route", "method", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "lcc_http_request_duration_seconds",
                "Time to answer a request, by route template and status.",
            )
            .buckets(vec![0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5]),
            &["route", "status"],
        )?;
        let rate_limited = IntCounter::new("lcc_http_rate_limited_total", "Requests refused with 429.")?;
        let authentication_failures =
            IntCounter::new("lcc_http_authentication_failures_total", "Requests refused with 401.")?;
        let store_latency = HistogramVec::new(
            HistogramOpts::new("lcc_store_read_duration_seconds", "Time of one read-model store call, by operation.")
                .buckets(vec![0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5]),
            &["operation"],
        )?;
        let document_cache = DocumentCacheMetrics {
            hits: IntCounter::new("lcc_document_cache_hits_total", "Document reads answered from memory.")?,
            misses: IntCounter::new("lcc_document_cache_misses_total", "Document reads that went to the store.")?,
            resets: IntCounter::new(
                "lcc_document_cache_resets_total",
                "Times the document cache was emptied, having fallen behind the projector's batches.",
            )?,
            bytes: IntGauge::new("lcc_document_cache_bytes", "Bytes of documents held in memory.")?,
            holds_stored: IntGauge::new(
                "lcc_document_cache_holds_stored",
                "1 once the document cache, having been full, holds documents compressed as stored; 0 while it holds them as served.",
            )?,
            catching_up: Mutex::new(()),
        };
        let connections_open = IntGauge::new("lcc_http_connections_open", "Connections the public listener holds.")?;
        let connections_refused = IntCounterVec::new(
            Opts::new(
                "lcc_http_connections_refused_total",
                "Connections closed at once, over the total or the per-address cap.",
            ),
            &["reason"],
        )?;
        let webhook_attempts = IntCounterVec::new(
            Opts::new(
                "lcc_webhook_attempts_total",
                "Webhook attempts this replica made, by kind (challenge, notifications) and outcome (acknowledged, failed).",
            ),
            &["kind", "outcome"],
        )?;
        let webhook_notifications = IntCounter::new(
            "lcc_webhook_notifications_delivered_total",
            "Notifications this replica delivered in acknowledged webhook messages.",
        )?;
        let build_info =
            IntGaugeVec::new(Opts::new("lcc_build_info", "Always 1; labels name the running build."), &["version"])?;
        build_info.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(rate_limited.clone()))?;
        registry.register(Box::new(authentication_failures.clone()))?;
        registry.register(Box::new(store_latency.clone()))?;
        registry.register(Box::new(document_cache.hits.clone()))?;
        registry.register(Box::new(document_cache.misses.clone()))?;
        registry.register(Box::new(document_cache.resets.clone()))?;
        registry.register(Box::new(document_cache.bytes.clone()))?;
        registry.register(Box::new(document_cache.holds_stored.clone()))?;
        registry.register(Box::new(connections_open.clone()))?;
        registry.register(Box::new(connections_refused.clone()))?;
        registry.register(Box::new(webhook_attempts.clone()))?;
        registry.register(Box::new(webhook_notifications.clone()))?;
        registry.register(Box::new(build_info))?;
        Ok(Metrics {
            registry,
            requests,
            latency,
            rate_limited,
            authentication_failures,
            document_read_latency: Shards::new(|| {
                DocumentKind::ALL.map(|kind| store_latency.with_label_values(&[kind.table()]).local())
            }),
            ok_series: Mutex::new(Vec::new()),
            store_latency,
            document_cache,
            connections_open,
            connections_refused,
            webhook_attempts,
            webhook_notifications,
        })
    }

    pub fn connection_opened(&self) {
        self.connections_open.inc();
    }

    pub fn connection_closed(&self) {
        self.connections_open.dec();
    }

    /// One webhook attempt of `kind`, and the notifications it delivered when acknowledged.
    pub fn record_webhook_attempt(&self, kind: &str, acknowledged: bool, notifications: usize) {
        let outcome = if acknowledged { "acknowledged" } else { "failed" };
        self.webhook_attempts.with_label_values(&[kind, outcome]).inc();
        if acknowledged {
            self.webhook_notifications.inc_by(notifications as u64);
        }
    }

    /// A connection closed at once; `reason` is `total` or `per_address`.
    pub fn connection_refused(&self, reason: &str) {
        self.connections_refused.with_label_values(&[reason]).inc();
    }

    /// Brings the document cache series up to the store's counters.
    pub fn record_document_cache(&self, statistics: DocumentCacheStatistics) {
        let metrics = &self.document_cache;
        let _catching_up = metrics.catching_up.lock().unwrap_or_else(PoisonError::into_inner);
        for (counter, total) in [
            (&metrics.hits, statistics.hits),
            (&metrics.misses, statistics.misses),
            (&metrics.resets, statistics.resets),
        ] {
            counter.inc_by(total.saturating_sub(counter.get()));
        }
        metrics.bytes.set(i64::try_from(statistics.bytes).unwrap_or(i64::MAX));
        metrics.holds_stored.set(i64::from(statistics.holds_stored));
    }

    /// The text exposition format, of every request recorded before it.
    pub fn render(&self) -> String {
        self.document_read_latency.each(|latencies| latencies.iter().for_each(LocalHistogram::flush));
        for ok in self.ok_series.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            ok.each(OkLocal::flush);
        }
        let mut buffer = Vec::new();
        // Encoding gathered families into a Vec cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buffer);
        String::from_utf8(buffer).unwrap_or_default()
    }

    /// Counts and times one answered request (`route` is its template) of
    /// the route whose `200` series `route_series` keeps.
    pub fn record_request(
        &self,
        route_series: &RouteSeries,
        route: &str,
        method: &Method,
        status: StatusCode,
        elapsed: Duration,
    ) {
        if status == StatusCode::OK {
            let ok = route_series.0.get_or_init(|| {
                let requests = self.requests.with_label_values(&[route, method.as_str(), status.as_str()]);
                let latency = self.latency.with_label_values(&[route, status.as_str()]);
                let local = Arc::new(Shards::new(|| OkLocal { requests: requests.local(), latency: latency.local() }));
                self.ok_series.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::clone(&local));
                OkSeries { route: route.into(), method: method.clone(), local }
            });
            if *ok.route == *route && ok.method == method {
                ok.local.update(|local| {
                    local.requests.inc();
                    local.latency.observe(elapsed.as_secs_f64());
                });
                return;
            }
        }
        self.requests.with_label_values(&[route, method.as_str(), status.as_str()]).inc();
        self.latency.with_label_values(&[route, status.as_str()]).observe(elapsed.as_secs_f64());
        match status {
            StatusCode::TOO_MANY_REQUESTS => self.rate_limited.inc(),
            StatusCode::UNAUTHORIZED => self.authentication_failures.inc(),
            _ => {}
        }
    }

    /// Times one read of a document of `kind` (`lcc_store_read_duration_seconds`)
    /// until the timer is dropped, as a read that is given up on is too.
    pub fn time_document_read(&self, kind: DocumentKind) -> DocumentReadTimer<'_> {
        let index = DocumentKind::ALL.iter().position(|each| *each == kind).unwrap_or_default();
        DocumentReadTimer { metrics: self, index, started: Instant::now() }
    }

    /// The timer of one store read, by operation (`lcc_store_read_duration_seconds`).
    pub fn observe_store(&self, operation: &str) -> Histogram {
        self.store_latency.with_label_values(&[operation])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series_of(rendered: &str, name: &str) -> Option<String> {
        rendered.lines().find_map(|line| line.strip_prefix(&format!("{name} ")).map(str::to_owned))
    }

    #[test]
    fn a_render_counts_every_answer_and_read_recorded_before_it_on_any_thread() {
        let metrics = Arc::new(Metrics::new().expect("metrics"));
        let series = Arc::new(RouteSeries::default());
        let route = "/api/v1/public/v1/rights/{lccId}";
        let record = |answers: u64| {
            let (metrics, series) = (Arc::clone(&metrics), Arc::clone(&series));
            std::thread::spawn(move || {
                for _ in 0..answers {
                    metrics.record_request(&series, route, &Method::GET, StatusCode::OK, Duration::from_micros(300));
                    drop(metrics.time_document_read(DocumentKind::RightsProfile));
                }
            })
        };
        for thread in [record(3), record(4)] {
            thread.join().expect("thread");
        }
        let requests = format!(r#"lcc_http_requests_total{{method="GET",route="{route}",status="200"}}"#);
        let fast = format!(r#"lcc_http_request_duration_seconds_bucket{{route="{route}",status="200",le="0.0005"}}"#);
        let reads = r#"lcc_store_read_duration_seconds_count{operation="rights_profiles"}"#;
        let rendered = metrics.render();
        assert_eq!(series_of(&rendered, &requests).as_deref(), Some("7"), "{rendered}");
        assert_eq!(series_of(&rendered, &fast).as_deref(), Some("7"));
        assert_eq!(series_of(&rendered, reads).as_deref(), Some("7"));
        record(2).join().expect("thread");
        let rendered = metrics.render();
        assert_eq!(series_of(&rendered, &requests).as_deref(), Some("9"), "counted once each");
        assert_eq!(series_of(&rendered, reads).as_deref(), Some("9"));
    }

    #[test]
    fn document_cache_series_follow_the_store_counters_without_counting_twice() {
        let metrics = Metrics::new().expect("metrics");
        let statistics = DocumentCacheStatistics { hits: 7, misses: 3, resets: 1, bytes: 4_096, holds_stored: false };
        metrics.record_document_cache(statistics);
        assert_eq!(series_of(&metrics.render(), "lcc_document_cache_holds_stored").as_deref(), Some("0"));
        metrics.record_document_cache(statistics);
        metrics.record_document_cache(DocumentCacheStatistics {
            hits: 9,
            bytes: 2_048,
            holds_stored: true,
            ..statistics
        });
        let rendered = metrics.render();
        assert_eq!(series_of(&rendered, "lcc_document_cache_hits_total").as_deref(), Some("9"));
        assert_eq!(series_of(&rendered, "lcc_document_cache_misses_total").as_deref(), Some("3"));
        assert_eq!(series_of(&rendered, "lcc_document_cache_resets_total").as_deref(), Some("1"));
        assert_eq!(series_of(&rendered, "lcc_document_cache_bytes").as_deref(), Some("2048"));
        assert_eq!(series_of(&rendered, "lcc_document_cache_holds_stored").as_deref(), Some("1"));
    }
}
