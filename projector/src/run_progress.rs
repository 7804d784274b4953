//! How far a run has come and how far it has to go: the events it has
//! committed, their recent rate, the events its source still holds beyond
//! them, and the time left at that rate. The metrics export it, and
//! `projector rebuild` shows it (a line rewritten in place on a terminal, a
//! log line every [`LOG_INTERVAL`] otherwise).
//!
//! It counts what the loop commits and asks the source what it holds; it
//! must not read events or decide anything about the run.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::runner::{BatchObserver, CommittedBatch};
use crate::source::Backlog;

/// The rate is that of the batches committed within this window (or since
/// the first batch, in a run younger than it): long enough to smooth the
/// batches' sizes, short enough to follow a rate that falls as the store grows.
const RATE_WINDOW: Duration = Duration::from_secs(20);
/// How often the progress is logged when standard error is not a terminal.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// How often the line on a terminal is rewritten.
pub const TERMINAL_INTERVAL: Duration = Duration::from_secs(1);

/// A run's progress, told about every committed batch.
#[derive(Debug)]
pub struct RunProgress {
    backlog: Arc<dyn Backlog>,
    counts: Mutex<Counts>,
}

#[derive(Debug)]
struct Counts {
    started: Instant,
    committed: u64,
    documents_awaiting_render: usize,
    /// (when, events committed by then) of the batches within [`RATE_WINDOW`],
    /// and the one before them.
    samples: VecDeque<(Instant, u64)>,
}

/// What [`RunProgress::report`] says.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressReport {
    pub elapsed: Duration,
    /// Events committed since the run started, whatever their outcome.
    pub events: u64,
    /// Events committed per second recently; 0 before the first batch.
    pub events_per_second: f64,
    /// Events the source holds that are not committed; `None` when unknown.
    pub events_left: Option<u64>,
    /// `events_left` at `events_per_second`; `None` when either is unknown or 0.
    pub seconds_left: Option<f64>,
    pub documents_awaiting_render: usize,
}

impl RunProgress {
    pub fn new(backlog: Arc<dyn Backlog>) -> RunProgress {
        RunProgress::started_at(backlog, Instant::now())
    }

    fn started_at(backlog: Arc<dyn Backlog>, started: Instant) -> RunProgress {
        let counts = Counts { started, committed: 0, documents_awaiting_render: 0, samples: VecDeque::new() };
        RunProgress { backlog, counts: Mutex::new(counts) }
    }

    fn with<T>(&self, read: impl FnOnce(&mut Counts) -> T) -> T {
        read(&mut self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn committed_at(&self, now: Instant, events: u64, documents_awaiting_render: usize) {
        self.with(|counts| {
            counts.committed += events;
            counts.documents_awaiting_render = documents_awaiting_render;
            counts.samples.push_back((now, counts.committed));
            while counts.samples.len() > 2 && counts.samples[1].0 + RATE_WINDOW <= now {
                counts.samples.pop_front();
            }
        });
    }

    /// The progress now.
    pub fn report(&self) -> ProgressReport {
        self.report_at(Instant::now())
    }

    fn report_at(&self, now: Instant) -> ProgressReport {
        let (elapsed, events, events_per_second, documents_awaiting_render) = self.with(|counts| {
            let (since, before) = match counts.samples.front() {
                Some(&(at, committed)) if counts.samples.len() > 1 && at + RATE_WINDOW <= now => (at, committed),
                _ => (counts.started, 0),
            };
            let seconds = now.duration_since(since).as_secs_f64();
            let rate = if seconds > 0.0 { (counts.committed - before) as f64 / seconds } else { 0.0 };
            (now.duration_since(counts.started), counts.committed, rate, counts.documents_awaiting_render)
        });
        let events_left = self.backlog.left(events);
        let seconds_left = events_left.filter(|_| events_per_second > 0.0).map(|left| left as f64 / events_per_second);
        ProgressReport { elapsed, events, events_per_second, events_left, seconds_left, documents_awaiting_render }
    }
}

impl BatchObserver for RunProgress {
    fn batch_committed(&self, committed: &CommittedBatch<'_>) {
        self.committed_at(Instant::now(), committed.totals.events, committed.documents_awaiting_render);
    }
}

impl ProgressReport {
    /// One line for people: "1,204,000 events in 9 s, 133,778 events/s,
    /// 2,796,000 left, about 21 s left", and the documents still to render.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} events in {}, {} events/s",
            grouped(self.events),
            duration(self.elapsed.as_secs_f64()),
            grouped(self.events_per_second.round() as u64)
        );
        match (self.events_left, self.seconds_left) {
            (Some(0), _) => line.push_str(", none left to read"),
            (Some(left), Some(seconds)) => {
                line.push_str(&format!(", {} left, about {} left", grouped(left), duration(seconds)));
            }
            (Some(left), None) => line.push_str(&format!(", {} left", grouped(left))),
            (None, _) => {}
        }
        if self.documents_awaiting_render > 0 {
            line.push_str(&format!(", {} documents to render", grouped(self.documents_awaiting_render as u64)));
        }
        line
    }
}

