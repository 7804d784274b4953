//! The documents deferred batches left to render, kept in little memory
//! while a backlog of millions of works is projected.
//!
//! Each deferred batch adds its documents as one sorted run of keys, and a
//! key is stored as the length it shares with the key before it and the
//! rest ("front coding"): registry ids in order share most of their bytes,
//! so a document takes about 7 bytes instead of the 60 to 70 of a map entry
//! and its own string. Runs are merged as the digits of a binary counter
//! (an older run is always larger than a newer one), so a document is copied
//! O(log n) times and a work deferred by several batches is kept once per
//! run until their runs merge. Rendering takes the documents out in key
//! order, merging every run first.
//!
//! It knows the documents only as keys and the bytes of their
//! [`Parts`]; it must not render or read the store.

use read_model::PartyReferrer;

use crate::projection::batch::{DocumentsToRender, Parts};

/// The first byte of a work's key; a license's sorts after it, so works come first.
const WORK: u8 = 0;
const LICENSE: u8 = 1;

/// Documents waiting to be rendered, in sorted runs of front-coded keys.
#[derive(Debug, Default)]
pub struct WaitingDocuments {
    /// Oldest first; each run holds more entries than the one after it.
    runs: Vec<Run>,
}

impl WaitingDocuments {
    /// Adds what a batch left to render.
    pub fn add(&mut self, documents: DocumentsToRender) {
        let mut run = RunWriter::default();
        let mut key = Vec::new();
        for (document, parts) in documents.into_sorted() {
            key.clear();
            let (kind, id) = match &document {
                PartyReferrer::Work(id) => (WORK, id),
                PartyReferrer::License(id) => (LICENSE, id),
            };
            key.push(kind);
            key.extend_from_slice(id.as_bytes());
            run.push(&key, parts.to_byte());
        }
        if run.entries == 0 {
            return;
        }
        self.runs.push(run.finish());
        while let [.., older, newer] = self.runs.as_slice()
            && older.entries <= newer.entries
        {
            self.merge_newest_two();
        }
    }

    /// Replaces the two newest runs by their merge.
    fn merge_newest_two(&mut self) {
        let newer = self.runs.pop().expect("two runs");
        let older = self.runs.pop().expect("two runs");
        self.runs.push(merge(&older, &newer));
    }

    /// Entries in every run: the documents waiting, a document counted once
    /// for each run that holds it until those runs merge. Exact once
    /// [`WaitingDocuments::take_first`] has merged them.
    pub fn len(&self) -> usize {
        self.runs.iter().map(|run| run.entries).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Bytes the runs hold.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.runs.iter().map(|run| run.bytes.len() - run.start + run.base.len()).sum()
    }

    /// Takes out up to `count` documents, works first, each kind in key order.
    pub fn take_first(&mut self, count: usize) -> DocumentsToRender {
        while self.runs.len() > 1 {
            self.merge_newest_two();
        }
        let mut taken = DocumentsToRender::default();
        let Some(run) = self.runs.first_mut() else { return taken };
        let mut reader = Reader::new(run);
        let mut left = count;
        while left > 0
            && let Some(parts) = reader.next()
        {
            let id = String::from_utf8_lossy(&reader.key[1..]).into_owned();
            let document = if reader.key[0] == WORK { PartyReferrer::Work(id) } else { PartyReferrer::License(id) };
            taken.insert(document, Parts::from_byte(parts));
            left -= 1;
        }
        let (start, base) = (reader.position, reader.key);
        run.start = start;
        run.base = base;
        run.entries -= count - left;
        if run.entries == 0 {
            self.runs.clear();
        }
        taken
    }
}

/// Sorted, distinct keys, each entry `shared length, rest length, rest,
/// parts` with the lengths as LEB128 varints; read from `start`, where the
/// key before is `base`.
#[derive(Debug, Default)]
struct Run {
    bytes: Vec<u8>,
    start: usize,
    base: Vec<u8>,
    entries: usize,
}

/// Builds a run from keys pushed in ascending order.
#[derive(Default)]
struct RunWriter {
    bytes: Vec<u8>,
    previous: Vec<u8>,
    entries: usize,
}

impl RunWriter {
    fn push(&mut self, key: &[u8], parts: u8) {
        let shared = self.previous.iter().zip(key).take_while(|(left, right)| left == right).count();
        write_varint(&mut self.bytes, shared);
        write_varint(&mut self.bytes, key.len() - shared);
        self.bytes.extend_from_slice(&key[shared..]);
        self.bytes.push(parts);
        self.previous.truncate(shared);
        self.previous.extend_from_slice(&key[shared..]);
        self.entries += 1;
    }

    fn finish(self) -> Run {
        Run { bytes: self.bytes, start: 0, base: Vec::new(), entries: self.entries }
    }
}

/// Reads a run's entries in order; `key` is the last one read.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    key: Vec<u8>,
}

