//! A small deterministic random generator (SplitMix64), so that the same seed
//! gives the same event stream on every machine and every version of every
//! dependency.

use super::drafts::DAY;

#[derive(Debug, Clone)]
pub struct Random {
    state: u64,
}

impl Random {
    pub fn new(seed: u64) -> Random {
        Random { state: seed ^ 0x9e37_79b9_7f4a_7c15 }
    }

    /// An independent generator for one purpose, so that changing how one part
    /// of the stream is generated does not reshuffle the others.
    pub fn fork(&mut self, purpose: u64) -> Random {
        Random::new(self.next_u64() ^ purpose.wrapping_mul(0xbf58_476d_1ce4_e5b9))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `[low, high)`; `low` when the range is empty.
    pub fn range(&mut self, low: i64, high: i64) -> i64 {
        if high <= low {
            return low;
        }
        low + (self.next_u64() % (high - low) as u64) as i64
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.next_u64() % 10_000 < u64::from(percent) * 100
    }

    /// With probability `percent` / 100, the instant `low_days` to
    /// `high_days` days after `after` (in milliseconds).
    pub fn later_by_chance(&mut self, percent: u32, after: i64, low_days: i64, high_days: i64) -> Option<i64> {
        self.chance(percent).then(|| after + self.range(low_days, high_days) * DAY)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }

    pub fn hex(&mut self, length: usize) -> String {
        (0..length).map(|_| char::from(b"0123456789abcdef"[(self.next_u64() % 16) as usize])).collect()
    }

    pub fn digits(&mut self, length: usize) -> String {
        (0..length).map(|_| char::from(b'0' + (self.next_u64() % 10) as u8)).collect()
    }

    pub fn alphanumeric(&mut self, length: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ0123456789";
        (0..length).map(|_| char::from(ALPHABET[(self.next_u64() % ALPHABET.len() as u64) as usize])).collect()
    }

    /// A UUID-shaped id.
    pub fn uuid(&mut self) -> String {
        let hex = self.hex(32);
        format!("{}-{}-4{}-a{}-{}", &hex[0..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_sequence() {
        let first: Vec<u64> = (0..5).scan(Random::new(7), |random, _| Some(random.next_u64())).collect();
        let second: Vec<u64> = (0..5).scan(Random::new(7), |random, _| Some(random.next_u64())).collect();
        let other: Vec<u64> = (0..5).scan(Random::new(8), |random, _| Some(random.next_u64())).collect();
        assert_eq!(first, second);
        assert_ne!(first, other);
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut random = Random::new(1);
        for _ in 0..10_000 {
            let value = random.range(-5, 5);
            assert!((-5..5).contains(&value));
        }
        assert_eq!(random.range(3, 3), 3);
    }
}