/// `1234567` as "1,234,567", as the progress line writes counts.
pub fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// Seconds as "42 s", "3 min 05 s" or "2 h 07 min".
fn duration(seconds: f64) -> String {
    let seconds = seconds.round() as u64;
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3_600 => format!("{} min {:02} s", seconds / 60, seconds % 60),
        _ => format!("{} h {:02} min", seconds / 3_600, seconds % 3_600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::file::RecordsFound;

    fn files_progress(found: u64, started: Instant) -> (RunProgress, Arc<RecordsFound>) {
        let records = Arc::new(RecordsFound::default());
        records.add(found);
        (RunProgress::started_at(Arc::clone(&records) as Arc<dyn Backlog>, started), records)
    }

    #[test]
    fn the_rate_is_of_the_recent_batches_and_the_time_left_follows_from_it() {
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        let (progress, found) = files_progress(1_000_000, start);
        let report = progress.report_at(at(1));
        assert_eq!((report.events, report.events_per_second, report.seconds_left), (0, 0.0, None));
        assert_eq!(report.events_left, Some(1_000_000));

        progress.committed_at(at(10), 100_000, 0);
        let report = progress.report_at(at(10));
        assert_eq!((report.events, report.events_per_second), (100_000, 10_000.0), "since the start");
        assert_eq!((report.events_left, report.seconds_left), (Some(900_000), Some(90.0)));

        // Later batches are slower: the window follows them.
        for seconds in (20..=60).step_by(10) {
            progress.committed_at(at(seconds), 50_000, 7);
        }
        let report = progress.report_at(at(60));
        assert_eq!(report.events, 350_000);
        assert_eq!(report.events_per_second, 5_000.0, "the last 20 seconds");
        assert_eq!((report.events_left, report.seconds_left), (Some(650_000), Some(130.0)));
        assert_eq!(report.documents_awaiting_render, 7);

        found.add(50_000);
        assert_eq!(progress.report_at(at(60)).events_left, Some(700_000), "the source found more");
    }

    #[test]
    fn the_line_says_what_is_known() {
        let report = ProgressReport {
            elapsed: Duration::from_secs(9),
            events: 1_204_000,
            events_per_second: 133_777.8,
            events_left: Some(2_796_000),
            seconds_left: Some(20.9),
            documents_awaiting_render: 0,
        };
        assert_eq!(report.line(), "1,204,000 events in 9 s, 133,778 events/s, 2,796,000 left, about 21 s left");
        let rendering = ProgressReport {
            elapsed: Duration::from_secs(185),
            events_left: Some(0),
            seconds_left: Some(0.0),
            documents_awaiting_render: 241_250,
            ..report.clone()
        };
        assert_eq!(
            rendering.line(),
            "1,204,000 events in 3 min 05 s, 133,778 events/s, none left to read, 241,250 documents to render"
        );
        let unknown = ProgressReport { elapsed: Duration::from_secs(7_620), events_left: None, ..report };
        assert_eq!(unknown.line(), "1,204,000 events in 2 h 07 min, 133,778 events/s");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
    }
}
