//! The change feed and the snapshots through the router: a client that
//! follows the feed holds the export, every bad cursor, limit, snapshot,
//! file and range gets a precise problem, and nothing crosses audiences.

mod support;

use std::collections::BTreeMap;
use std::io::Read;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use read_model::{ModelVersion, ModelVersions};
use serde_json::Value;
use sha2::{Digest, Sha256};
use support::{BASE, Service, split};

/// Every item from `since` until caught up, with the last `next`.
async fn follow(service: &Service, key: &str, since: Option<&str>, limit: u32) -> (Vec<Value>, String) {
    let mut items = Vec::new();
    let mut since = since.map(str::to_owned);
    loop {
        let cursor = since.as_deref().map(|since| format!("&since={since}")).unwrap_or_default();
        let (status, page, _) = service.get(&format!("/bulk/changes?limit={limit}{cursor}"), Some(key)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let next = page["next"].as_str().expect("next").to_owned();
        items.extend(page["items"].as_array().expect("items").iter().cloned());
        if page["caughtUp"] == true {
            return (items, next);
        }
        since = Some(next);
    }
}

/// The copy a client holds after applying the items in order.
fn apply(items: &[Value]) -> BTreeMap<String, Value> {
    let mut copy = BTreeMap::new();
    for item in items {
        let lcc_id = item["lccId"].as_str().expect("lccId").to_owned();
        match item["kind"].as_str() {
            Some("upsert") => {
                copy.insert(lcc_id, item["row"].clone());
            }
            Some("withdrawn") => {
                assert!(item.get("row").is_none(), "a withdrawal carries no row: {item}");
                copy.remove(&lcc_id);
            }
            other => panic!("unknown kind {other:?}"),
        }
    }
    copy
}

async fn export(service: &Service, key: &str) -> BTreeMap<String, Value> {
    let (status, page, _) = service.get("/bulk/works?limit=1000", Some(key)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page["total"].as_u64().expect("total") < 1_000, "one page holds the test's export");
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|row| (row["lccId"].as_str().expect("id").to_owned(), row.clone()))
        .collect()
}

#[tokio::test]
async fn a_client_that_follows_the_feed_from_the_start_holds_the_export_of_its_audience() {
    let service = Service::start().await;
    let (items, _) = follow(&service, &service.full_key, None, 37).await;
    assert!(items.iter().all(|item| !item["lccId"].as_str().expect("id").starts_with("SANDBOX-")));
    let mut versions: BTreeMap<&str, u64> = BTreeMap::new();
    for item in &items {
        let version = item["version"].as_u64().expect("version");
        let previous = versions.insert(item["lccId"].as_str().expect("id"), version);
        assert!(previous.is_none_or(|previous| previous < version), "versions grow per work: {item}");
    }
    assert_eq!(apply(&items), export(&service, &service.full_key).await);

    let sandbox_key = service.sandbox_key();
    let (sandbox_items, _) = follow(&service, &sandbox_key, None, 1_000).await;
    assert!(sandbox_items.iter().all(|item| item["lccId"].as_str().expect("id").starts_with("SANDBOX-")));
    assert_eq!(apply(&sandbox_items), export(&service, &sandbox_key).await);
}