impl<'a> Reader<'a> {
    fn new(run: &'a Run) -> Reader<'a> {
        Reader { bytes: &run.bytes, position: run.start, key: run.base.clone() }
    }

    /// Moves to the next entry and returns its parts, or `None` at the end.
    fn next(&mut self) -> Option<u8> {
        if self.position >= self.bytes.len() {
            return None;
        }
        let shared = read_varint(self.bytes, &mut self.position);
        let rest = read_varint(self.bytes, &mut self.position);
        self.key.truncate(shared);
        self.key.extend_from_slice(&self.bytes[self.position..self.position + rest]);
        self.position += rest;
        let parts = self.bytes[self.position];
        self.position += 1;
        Some(parts)
    }
}

/// One run holding the keys of both, a key in both with the union of its parts.
fn merge(older: &Run, newer: &Run) -> Run {
    let mut merged =
        RunWriter { bytes: Vec::with_capacity(older.bytes.len() + newer.bytes.len()), ..RunWriter::default() };
    let (mut left, mut right) = (Reader::new(older), Reader::new(newer));
    let (mut left_parts, mut right_parts) = (left.next(), right.next());
    loop {
        match (left_parts, right_parts) {
            (None, None) => break,
            (Some(parts), None) => {
                merged.push(&left.key, parts);
                left_parts = left.next();
            }
            (None, Some(parts)) => {
                merged.push(&right.key, parts);
                right_parts = right.next();
            }
            (Some(mine), Some(theirs)) => match left.key.cmp(&right.key) {
                std::cmp::Ordering::Less => {
                    merged.push(&left.key, mine);
                    left_parts = left.next();
                }
                std::cmp::Ordering::Greater => {
                    merged.push(&right.key, theirs);
                    right_parts = right.next();
                }
                std::cmp::Ordering::Equal => {
                    merged.push(&left.key, Parts::from_byte(mine).union(Parts::from_byte(theirs)).to_byte());
                    left_parts = left.next();
                    right_parts = right.next();
                }
            },
        }
    }
    merged.bytes.shrink_to_fit();
    merged.finish()
}

fn write_varint(bytes: &mut Vec<u8>, mut value: usize) {
    while value >= 0x80 {
        bytes.push((value as u8) | 0x80);
        value >>= 7;
    }
    bytes.push(value as u8);
}

fn read_varint(bytes: &[u8], position: &mut usize) -> usize {
    let mut value = 0;
    let mut shift = 0;
    loop {
        let byte = bytes[*position];
        *position += 1;
        value |= usize::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return value;
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Random;

    fn batch(random: &mut Random, documents: usize) -> DocumentsToRender {
        let mut batch = DocumentsToRender::default();
        for _ in 0..documents {
            let id = format!("LCC-{:010}", random.range(0, 5_000));
            let document = if random.chance(20) { PartyReferrer::License(id) } else { PartyReferrer::Work(id) };
            batch.insert(document, Parts::from_byte(random.range(0, 32) as u8));
        }
        batch
    }

    #[test]
    fn documents_come_out_as_a_map_of_every_batch_would_give_them() {
        let mut random = Random::new(7);
        let mut waiting = WaitingDocuments::default();
        let mut expected = DocumentsToRender::default();
        for round in 0..3 {
            for _ in 0..37 {
                let documents = batch(&mut random, 300);
                expected.merge(documents.clone());
                waiting.add(documents);
                assert!(waiting.runs.windows(2).all(|pair| pair[0].entries > pair[1].entries), "runs shrink");
            }
            assert!(waiting.len() >= expected.len(), "round {round}: each document counted at least once");
            let mut taken = DocumentsToRender::default();
            let mut first = true;
            while !waiting.is_empty() {
                let slice = waiting.take_first(701);
                if first {
                    assert_eq!(waiting.len() + slice.len(), expected.len(), "exact once merged");
                    first = false;
                }
                let keys: Vec<PartyReferrer> = slice.clone().into_sorted().map(|(document, _)| document).collect();
                assert!(
                    taken.clone().into_sorted().last().is_none_or(|(last, _)| keys.first().is_none_or(|next| {
                        matches!((&last, next), (PartyReferrer::Work(_), PartyReferrer::License(_))) || last < *next
                    })),
                    "slices come in key order, works first"
                );
                taken.merge(slice);
            }
            assert_eq!(taken, std::mem::take(&mut expected), "round {round}");
            assert_eq!((waiting.len(), waiting.bytes()), (0, 0));
        }
    }

    #[test]
    fn a_key_takes_a_few_bytes_and_long_shared_prefixes_cost_nothing() {
        let mut waiting = WaitingDocuments::default();
        let mut documents = DocumentsToRender::default();
        for index in 0..100_000 {
            documents.insert(PartyReferrer::Work(format!("LCC-{index:010}")), Parts::from_byte(31));
        }
        let long = "x".repeat(300);
        documents.insert(PartyReferrer::License(format!("{long}-1")), Parts::from_byte(0));
        documents.insert(PartyReferrer::License(format!("{long}-2")), Parts::from_byte(0));
        waiting.add(documents);
        assert!(waiting.bytes() < 100_000 * 7 + 2 * 310, "{} bytes", waiting.bytes());
        let all = waiting.take_first(usize::MAX);
        assert_eq!(all.len(), 100_002);
        let last: Vec<PartyReferrer> = all.into_sorted().skip(100_000).map(|(document, _)| document).collect();
        assert_eq!(last, [PartyReferrer::License(format!("{long}-1")), PartyReferrer::License(format!("{long}-2"))]);
    }
}
