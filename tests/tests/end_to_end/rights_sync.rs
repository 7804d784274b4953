//! `rights-sync` against the real service and the real projector: a copy
//! built from a signed snapshot whose first file's download an earlier run
//! left half done, kept current while the projector applies the rest of the
//! stream, killed at random points, and re-synchronised after a rebuild made
//! its cursor unusable; each time equal, row for row and byte for byte, to
//! `/bulk/works`. A manifest or file changed by one byte, and a pinned key
//! set without the signing key, each stop the run with its reason and leave
//! the copy as it was. DuckDB reads the SQLite and Parquet copies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{
    BASE_PATH, KillOnDrop, avro_files_in, binary, copy_files, http, issue_production_key, project,
    require_external_tool, serve_quietly, sigkill_after, wait_until_the_feed_settles, workspace_root,
};
use projector::generate::{GenerateOptions, generate};
use read_model::change_feed::{FeedCursor, FeedPosition};
use read_model::{Audience, ModelVersion};
use serde_json::Value;
use serde_json::value::RawValue;

/// A run of `rights-sync`: its exit status, summary line and standard error.
struct SyncRun {
    code: Option<i32>,
    summary: Value,
    stderr: String,
}

fn rights_sync(base_url: &str, key: &str, into: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(binary("rights-sync"));
    command.args(["--from", base_url, "--key", key]).arg("--into").arg(into).args(extra).env("RUST_LOG", "info");
    command
}

