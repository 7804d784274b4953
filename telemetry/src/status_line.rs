//! A status line on a terminal that log lines do not break: a long command
//! (a rebuild) rewrites one line in place with its progress, and a log line
//! written meanwhile clears that line first, takes its place, and the status
//! is drawn again beneath it.
//!
//! Standard error is one stream per process, so the line shown is kept in
//! one process-wide place that the log writer and the command share. This
//! module only draws; whether standard error is a terminal, and so whether a
//! status line is wanted at all, is the caller's decision.

use std::io::{self, Write};
use std::sync::{Mutex, PoisonError};

use tracing_subscriber::fmt::MakeWriter;

/// Back to the start of the line and clear it.
const CLEAR_LINE: &[u8] = b"\r\x1b[2K";

/// The line shown on standard error, if any.
static STANDARD_ERROR: Mutex<StatusLine> = Mutex::new(StatusLine { shown: None });

/// Shows `line` as the status, replacing the one shown.
pub fn show(line: &str) {
    let mut status = STANDARD_ERROR.lock().unwrap_or_else(PoisonError::into_inner);
    // A status line that cannot be drawn is not worth failing a command for.
    let _ = status.show(&mut io::stderr().lock(), line);
}

/// Replaces the status with `line` as an ordinary last line, and shows none.
pub fn finish(line: &str) {
    let mut status = STANDARD_ERROR.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = status.finish(&mut io::stderr().lock(), line);
}

/// The status drawn on one stream.
#[derive(Debug)]
struct StatusLine {
    shown: Option<String>,
}

impl StatusLine {
    fn show(&mut self, out: &mut impl Write, line: &str) -> io::Result<()> {
        out.write_all(CLEAR_LINE)?;
        out.write_all(line.as_bytes())?;
        out.flush()?;
        self.shown = Some(line.to_owned());
        Ok(())
    }

    fn finish(&mut self, out: &mut impl Write, line: &str) -> io::Result<()> {
        self.shown = None;
        out.write_all(CLEAR_LINE)?;
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// Writes a log line's bytes: above the status, which is drawn again.
    fn write_log(&self, out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
        match &self.shown {
            None => out.write_all(bytes),
            Some(line) => {
                out.write_all(CLEAR_LINE)?;
                out.write_all(bytes)?;
                out.write_all(line.as_bytes())?;
                out.flush()
            }
        }
    }
}

/// The log subscriber's writer: standard error, below any status line.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        LogWriter
    }
}

impl Write for LogWriter {
    /// The subscriber formats each event whole and writes it in one call,
    /// so a log line is never split around the status.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let status = STANDARD_ERROR.lock().unwrap_or_else(PoisonError::into_inner);
        status.write_log(&mut io::stderr().lock(), bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(steps: impl FnOnce(&mut StatusLine, &mut Vec<u8>)) -> String {
        let (mut status, mut out) = (StatusLine { shown: None }, Vec::new());
        steps(&mut status, &mut out);
        String::from_utf8(out).expect("text")
    }

    #[test]
    fn a_log_line_takes_the_status_lines_place_and_the_status_is_drawn_beneath_it() {
        let out = drawn(|status, out| {
            status.show(out, "10 events").expect("show");
            status.write_log(out, b"WARN a warning\n").expect("log");
            status.show(out, "20 events").expect("show");
        });
        assert_eq!(out, "\r\x1b[2K10 events\r\x1b[2KWARN a warning\n10 events\r\x1b[2K20 events");
    }

    #[test]
    fn log_lines_pass_untouched_when_no_status_is_shown() {
        let out = drawn(|status, out| {
            status.write_log(out, b"INFO before\n").expect("log");
            status.show(out, "running").expect("show");
            status.finish(out, "ended").expect("finish");
            status.write_log(out, b"INFO after\n").expect("log");
        });
        assert_eq!(out, "INFO before\n\r\x1b[2Krunning\r\x1b[2Kended\nINFO after\n");
    }
}
