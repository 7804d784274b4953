//! The projector's reads of its stored aggregate states.
//!
//! A point lookup descends the `(topic, id)` index from its root and compares
//! ids that share long prefixes at every level. Rendering deferred documents
//! asks for the states of every work in a range of ids, in id order: there
//! one scan of the range answers all of them, at the cost of a step per
//! row. A batch of events, on the other hand, asks for ids scattered over
//! the whole table, where a scan would step over rows nobody asked for. So a
//! run of sorted ids of one topic is scanned only while the scan keeps
//! finding what was asked: once it has stepped over more rows than
//! [`ROWS_SKIPPED_PER_KEY`] per key of the run, the rest of the run is read
//! by point lookups.
//!
//! This module only reads; the states are written by `writes`.

use rusqlite::{Connection, OptionalExtension, Statement, params};

use super::errors::from_sqlite;
use crate::store::{AggregateKey, StoreError, StoredAggregate};
use crate::stored_bodies;

/// Runs of fewer sorted keys are read by point lookups.
const SHORTEST_SCANNED_RUN: usize = 16;

/// How many rows nobody asked for a scan may step over, per key of its run,
/// before the rest of the run is read by point lookups. A step costs a
/// fraction of a lookup, so a scan that finds one key in every few rows
/// still saves time.
const ROWS_SKIPPED_PER_KEY: usize = 4;

/// The point lookup of one state, by topic and id.
const LOOK_UP_STATE: &str = "SELECT version, state FROM aggregates WHERE topic = ?1 AND id = ?2";

/// Stored states of `keys`, one per key in their order; `None` where there is none.
pub(super) fn aggregates(
    connection: &Connection,
    keys: &[AggregateKey],
) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
    let mut found: Vec<Option<StoredAggregate>> = keys.iter().map(|_| None).collect();
    let mut lookup = connection.prepare_cached(LOOK_UP_STATE).map_err(from_sqlite)?;
    let mut start = 0;
    while start < keys.len() {
        let end = end_of_sorted_run(keys, start);
        let (run, answers) = (&keys[start..end], &mut found[start..end]);
        let looked_up_from = if run.len() >= SHORTEST_SCANNED_RUN { scan(connection, run, answers)? } else { 0 };
        for (key, answer) in run[looked_up_from..].iter().zip(&mut answers[looked_up_from..]) {
            *answer = look_up(&mut lookup, key)?;
        }
        start = end;
    }
    Ok(found)
}

/// The end of the run of keys from `start` on that share its topic and
/// whose ids strictly increase.
fn end_of_sorted_run(keys: &[AggregateKey], start: usize) -> usize {
    let topic = &keys[start].topic;
    let mut end = start + 1;
    while end < keys.len() && keys[end].topic == *topic && keys[end].id > keys[end - 1].id {
        end += 1;
    }
    end
}

/// Scans the ids from the run's first to its last and fills in the answers
/// of the keys it meets. Returns the position of the first key left to look
/// up: the run's length when the scan went to its end.
fn scan(
    connection: &Connection,
    run: &[AggregateKey],
    answers: &mut [Option<StoredAggregate>],
) -> Result<usize, StoreError> {
    let (first, last) = (&run[0], &run[run.len() - 1]);
    let mut statement = connection
        .prepare_cached(
            "SELECT id, version, state FROM aggregates WHERE topic = ?1 AND id >= ?2 AND id <= ?3 ORDER BY id",
        )
        .map_err(from_sqlite)?;
    let mut rows = statement.query(params![first.topic, first.id, last.id]).map_err(from_sqlite)?;
    let skips_allowed = ROWS_SKIPPED_PER_KEY * run.len();
    let (mut next, mut skipped) = (0, 0);
    while let Some(row) = rows.next().map_err(from_sqlite)? {
        let id = row.get_ref(0).and_then(|value| Ok(value.as_str()?)).map_err(from_sqlite)?;
        // Keys before this row's id have no stored state.
        while next < run.len() && run[next].id.as_str() < id {
            next += 1;
        }
        if next == run.len() {
            break;
        }
        if run[next].id == id {
            answers[next] = Some(StoredAggregate {
                version: row.get::<_, i64>(1).map_err(from_sqlite)? as u64,
                state: stored_bodies::decompress(row.get(2).map_err(from_sqlite)?)?,
            });
            next += 1;
        } else {
            skipped += 1;
            if skipped > skips_allowed {
                return Ok(next);
            }
        }
    }
    Ok(run.len())
}

