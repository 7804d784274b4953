//! What a run shows while it works: on a terminal one status line,
//! rewritten in place (the file being downloaded, the rows loaded, the feed
//! items applied and their rate); otherwise a log line at each file and
//! every few feed pages. It only reports: nothing waits on it.

use std::io::IsTerminal;
use std::time::Instant;

/// Feed pages between two progress log lines when standard error is not a terminal.
const PAGES_PER_LOG_LINE: u64 = 20;

/// The progress of one run.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
    terminal: bool,
    pages: u64,
}

impl Progress {
    pub fn new() -> Progress {
        Progress { started: Instant::now(), terminal: std::io::stderr().is_terminal(), pages: 0 }
    }

    /// A snapshot file's download begins.
    pub fn downloading(&self, snapshot: &str, file: usize, files: usize, name: &str) {
        let line = format!("rights-sync: snapshot {snapshot}: downloading file {file} of {files} ({name})");
        if self.terminal {
            telemetry::status_line::show(&line);
        } else {
            tracing::info!("{line}");
        }
    }

    /// Rows of a snapshot loaded so far (shown on a terminal only).
    pub fn loading(&self, rows: u64) {
        if self.terminal {
            telemetry::status_line::show(&format!("rights-sync: {rows} snapshot rows loaded"));
        }
    }

    /// A feed page is applied.
    pub fn feed_page(&mut self, snapshot_rows: u64, feed_items: u64) {
        self.pages += 1;
        let line = self.feed_line(snapshot_rows, feed_items);
        if self.terminal {
            telemetry::status_line::show(&line);
        } else if self.pages.is_multiple_of(PAGES_PER_LOG_LINE) {
            tracing::info!("{line}");
        }
    }

    /// The run caught up: the status becomes an ordinary last line.
    pub fn caught_up(&self, snapshot_rows: u64, feed_items: u64) {
        if self.terminal {
            telemetry::status_line::finish(&self.feed_line(snapshot_rows, feed_items));
        }
    }

    fn feed_line(&self, snapshot_rows: u64, feed_items: u64) -> String {
        let seconds = self.started.elapsed().as_secs_f64().max(0.001);
        format!(
            "rights-sync: {snapshot_rows} snapshot rows, {feed_items} feed items applied ({:.0} items/s)",
            feed_items as f64 / seconds
        )
    }
}
