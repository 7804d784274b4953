//! The one line a binary prints when its listeners are bound:
//! `listening public=127.0.0.1:8080 admin=127.0.0.1:8081`, on standard output.
//!
//! With port 0 in a listen address the system picks a free port, and this
//! line is how whoever started the process (a test, a supervisor) learns
//! which. Standard output, not the log: the log's level and format are the
//! operator's to choose, and this line must always be there.

use std::io::Write;
use std::net::SocketAddr;

/// Prints the bound address of each named listener on one line and flushes it.
pub fn announce(listeners: &[(&str, SocketAddr)]) {
    let mut line = String::from("listening");
    for (name, address) in listeners {
        line.push_str(&format!(" {name}={address}"));
    }
    let mut stdout = std::io::stdout().lock();
    // Nobody may be reading: a closed standard output must not stop the service.
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// The addresses in a line printed by [`announce`], by name.
pub fn parse(line: &str) -> Option<Vec<(String, SocketAddr)>> {
    let fields = line.strip_prefix("listening")?;
    fields
        .split_whitespace()
        .map(|field| {
            let (name, address) = field.split_once('=')?;
            Some((name.to_owned(), address.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_line_parses_back() {
        let line = "listening public=127.0.0.1:40001 admin=[::1]:40002";
        let parsed = parse(line).expect("a listening line");
        assert_eq!(parsed[0], ("public".to_owned(), "127.0.0.1:40001".parse().expect("address")));
        assert_eq!(parsed[1].1.port(), 40002);
        assert_eq!(parse("{\"events\": 1}"), None);
        assert_eq!(parse("listening public=nowhere"), None);
    }
}
