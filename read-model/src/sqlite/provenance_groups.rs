//! A work's provenance as the SQLite store keeps it: the entries one batch
//! writes for a work share one row, keyed by the first of them, and a read
//! merges a work's rows back into its entries in serving order.
//!
//! Why: a sorted catch-up writes each work's history in one batch, four or
//! five entries of about 280 bytes. As rows of their own, each cost a zstd
//! frame, whose set-up is a third of its compression whatever its size,
//! and an insert, which carries the work's id and key again; together they
//! cost one of each, and a read of the work's provenance reads one row.
//!
//! A row holds either one entry as it is (a work with one entry in its
//! batch, and every row stored before grouping) or a group: a zero byte,
//! which no JSON text begins with, then each entry's key and body, each
//! length-prefixed. Groups written by different batches may interleave in
//! key order (topics are partitioned apart, so an entry recorded earlier
//! can arrive later), so each entry keeps its own key and a read sorts
//! them. An entry written again under its key (a batch applied twice) is
//! served once.
//!
//! The CQL backend keeps a row per entry: its batch is written in phases,
//! not one transaction, and a replay after a crash between them may write
//! the same entries in other groups, where a row per entry is rewritten in
//! place.
//!
//! It must not compress or write rows: the writer compresses and stores
//! the rows it gives; it only decompresses the rows a read found.

use crate::records::{Body, StoreError};
use crate::store::ProvenanceRow;
use crate::stored_bodies;

/// The first byte of a group.
const GROUP_MARKER: u8 = 0;

/// What orders a work's entries: recorded at (milliseconds since the
/// epoch), topic, aggregate version.
pub type ProvenanceKey = (i64, String, u64);

/// `rows` (the entries of a batch, in any order) as the rows to store: one
/// per work, keyed by its first entry, its entries in key order.
pub(super) fn group(rows: &[ProvenanceRow]) -> Vec<ProvenanceRow> {
    let mut entries: Vec<&ProvenanceRow> = rows.iter().collect();
    entries.sort_by(|left, right| (left.lcc_id.as_str(), key_of(left)).cmp(&(right.lcc_id.as_str(), key_of(right))));
    entries.dedup_by(|right, left| left.lcc_id == right.lcc_id && key_of(left) == key_of(right));
    entries
        .chunk_by(|left, right| left.lcc_id == right.lcc_id)
        .map(|work| {
            let first = work[0];
            let body = match work {
                [only] => only.body.clone(),
                _ => encode(work),
            };
            ProvenanceRow {
                lcc_id: first.lcc_id.clone(),
                recorded_at: first.recorded_at,
                topic: first.topic.clone(),
                aggregate_version: first.aggregate_version,
                body,
            }
        })
        .collect()
}