#[tokio::test]
async fn bad_cursors_and_limits_get_precise_problems_and_an_empty_page_keeps_its_cursor() {
    let service = Service::start().await;
    let key = &service.full_key;
    let problem = async |path: &str, key: &str| {
        let (status, body, _) = service.get(path, Some(key)).await;
        (status, body["code"].as_str().unwrap_or_default().to_owned())
    };
    for bad in ["nonsense", "c1.%21%21", "c1.MS5wLjE"] {
        assert_eq!(
            problem(&format!("/bulk/changes?since={bad}"), key).await,
            (StatusCode::BAD_REQUEST, "invalid_cursor".into()),
            "{bad}"
        );
    }
    for limit in ["0", "1001", "ten", "-1"] {
        assert_eq!(
            problem(&format!("/bulk/changes?limit={limit}"), key).await,
            (StatusCode::BAD_REQUEST, "invalid_parameter".into()),
            "{limit}"
        );
    }
    let sandbox_key = service.sandbox_key();
    let (_, sandbox_next) = follow(&service, &sandbox_key, None, 1_000).await;
    assert_eq!(
        problem(&format!("/bulk/changes?since={sandbox_next}"), key).await,
        (StatusCode::BAD_REQUEST, "cursor_of_another_audience".into())
    );
    let (_, next) = follow(&service, key, None, 1_000).await;
    assert_eq!(
        problem(&format!("/bulk/changes?since={next}"), &sandbox_key).await,
        (StatusCode::BAD_REQUEST, "cursor_of_another_audience".into())
    );
    let (status, page, _) = service.get(&format!("/bulk/changes?since={next}"), Some(key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["items"], serde_json::json!([]));
    assert_eq!(page["next"], next.as_str(), "an empty page returns the cursor to continue from");
    assert_eq!(page["caughtUp"], true);
    // Whitespace around a cursor is read past, and the page's own link
    // carries the cursor without it, so the link stays a URL.
    let (status, page, _) = service.get(&format!("/bulk/changes?since=%20{next}%0C&limit=5"), Some(key)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page["links"]["self"].as_str().expect("link").ends_with(&format!("?since={next}&limit=5")), "{page}");
}

#[tokio::test]
async fn a_cursor_of_a_replaced_model_version_is_gone_and_links_the_newest_snapshot() {
    let service = Service::start().await;
    let (_, next) = follow(&service, &service.full_key, None, 1_000).await;
    service.store.create_model_version(ModelVersion(2)).await.expect("create");
    service.store.activate_model_version(ModelVersion(2)).await.expect("activate");
    let (status, problem, _) = service.get(&format!("/bulk/changes?since={next}"), Some(&service.full_key)).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::GONE, Some("cursor_gone")), "{problem}");
    let (_, list, _) = service.get("/bulk/snapshots", Some(&service.full_key)).await;
    assert_eq!(problem["snapshot"], list["snapshots"][0]["manifest"]);
    assert!(
        problem["snapshot"]
            .as_str()
            .is_some_and(|link| link.starts_with("https://api.example.org/api/v1/public/v1/bulk/snapshots/"))
    );
}

