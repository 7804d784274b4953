//! How many connections the public listener holds: at most a total, and at
//! most a share per client address, so that one address cannot hold what
//! other clients need. A connection past either cap is closed at once, not
//! queued: a queue would hold the same file descriptors.
//!
//! Admission hands out a [`ConnectionPermit`] that gives its place back when
//! the connection ends, however it ends. This module counts; it does not
//! accept, read or close anything.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dashmap::DashMap;

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The listener holds its total.
    Total,
    /// The address holds its share.
    PerAddress,
}

impl Refusal {
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Total => "total",
            Refusal::PerAddress => "per_address",
        }
    }
}

#[derive(Debug)]
struct Counts {
    total_cap: usize,
    per_address_cap: usize,
    total: AtomicUsize,
    /// Open connections per address; an address leaves the map with its last one.
    by_address: DashMap<IpAddr, usize>,
}

/// The caps and what is open under them.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    counts: Arc<Counts>,
}

/// A place under both caps, given back when dropped.
#[derive(Debug)]
pub struct ConnectionPermit {
    counts: Arc<Counts>,
    address: IpAddr,
}

impl ConnectionLimits {
    pub fn new(total_cap: usize, per_address_cap: usize) -> ConnectionLimits {
        ConnectionLimits {
            counts: Arc::new(Counts {
                total_cap,
                per_address_cap,
                total: AtomicUsize::new(0),
                by_address: DashMap::new(),
            }),
        }
    }

    /// A place for a connection from `address`, or why there is none.
    pub fn admit(&self, address: IpAddr) -> Result<ConnectionPermit, Refusal> {
        let counts = &self.counts;
        let admitted_in_total = counts
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| (open < counts.total_cap).then_some(open + 1));
        if admitted_in_total.is_err() {
            return Err(Refusal::Total);
        }
        let mut open_from_address = counts.by_address.entry(address).or_insert(0);
        if *open_from_address >= counts.per_address_cap {
            drop(open_from_address);
            counts.total.fetch_sub(1, Ordering::AcqRel);
            return Err(Refusal::PerAddress);
        }
        *open_from_address += 1;
        drop(open_from_address);
        Ok(ConnectionPermit { counts: Arc::clone(counts), address })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.counts.total.load(Ordering::Acquire)
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.counts.by_address.remove_if_mut(&self.address, |_, open| {
            *open -= 1;
            *open == 0
        });
        self.counts.total.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn an_address_gets_its_share_and_the_listener_its_total() {
        let limits = ConnectionLimits::new(5, 2);
        let first = [limits.admit(address(1)).expect("1"), limits.admit(address(1)).expect("2")];
        assert_eq!(limits.admit(address(1)).err(), Some(Refusal::PerAddress));
        let others: Vec<_> = (2..=4).map(|last| limits.admit(address(last)).expect("another address")).collect();
        assert_eq!(limits.open(), 5);
        assert_eq!(limits.admit(address(9)).err(), Some(Refusal::Total));
        drop(first);
        assert_eq!(limits.open(), 3);
        assert!(limits.admit(address(1)).is_ok(), "places come back when connections end");
        drop(others);
        assert_eq!(limits.open(), 0);
        assert!(limits.counts.by_address.is_empty(), "an address with no connection is forgotten");
    }

    #[test]
    fn a_refusal_takes_no_place() {
        let limits = ConnectionLimits::new(3, 1);
        let _held = limits.admit(address(1)).expect("first");
        for _ in 0..10 {
            assert_eq!(limits.admit(address(1)).err(), Some(Refusal::PerAddress));
        }
        assert_eq!(limits.open(), 1);
        let _second = limits.admit(address(2)).expect("room for another address");
        let _third = limits.admit(address(3)).expect("room for another address");
    }
}