fn look_up(statement: &mut Statement<'_>, key: &AggregateKey) -> Result<Option<StoredAggregate>, StoreError> {
    let stored = statement
        .query_row(params![key.topic, key.id], |row| {
            Ok(StoredAggregate { version: row.get::<_, i64>(0)? as u64, state: row.get(1)? })
        })
        .optional()
        .map_err(from_sqlite)?;
    stored.map(|stored| Ok(StoredAggregate { state: stored_bodies::decompress(stored.state)?, ..stored })).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::schema;

    /// A model with the states of works 0, 2, 4, … 1,998 and of parties 0 to 99.
    fn model() -> Connection {
        let connection = schema::in_memory_model();
        let mut insert = connection
            .prepare("INSERT INTO aggregates (topic, id, version, state) VALUES (?1, ?2, ?3, ?4)")
            .expect("insert");
        for number in (0..2_000).step_by(2) {
            insert.execute(params!["works", work(number), number, format!("w{number}").into_bytes()]).expect("work");
        }
        for number in 0..100 {
            insert
                .execute(params!["parties", party(number), number, format!("p{number}").into_bytes()])
                .expect("party");
        }
        drop(insert);
        connection
    }

    fn work(number: i64) -> String {
        format!("LCC-{number:010}")
    }

    fn party(number: i64) -> String {
        format!("PTY-{number:07}")
    }

    fn key(topic: &str, id: String) -> AggregateKey {
        AggregateKey { topic: topic.to_owned(), id }
    }

    /// What point lookups alone answer.
    fn looked_up(connection: &Connection, keys: &[AggregateKey]) -> Vec<Option<StoredAggregate>> {
        let mut lookup = connection.prepare(LOOK_UP_STATE).expect("lookup");
        keys.iter().map(|key| look_up(&mut lookup, key).expect("lookup")).collect()
    }

    fn assert_answers_as_point_lookups(connection: &Connection, keys: &[AggregateKey]) {
        let answers = aggregates(connection, keys).expect("read");
        assert_eq!(answers, looked_up(connection, keys));
        assert!(answers.iter().any(Option::is_some) && answers.iter().any(Option::is_none), "both kinds asked");
    }

    #[test]
    fn a_dense_range_is_answered_as_point_lookups_would() {
        let keys: Vec<AggregateKey> = (100..400).map(|number| key("works", work(number))).collect();
        assert_answers_as_point_lookups(&model(), &keys);
    }

    #[test]
    fn scattered_keys_that_exhaust_the_scan_are_answered_as_point_lookups_would() {
        // Thirty keys spread over 1,800 stored rows: the scan gives up after 120 rows nobody asked for.
        let keys: Vec<AggregateKey> = (0..30).map(|index| key("works", work(1 + index * 60 + index % 2))).collect();
        assert_answers_as_point_lookups(&model(), &keys);
    }

    #[test]
    fn runs_of_several_topics_unsorted_and_short_keys_are_answered_as_point_lookups_would() {
        let mut keys: Vec<AggregateKey> = (0..40).map(|number| key("parties", party(number * 3))).collect();
        keys.extend((500..560).map(|number| key("works", work(number))));
        keys.extend([key("works", work(10)), key("works", work(8)), key("rights", work(8))]);
        keys.extend((1_990..2_010).rev().map(|number| key("works", work(number))));
        assert_answers_as_point_lookups(&model(), &keys);
    }

    #[test]
    fn a_scan_stops_once_it_has_stepped_over_enough_rows_nobody_asked_for() {
        let connection = model();
        // 16 keys: the first and last stored, the 14 between them absent and far apart from the last.
        let mut run: Vec<AggregateKey> = vec![key("works", work(0))];
        run.extend((0..14).map(|number| key("works", format!("LCC-{number:010}x"))));
        run.sort_by(|left, right| left.id.cmp(&right.id));
        run.push(key("works", work(1_998)));
        let mut answers: Vec<Option<StoredAggregate>> = run.iter().map(|_| None).collect();
        let looked_up_from = scan(&connection, &run, &mut answers).expect("scan");
        assert!(looked_up_from < run.len(), "the scan gave up after {} rows", ROWS_SKIPPED_PER_KEY * run.len());
        assert_eq!(answers[0].as_ref().map(|stored| stored.version), Some(0));

        let dense: Vec<AggregateKey> = (0..16).map(|number| key("works", work(number * 2))).collect();
        let mut answers: Vec<Option<StoredAggregate>> = dense.iter().map(|_| None).collect();
        assert_eq!(
            scan(&connection, &dense, &mut answers).expect("scan"),
            dense.len(),
            "a dense run is scanned to its end"
        );
        assert!(answers.iter().all(Option::is_some));
    }
}