/// A work's entries, oldest first, as the store serves them, from its rows
/// as a model file holds them: each row's key and stored body (see
/// [`crate::stored_bodies`]). Public for programs that read a model file
/// directly: the end-to-end tests compare stores entry by entry, since two
/// stores of the same events group them by their own batches.
pub fn provenance_entries(rows: impl IntoIterator<Item = (ProvenanceKey, Vec<u8>)>) -> Result<Vec<Body>, StoreError> {
    let rows = rows
        .into_iter()
        .map(|(key, stored)| Ok((key, stored_bodies::decompress(stored)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    entries(rows)
}

/// A work's entries, oldest first, from its rows as read: each row's key
/// and its body as stored before compression.
fn entries(rows: impl IntoIterator<Item = (ProvenanceKey, Body)>) -> Result<Vec<Body>, StoreError> {
    let mut entries = Vec::new();
    for (key, body) in rows {
        if body.first() == Some(&GROUP_MARKER) {
            decode(&body, &mut entries)?;
        } else {
            entries.push((key, body));
        }
    }
    entries.sort_by(|left, right| left.0.cmp(&right.0));
    entries.dedup_by(|right, left| left.0 == right.0);
    Ok(entries.into_iter().map(|(_, body)| body).collect())
}

fn key_of(row: &ProvenanceRow) -> (i64, &str, u64) {
    (row.recorded_at, &row.topic, row.aggregate_version)
}

/// A group of `entries`: the marker, then for each entry its recorded-at
/// (8 bytes) and aggregate version (8 bytes), its topic's length (2 bytes)
/// and topic, its body's length (4 bytes) and body; integers little-endian.
/// Topics are the contract's names and bodies a few hundred bytes, so
/// their lengths fit.
fn encode(entries: &[&ProvenanceRow]) -> Body {
    let length = entries.iter().map(|entry| 22 + entry.topic.len() + entry.body.len()).sum::<usize>();
    let mut group = Vec::with_capacity(1 + length);
    group.push(GROUP_MARKER);
    for entry in entries {
        group.extend_from_slice(&entry.recorded_at.to_le_bytes());
        group.extend_from_slice(&entry.aggregate_version.to_le_bytes());
        group.extend_from_slice(&(entry.topic.len() as u16).to_le_bytes());
        group.extend_from_slice(entry.topic.as_bytes());
        group.extend_from_slice(&(entry.body.len() as u32).to_le_bytes());
        group.extend_from_slice(&entry.body);
    }
    group
}

/// Appends the entries of `group` to `entries`.
fn decode(group: &[u8], entries: &mut Vec<(ProvenanceKey, Body)>) -> Result<(), StoreError> {
    let mut rest = &group[1..];
    while !rest.is_empty() {
        let recorded_at = i64::from_le_bytes(take_array(&mut rest)?);
        let aggregate_version = u64::from_le_bytes(take_array(&mut rest)?);
        let topic_length = u16::from_le_bytes(take_array(&mut rest)?);
        let topic = std::str::from_utf8(take(&mut rest, usize::from(topic_length))?)
            .map_err(|_| corrupt("a topic that is not UTF-8"))?;
        let body_length = u32::from_le_bytes(take_array(&mut rest)?);
        let body = take(&mut rest, body_length as usize)?;
        entries.push(((recorded_at, topic.to_owned(), aggregate_version), body.to_vec()));
    }
    Ok(())
}

fn take<'a>(rest: &mut &'a [u8], length: usize) -> Result<&'a [u8], StoreError> {
    if rest.len() < length {
        return Err(corrupt("an entry cut short"));
    }
    let (taken, after) = rest.split_at(length);
    *rest = after;
    Ok(taken)
}

fn take_array<const N: usize>(rest: &mut &[u8]) -> Result<[u8; N], StoreError> {
    let mut array = [0; N];
    array.copy_from_slice(take(rest, N)?);
    Ok(array)
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("a provenance group holds {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lcc_id: &str, recorded_at: i64, topic: &str, version: u64) -> ProvenanceRow {
        ProvenanceRow {
            lcc_id: lcc_id.into(),
            recorded_at,
            topic: topic.into(),
            aggregate_version: version,
            body: format!("{{\"entry\":\"{lcc_id}/{recorded_at}/{topic}/{version}\"}}").into_bytes(),
        }
    }

    fn read(rows: &[ProvenanceRow]) -> Vec<String> {
        let rows =
            rows.iter().map(|row| ((row.recorded_at, row.topic.clone(), row.aggregate_version), row.body.clone()));
        entries(rows).expect("entries").into_iter().map(|body| String::from_utf8(body).expect("text")).collect()
    }

    #[test]
    fn a_batch_stores_one_row_per_work_keyed_by_its_first_entry() {
        let batch = [row("LCC-2", 30, "works", 2), row("LCC-1", 5, "works", 1), row("LCC-2", 10, "rights", 1)];
        let stored = group(&batch);
        let keys: Vec<_> =
            stored.iter().map(|row| (row.lcc_id.as_str(), row.recorded_at, row.topic.as_str())).collect();
        assert_eq!(keys, [("LCC-1", 5, "works"), ("LCC-2", 10, "rights")]);
        assert_eq!(stored[0].body, batch[1].body, "a work's only entry is stored as it is");
        assert_eq!(stored[1].body[0], GROUP_MARKER);
        assert_eq!(read(&stored[1..]), [r#"{"entry":"LCC-2/10/rights/1"}"#, r#"{"entry":"LCC-2/30/works/2"}"#]);
    }

    #[test]
    fn rows_of_several_batches_and_rows_stored_before_grouping_merge_in_key_order_once_each() {
        let first = group(&[row("LCC-1", 10, "works", 1), row("LCC-1", 40, "works", 2)]);
        let later = group(&[row("LCC-1", 20, "disputes", 1), row("LCC-1", 20, "certificates", 1)]);
        let again = group(&[row("LCC-1", 40, "works", 2), row("LCC-1", 10, "works", 1)]);
        let single = [row("LCC-1", 30, "rights", 1)];
        let rows: Vec<ProvenanceRow> = [first, later, again, single.to_vec()].concat();
        let expected = ["10/works/1", "20/certificates/1", "20/disputes/1", "30/rights/1", "40/works/2"]
            .map(|key| format!("{{\"entry\":\"LCC-1/{key}\"}}"));
        assert_eq!(read(&rows), expected);
    }

    #[test]
    fn a_group_cut_short_or_naming_a_topic_that_is_not_text_is_corrupt() {
        let stored = group(&[row("LCC-1", 10, "works", 1), row("LCC-1", 20, "works", 2)]);
        let key = (10, "works".to_owned(), 1);
        for length in [2, 17, 20, stored[0].body.len() - 1] {
            let cut = stored[0].body[..length].to_vec();
            let error = entries([(key.clone(), cut)]).expect_err("cut short");
            assert!(matches!(&error, StoreError::Corrupt(reason) if reason.contains("cut short")), "{error:?}");
        }
        let mut bad_topic = stored[0].body.clone();
        bad_topic[19] = 0xFF;
        let error = entries([(key, bad_topic)]).expect_err("not UTF-8");
        assert!(matches!(&error, StoreError::Corrupt(reason) if reason.contains("UTF-8")), "{error:?}");
    }
}