fn sync(base_url: &str, key: &str, into: &Path, extra: &[&str]) -> SyncRun {
    let output = rights_sync(base_url, key, into, extra).output().expect("rights-sync starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    SyncRun {
        code: output.status.code(),
        summary: stdout.lines().last().and_then(|line| serde_json::from_str(line).ok()).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn caught_up(run: SyncRun) -> Value {
    assert_eq!(run.code, Some(0), "rights-sync did not catch up:\n{}\n{}", run.summary, run.stderr);
    assert_eq!(run.summary["outcome"], "caught_up");
    run.summary
}

/// Every row of `/bulk/works`, as served, by lccId.
fn export(address: &str, key: &str) -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    for page in 1.. {
        let path = format!("{BASE_PATH}/bulk/works?page={page}&limit=1000");
        let (status, _, body) = http(address, "GET", &path, &[("x-api-key", key)], "");
        assert_eq!(status, 200, "{body}");
        let members: BTreeMap<String, Box<RawValue>> = serde_json::from_str(&body).expect("a bulk page");
        let total: u64 = serde_json::from_str(members["total"].get()).expect("total");
        let items: Vec<Box<RawValue>> = serde_json::from_str(members["items"].get()).expect("items");
        for item in items {
            let row: Value = serde_json::from_str(item.get()).expect("a row");
            rows.insert(row["lccId"].as_str().expect("lccId").to_owned(), item.get().to_owned());
        }
        if rows.len() as u64 >= total {
            return rows;
        }
    }
    unreachable!("pages run out before the rows do")
}

/// Every row of the copy, by lccId, and where its state stands; nothing
/// when a run was killed before it created the copy's tables.
fn copied(copy: &Path) -> (BTreeMap<String, String>, Option<(String, String)>) {
    let connection = rusqlite::Connection::open(copy).expect("the copy opens");
    let tables: u32 = connection
        .query_row("SELECT count(*) FROM sqlite_master WHERE name IN ('works', 'sync_state')", [], |row| row.get(0))
        .expect("the copy's tables");
    if tables < 2 {
        return (BTreeMap::new(), None);
    }
    let mut statement = connection.prepare("SELECT lcc_id, row_json FROM works").expect("works");
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("rows")
        .collect::<Result<BTreeMap<String, String>, _>>()
        .expect("rows read");
    let state = connection
        .query_row("SELECT snapshot_id, cursor FROM sync_state", [], |row| Ok((row.get(0)?, row.get(1)?)))
        .ok();
    (rows, state)
}

fn assert_equal_to_the_export(copy: &Path, address: &str, key: &str) -> usize {
    let (rows, _) = copied(copy);
    let served = export(address, key);
    assert_eq!(rows.len(), served.len(), "the copy holds every published work and no other");
    let differing: Vec<&String> =
        served.iter().filter(|(id, row)| rows.get(*id) != Some(row)).map(|(id, _)| id).collect();
    assert!(differing.is_empty(), "rows differ from /bulk/works: {:?}", &differing[..differing.len().min(5)]);
    rows.len()
}

/// A registry of 3,000 works in `directory`: the first two segments
/// projected into `data` and a snapshot cut (files of 500 rows), the rest
/// of the stream returned for later.
fn registry(directory: &Path, data: &Path) -> (PathBuf, Vec<PathBuf>) {
    let generated = directory.join("generated");
    generate(&GenerateOptions { works: 3_000, seed: 31, events_per_segment: 4_000, sandbox: false }, &generated)
        .expect("generate");
    let files = avro_files_in(&generated);
    let (first, rest) = files.split_at(12);
    let events = directory.join("events");
    std::fs::create_dir_all(&events).expect("events directory");
    copy_files(first, &events);
    project(&events, data, 1_000);
    cut_snapshot(data);
    (events, rest.to_vec())
}

/// A registry (see [`registry`]) served by `query-api`, with a production
/// key for bulk reads, once its change feed has settled.
struct Served {
    directory: tempfile::TempDir,
    data: PathBuf,
    /// The events projected so far, and the rest of the stream.
    events: PathBuf,
    rest: Vec<PathBuf>,
    address: String,
    base_url: String,
    key: String,
    server: KillOnDrop,
}

impl Served {
    fn start() -> Served {
        let directory = tempfile::tempdir().expect("tempdir");
        let data = directory.path().join("data");
        let (events, rest) = registry(directory.path(), &data);
        let (server, address) = serve_quietly(&data);
        let base_url = format!("http://{address}{BASE_PATH}");
        let key = issue_production_key(&data, &["bulk:read"], 1_000_000);
        wait_until_the_feed_settles(&address, &key);
        Served { directory, data, events, rest, address, base_url, key, server: KillOnDrop(server) }
    }
}

fn cut_snapshot(data: &Path) {
    let cut = Command::new(binary("query-api"))
        .args(["snapshot", "--audience", "production", "--rows-per-file", "500", "--data-dir"])
        .arg(data)
        .env("RUST_LOG", "warn")
        .output()
        .expect("query-api snapshot");
    assert!(cut.status.success(), "{}", String::from_utf8_lossy(&cut.stderr));
}

/// The newest production snapshot's manifest as the registry serves it.
fn newest_manifest(address: &str, key: &str) -> Value {
    let (_, _, body) = http(address, "GET", &format!("{BASE_PATH}/bulk/snapshots"), &[("x-api-key", key)], "");
    let list: Value = serde_json::from_str(&body).expect("snapshot list");
    let id = list["snapshots"][0]["snapshotId"].as_str().expect("a snapshot").to_owned();
    let (_, _, body) = http(address, "GET", &format!("{BASE_PATH}/bulk/snapshots/{id}"), &[("x-api-key", key)], "");
    serde_json::from_str(&body).expect("manifest")
}

#[test]
fn rights_sync_copies_a_signed_snapshot_and_follows_the_feed_to_a_copy_equal_to_the_export() {
    require_external_tool("python3");
    let Served { directory, data, events, rest, address, base_url, key, server: _server } = Served::start();

    // An earlier run stopped halfway through the first file's download.
    let copy = directory.path().join("copy.sqlite");
    let manifest = newest_manifest(&address, &key);
    let snapshot = manifest["snapshotId"].as_str().expect("id");
    let first = &manifest["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|file| file["format"] == "ndjson.gz")
        .expect("an NDJSON file");
    let name = first["name"].as_str().expect("name");
    let whole = std::fs::read(only_snapshot_directory(&data).join(name)).expect("the snapshot's file");
    let partial = directory.path().join("copy.sqlite.downloads").join(snapshot);
    std::fs::create_dir_all(&partial).expect("downloads directory");
    std::fs::write(partial.join(name), &whole[..whole.len() / 2]).expect("half a file");

    let first_run = sync(&base_url, &key, &copy, &[]);
    assert!(first_run.stderr.contains("resuming an interrupted download"), "{}", first_run.stderr);
    let summary = caught_up(first_run);
    assert_eq!(summary["snapshotRows"], manifest["rowCount"], "{summary}");
    assert!(!partial.exists(), "loaded snapshot files are removed");
    let rows = assert_equal_to_the_export(&copy, &address, &key);
    eprintln!("rights-sync loaded a snapshot of {rows} works, resuming its first file at byte {}", whole.len() / 2);

    // The projector applies the rest of the stream while `--follow` keeps the copy current.
    let mut follower = KillOnDrop(
        rights_sync(&base_url, &key, &copy, &["--follow", "--poll-seconds", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rights-sync --follow starts"),
    );
    copy_files(&rest, &events);
    project(&events, &data, 200);
    wait_until_the_feed_settles(&address, &key);
    let started = Instant::now();
    while copied(&copy).0 != export(&address, &key) {
        assert!(follower.0.try_wait().expect("wait").is_none(), "rights-sync --follow stopped");
        assert!(started.elapsed() < Duration::from_secs(60), "the followed copy did not reach the export");
        std::thread::sleep(Duration::from_millis(200));
    }
    follower.0.kill().expect("stop following");
    follower.0.wait().expect("reaped");
    let connection = rusqlite::Connection::open(&copy).expect("copy");
    let items: u64 =
        connection.query_row("SELECT sum(feed_items) FROM sync_runs", [], |row| row.get(0)).expect("the runs' items");
    assert!(items > 100, "the feed amended and withdrew works: {items} items");
    let summary = caught_up(sync(&base_url, &key, &copy, &["--check"]));
    assert_eq!(summary["check"]["equal"], true, "{summary}");
    let rows = assert_equal_to_the_export(&copy, &address, &key);
    eprintln!("rights-sync --follow applied {items} feed items while the projector ran; {rows} works equal");

    // A row changed in the copy is what --check reports.
    let changed = connection
        .query_row("SELECT lcc_id FROM works ORDER BY lcc_id LIMIT 1", [], |row| row.get::<_, String>(0))
        .expect("a work");
    connection
        .execute(
            "UPDATE works SET row_json = replace(row_json, '\"title\":\"', '\"title\":\"!') WHERE lcc_id = ?1",
            [&changed],
        )
        .expect("change a row");
    let run = sync(&base_url, &key, &copy, &["--check"]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.summary, run.stderr);
    assert_eq!(run.summary["check"]["differing"], 1, "{}", run.summary);
    assert_eq!(run.summary["check"]["firstDiffering"][0], changed.as_str(), "{}", run.summary);

    // The Parquet form, and both read by DuckDB.
    let parquet = directory.path().join("parquet");
    caught_up(sync(&base_url, &key, &parquet, &["--format", "parquet"]));
    let output = Command::new("python3")
        .arg(workspace_root().join("tests/catalogue/read_copy.py"))
        .arg(&copy)
        .arg(parquet.join("works.parquet"))
        .output()
        .expect("python3");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let read: Value = serde_json::from_slice(&output.stdout).expect("a report");
    eprintln!("DuckDB read the copies: {read}");
    assert_eq!(read["sqliteRows"].as_u64(), Some(rows as u64), "{read}");
    assert_eq!(read["sameWorks"], true, "{read}");
}

#[test]
fn rights_sync_killed_at_random_points_resumes_and_ends_equal_to_the_export() {
    let Served { directory, data, events, rest, address, base_url, key, server: _server } = Served::start();
    copy_files(&rest, &events);
    project(&events, &data, 200);
    wait_until_the_feed_settles(&address, &key);

    // How long a whole run takes here, so that kills land throughout one.
    let scratch = directory.path().join("scratch.sqlite");
    let started = Instant::now();
    caught_up(sync(&base_url, &key, &scratch, &[]));
    let whole_run = started.elapsed();
    let snapshot_cursor = copied(&scratch).1.map(|(_, cursor)| cursor);

    // One copy killed once before its snapshot is loaded (a new copy is
    // begun until a kill lands there), then at pseudo-random instants of a
    // run's first third; another killed each time a feed page has
    // committed. Each restart continues the copy the killed run left.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut random_instant = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let third = u64::try_from(whole_run.as_millis() / 3).unwrap_or(u64::MAX).max(2);
        Duration::from_millis(1 + seed % third)
    };
    let early = directory.path().join("killed-early.sqlite");
    let mut early_kills = BTreeMap::from([("before the snapshot was loaded", 0)]);
    for _ in 0..50 {
        let mut child = rights_sync(&base_url, &key, &early, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rights-sync starts");
        if sigkill_after(&mut child, random_instant()) && copied(&early).1.is_none() {
            early_kills.insert("before the snapshot was loaded", 1);
            break;
        }
        for file in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{file}", early.display()));
        }
    }
    for (phase, kills) in kill_five_times(&base_url, &key, &early, snapshot_cursor.as_deref(), |child, _| {
        sigkill_after(child, random_instant())
    }) {
        *early_kills.entry(phase).or_default() += kills;
    }
    let along = directory.path().join("killed-along-the-feed.sqlite");
    let along_kills = kill_five_times(&base_url, &key, &along, snapshot_cursor.as_deref(), |child, copy| {
        kill_once_along_the_feed(child, copy, snapshot_cursor.as_deref())
    });
    eprintln!("rights-sync killed: {early_kills:?}, then {along_kills:?} (a whole run takes {whole_run:?})");
    assert!(early_kills["before the snapshot was loaded"] >= 1, "{early_kills:?}");
    assert_eq!(along_kills.get("along the feed"), Some(&5), "{along_kills:?}");
    for copy in [&early, &along] {
        caught_up(sync(&base_url, &key, copy, &[]));
        let rows = assert_equal_to_the_export(copy, &address, &key);
        eprintln!("after the kills, the next run ended with {rows} works equal to the export");
    }
}

/// Runs rights-sync on `copy` until `kill` has killed five runs (a run
/// that catches up first makes way for a new copy); returns where each
/// kill left the copy.
fn kill_five_times(
    base_url: &str,
    key: &str,
    copy: &Path,
    snapshot_cursor: Option<&str>,
    mut kill: impl FnMut(&mut std::process::Child, &Path) -> bool,
) -> BTreeMap<&'static str, u32> {
    let mut kills = BTreeMap::new();
    for _ in 0..100 {
        if kills.values().sum::<u32>() == 5 {
            break;
        }
        let mut child = rights_sync(base_url, key, copy, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rights-sync starts");
        if kill(&mut child, copy) {
            let phase = match copied(copy).1 {
                None => "before the snapshot was loaded",
                Some((_, cursor)) if Some(cursor.as_str()) == snapshot_cursor => "at the snapshot's cursor",
                Some(_) => "along the feed",
            };
            *kills.entry(phase).or_default() += 1;
        } else {
            std::fs::remove_file(copy).expect("remove the copy");
        }
    }
    assert_eq!(kills.values().sum::<u32>(), 5, "five runs killed");
    kills
}

/// Kills `child` once the copy's cursor has moved past the snapshot's (a
/// feed page committed); returns whether it was still running then.
fn kill_once_along_the_feed(child: &mut std::process::Child, copy: &Path, snapshot_cursor: Option<&str>) -> bool {
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() && started.elapsed() < Duration::from_secs(60) {
        let moved = copy.exists() && copied(copy).1.is_some_and(|(_, cursor)| Some(cursor.as_str()) != snapshot_cursor);
        if moved {
            return sigkill_after(child, Duration::ZERO);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    sigkill_after(child, Duration::ZERO)
}

#[test]
fn a_snapshot_that_does_not_verify_stops_rights_sync_and_leaves_the_copy_as_it_was() {
    let Served { directory, data, address, base_url, key, server: _server, .. } = Served::start();
    let copy = directory.path().join("copy.sqlite");
    let failed = |run: SyncRun, reason: &str| {
        assert_eq!(run.code, Some(1), "{}\n{}", run.summary, run.stderr);
        assert!(run.stderr.contains(reason), "the message says {reason:?}:\n{}", run.stderr);
        let (rows, state) = copied(&copy);
        assert!(rows.is_empty() && state.is_none(), "the copy is as it was: empty");
    };

    // A key set that does not hold the signing key.
    let other_keys = directory.path().join("other-keys.json");
    let (_, _, sandbox_keys) = http(&address, "GET", &format!("{BASE_PATH}/keys?audience=sandbox"), &[], "");
    std::fs::write(&other_keys, sandbox_keys).expect("key set");
    let run = sync(&base_url, &key, &copy, &["--keys", other_keys.to_str().expect("path")]);
    failed(run, "the key set has no key");

    // One byte of the manifest changed.
    let manifest_file = only_snapshot_directory(&data).join("manifest.json");
    let original = std::fs::read_to_string(&manifest_file).expect("manifest");
    // The first digit of the row count, one byte, becomes another digit.
    let digit = original
        .find("\"rowCount\"")
        .and_then(|at| original[at..].find(|c: char| c.is_ascii_digit()).map(|offset| at + offset))
        .expect("a row count");
    let mut changed = original.clone().into_bytes();
    changed[digit] = if changed[digit] == b'1' { b'2' } else { b'1' };
    std::fs::write(&manifest_file, &changed).expect("manifest changed");
    failed(sync(&base_url, &key, &copy, &[]), "was changed after key");
    std::fs::write(&manifest_file, &original).expect("manifest restored");

    // One byte of a file changed.
    let manifest: Value = serde_json::from_str(&original).expect("manifest");
    let name = manifest["files"][0]["name"].as_str().expect("name");
    let file = only_snapshot_directory(&data).join(name);
    let mut bytes = std::fs::read(&file).expect("file");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&file, &bytes).expect("file changed");
    failed(sync(&base_url, &key, &copy, &[]), "does not match its signed manifest");
}

/// The directory of the one production snapshot in `data`.
fn only_snapshot_directory(data: &Path) -> PathBuf {
    let production = data.join("snapshots/production");
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(&production).expect("snapshots").map(|entry| entry.expect("entry").path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries.remove(0)
}

#[test]
fn cursors_the_feed_no_longer_continues_from_make_rights_sync_resynchronise_from_the_newest_snapshot() {
    let Served { directory, data, events, rest, address, base_url, key, server: _server } = Served::start();
    let copy = directory.path().join("copy.sqlite");
    caught_up(sync(&base_url, &key, &copy, &[]));

    // A cursor past every change the feed holds, as one behind what retention removed, is gone (410).
    let gone = FeedCursor {
        model_version: ModelVersion(1),
        audience: Audience::Production,
        position: FeedPosition { sequence: i64::MAX >> 1, lcc_id: String::new() },
    };
    let connection = rusqlite::Connection::open(&copy).expect("copy");
    connection.execute("UPDATE sync_state SET cursor = ?1", [gone.encode()]).expect("an unusable cursor");
    let run = sync(&base_url, &key, &copy, &[]);
    assert!(run.stderr.contains("no longer retained"), "{}", run.stderr);
    assert_eq!(caught_up(run)["resynchronisations"], 1);
    assert_equal_to_the_export(&copy, &address, &key);

    // A rebuild of the whole stream into model version 2, activated, and a snapshot of it.
    copy_files(&rest, &events);
    let projector = |arguments: &[&str]| {
        let output = Command::new(binary("projector"))
            .args(arguments)
            .arg("--data-dir")
            .arg(&data)
            .env("RUST_LOG", "warn")
            .output()
            .expect("projector");
        assert!(output.status.success(), "projector {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    let source = format!("file://{}", events.display());
    projector(&[
        "rebuild",
        "--into",
        "2",
        "--source",
        &source,
        "--admin-listen",
        "127.0.0.1:0",
        "--exit-when-caught-up",
    ]);
    projector(&["activate", "2"]);
    cut_snapshot(&data);
    let (_, state) = copied(&copy);
    let (_, cursor) = state.expect("the copy's state");
    let started = Instant::now();
    // The service reads the active version again within seconds.
    while http(&address, "GET", &format!("{BASE_PATH}/bulk/changes?since={cursor}"), &[("x-api-key", &key)], "").0
        != 410
    {
        assert!(started.elapsed() < Duration::from_secs(30), "the service did not switch to version 2");
        std::thread::sleep(Duration::from_millis(100));
    }

    let run = sync(&base_url, &key, &copy, &[]);
    assert!(run.stderr.contains("re-synchronising from the newest snapshot"), "{}", run.stderr);
    let summary = caught_up(run);
    assert_eq!(summary["resynchronisations"], 1, "{summary}");
    let rows = assert_equal_to_the_export(&copy, &address, &key);
    let (_, state) = copied(&copy);
    let snapshot = newest_manifest(&address, &key)["snapshotId"].as_str().expect("id").to_owned();
    assert_eq!(state.map(|(id, _)| id), Some(snapshot), "the copy stands on the new snapshot");
    eprintln!("after a rebuild the copy re-synchronised from the newest snapshot: {rows} works equal");

    // On a terminal, a new copy shows its progress on one line rewritten in place.
    let command = format!(
        "exec {} --from {base_url} --key {key} --into {}",
        binary("rights-sync").display(),
        directory.path().join("on-a-terminal.sqlite").display()
    );
    let output = Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("util-linux's script runs");
    let terminal = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{terminal}");
    let lines: Vec<&str> = terminal.split("\r\x1b[2K").map(str::trim_end).collect();
    let manifest = newest_manifest(&address, &key);
    let files =
        manifest["files"].as_array().expect("files").iter().filter(|file| file["format"] == "ndjson.gz").count();
    let downloading = format!("downloading file {files} of {files}");
    assert!(lines.iter().any(|line| line.contains(&downloading)), "{downloading:?}: {terminal:?}");
    let last = format!("rights-sync: {rows} snapshot rows, 0 feed items applied");
    assert!(lines.iter().any(|line| line.starts_with(&last)), "the last status line: {terminal:?}");
}

#[test]
fn rights_sync_waits_for_the_keys_rate_limit_rather_than_being_refused() {
    let Served { directory, data, address, base_url, key: unlimited, server: _server, .. } = Served::start();
    // A run asks for the snapshot list, its manifest, the key set, four files and the feed's pages.
    let key = issue_production_key(&data, &["bulk:read"], 5);
    let copy = directory.path().join("copy.sqlite");
    let run = sync(&base_url, &key, &copy, &[]);
    assert!(run.stderr.contains("waiting for the key's rate limit"), "{}", run.stderr);
    assert!(!run.stderr.contains("(429)"), "no request was refused:\n{}", run.stderr);
    caught_up(run);
    let rows = assert_equal_to_the_export(&copy, &address, &unlimited);
    eprintln!("with a key of 5 requests a minute, rights-sync waited and copied {rows} works");
}