async fn download(
    service: &Service,
    key: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut request = Request::get(format!("{BASE}{path}")).header("x-api-key", key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = service.send(request.body(Body::empty()).expect("request")).await;
    let (parts, body) = response.into_parts();
    (parts.status, parts.headers, body.collect().await.expect("body").to_bytes().to_vec())
}

#[tokio::test]
async fn snapshots_are_listed_described_and_downloaded_whole_or_from_an_offset() {
    let service = Service::start().await;
    let key = &service.full_key;
    let (status, list, _) = service.get("/bulk/snapshots", Some(key)).await;
    assert_eq!(status, StatusCode::OK);
    let snapshots = list["snapshots"].as_array().expect("snapshots");
    assert_eq!(snapshots.len(), 1);
    let id = snapshots[0]["snapshotId"].as_str().expect("id");
    let (status, manifest, _) = service.get(&format!("/bulk/snapshots/{id}"), Some(key)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(manifest["audience"], "production");
    let exported = export(&service, key).await;
    assert_eq!(manifest["rowCount"], exported.len() as u64);

    for file in manifest["files"].as_array().expect("files") {
        let name = file["name"].as_str().expect("name");
        let path = format!("/bulk/snapshots/{id}/files/{name}");
        let (status, headers, whole) = download(&service, key, &path, &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(whole.len() as u64, file["bytes"].as_u64().expect("bytes"));
        let sha256: String = Sha256::digest(&whole).iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(sha256, file["sha256"].as_str().expect("sha256"));
        let etag = format!("\"{sha256}\"");
        assert_eq!(headers[header::ETAG], etag.as_str());
        assert_eq!(headers[header::ACCEPT_RANGES], "bytes");
        assert_eq!(headers[header::CONTENT_LENGTH], whole.len().to_string().as_str());

        let (status, headers, rest) =
            download(&service, key, &path, &[("range", "bytes=100-"), ("if-range", &etag)]).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(rest, whole[100..]);
        assert_eq!(headers[header::CONTENT_RANGE], format!("bytes 100-{}/{}", whole.len() - 1, whole.len()).as_str());
        let (status, _, changed) =
            download(&service, key, &path, &[("range", "bytes=100-"), ("if-range", "\"other\"")]).await;
        assert_eq!((status, changed.len()), (StatusCode::OK, whole.len()), "a changed file is sent whole");
        let past_the_end = format!("bytes={}-", whole.len());
        let (status, headers, body) = download(&service, key, &path, &[("range", past_the_end.as_str())]).await;
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(headers[header::CONTENT_RANGE], format!("bytes */{}", whole.len()).as_str());
        let problem: Value = serde_json::from_slice(&body).expect("problem");
        assert_eq!(problem["code"], "range_not_satisfiable");

        if file["format"] == "ndjson.gz" {
            let mut text = String::new();
            flate2::read::GzDecoder::new(whole.as_slice()).read_to_string(&mut text).expect("gzip");
            let rows: BTreeMap<String, Value> = text
                .lines()
                .map(|line| serde_json::from_str::<Value>(line).expect("a row per line"))
                .map(|row| (row["lccId"].as_str().expect("id").to_owned(), row))
                .collect();
            assert_eq!(rows, exported, "the snapshot holds the export");
        }
    }

    let sandbox_key = service.sandbox_key();
    let (status, body, _) = service.get(&format!("/bulk/snapshots/{id}"), Some(&sandbox_key)).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "nothing across audiences");
    let (_, sandbox_list, _) = service.get("/bulk/snapshots", Some(&sandbox_key)).await;
    assert_eq!(sandbox_list["snapshots"][0]["rowCount"], 14);
    assert_ne!(sandbox_list["snapshots"][0]["snapshotId"], id);
    for missing in [
        "/bulk/snapshots/20990101T000000.000Z-v1",
        &format!("/bulk/snapshots/{id}/files/manifest.json"),
        &format!("/bulk/snapshots/{id}/files/..%2Fmanifest.json"),
        "/bulk/snapshots/..%2F..%2Fcatalog.sqlite",
    ] {
        let (status, body, _) = service.get(missing, Some(key)).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{missing}");
    }
    let (status, _, _) = service.get("/bulk/snapshots", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body, _) = split(
        service
            .send(
                Request::get(format!("{BASE}/bulk/snapshots"))
                    .header("x-api-key", service.issue_key(&[query_api::keys::Scope::RightsRead], 100).await)
                    .body(Body::empty())
                    .expect("request"),
            )
            .await,
    )
    .await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")));
}

fn bulk_row_batch(lcc_id: &str, title: &str) -> std::sync::Arc<read_model::WriteBatch> {
    let row = read_model::documents::BulkRow {
        lcc_id: lcc_id.into(),
        title: title.into(),
        iswc: None,
        isrcs: Vec::new(),
        work_type: read_model::documents::WorkType::MusicalWork,
        language: None,
        created_on: None,
        published_at: read_model::calendar::Timestamp(1_764_000_000_000),
        creators: Vec::new(),
        open_for_licensing: true,
    };
    let body = serde_json::to_vec(&row).expect("json");
    let row = read_model::KeyedWrite { key: lcc_id.into(), body: Some(body), version: read_model::WriteVersion(1) };
    std::sync::Arc::new(read_model::WriteBatch { bulk_rows: vec![row], ..read_model::WriteBatch::default() })
}

#[tokio::test]
async fn a_snapshot_is_due_once_the_feed_moves_and_is_quiet_or_a_rebuild_replaced_its_model_version() {
    use query_api::snapshots::schedule::cut_if_due;
    use query_api::snapshots::{SnapshotLibrary, SnapshotSchedule};
    use read_model::{Audience, ProjectionWrites};
    let service = Service::start().await;
    let schedule = SnapshotSchedule {
        library: SnapshotLibrary::new(service.store.directory().join("snapshots")),
        interval: std::time::Duration::from_secs(3_600),
        keep: 2,
        rows_per_file: 100,
        signer: std::sync::Arc::clone(&service.app.signer),
    };
    let long_running = std::time::Duration::from_secs(60);
    let due = async || cut_if_due(&service.store, &schedule, Audience::Production, long_running).await.expect("look");
    assert_eq!(due().await, None, "the newest snapshot is at the feed's newest change");

    service.store.apply_batch(ModelVersion(1), bulk_row_batch("LCC-9000000001", "New")).await.expect("write");
    let started = std::time::Instant::now();
    let cut = loop {
        if let Some(cut) = due().await {
            break cut;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "a quiet feed gets its snapshot");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(started.elapsed() >= query_api::snapshots::schedule::QUIET / 2, "not while the feed was moving");
    assert_eq!(due().await, None);
    let newest = schedule.library.latest(Audience::Production).expect("a snapshot");
    assert_eq!(newest.snapshot_id, cut);
    assert!(newest.files.len() > 2, "files of at most 100 rows");

    service.store.create_model_version(ModelVersion(2)).await.expect("create");
    service.store.activate_model_version(ModelVersion(2)).await.expect("activate");
    service.store.apply_batch(ModelVersion(2), bulk_row_batch("LCC-9000000002", "Rebuilt")).await.expect("write");
    let rebuilt = due().await.expect("a rebuild's snapshot is cut without waiting for quiet");
    let manifest = schedule.library.manifest(Audience::Production, &rebuilt).expect("manifest");
    assert_eq!((manifest.model_version, manifest.row_count), (2, 1));
    assert_eq!(schedule.library.list(Audience::Production).len(), 2, "the newest two are kept");
}
