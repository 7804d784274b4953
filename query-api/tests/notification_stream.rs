//! The notification stream through the router: it sends what the pull feed
//! lists as server-sent events with the cursors as ids, resumes after a
//! `Last-Event-ID`, delivers a notification recorded while it is open,
//! bounds the streams of a key, and sends a client far behind to the pull feed.

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;
use read_model::notifications::{Answer, AnswerTags, Notification, NotificationWrite, Subject};
use read_model::{ModelVersion, ProjectionWrites, WriteBatch};
use serde_json::Value;
use support::{BASE, Service};

async fn open(service: &Service, key: &str, last_event_id: Option<&str>) -> Response {
    let mut request = Request::get(format!("{BASE}/notifications/stream")).header("x-api-key", key);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    service.send(request.body(Body::empty()).expect("request")).await
}

/// Reads events from a stream until `wanted` notifications came, within a deadline.
async fn notifications(response: &mut Response, wanted: usize) -> Vec<(String, Value)> {
    let mut text = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while events.len() < wanted {
        let frame = tokio::time::timeout_at(deadline, response.body_mut().frame())
            .await
            .expect("the notifications within the deadline")
            .expect("the stream is open")
            .expect("a frame");
        text.push_str(std::str::from_utf8(&frame.into_data().expect("data")).expect("text"));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let field = |name: &str| block.lines().find_map(|line| line.strip_prefix(name)).map(str::to_owned);
            if field("event: ").as_deref() == Some("notification") {
                let id = field("id: ").expect("an id");
                let data: Value = serde_json::from_str(&field("data: ").expect("data")).expect("JSON");
                assert_eq!(data["cursor"], id.as_str(), "the event's id is its cursor");
                events.push((id, data));
            }
        }
    }
    events
}

/// A notification of `id` as the store keeps it.
fn stored(id: &str, version: u64) -> Vec<u8> {
    let mut tags = AnswerTags::default();
    tags.set(Answer::Rights, Answer::Rights.tag(version.into()));
    let notification = Notification {
        subject: Subject::Work,
        id: id.to_owned(),
        version,
        withdrawn: false,
        changed: vec![Answer::Rights],
        tags,
        parties: Vec::new(),
    };
    notification.encode()
}

async fn pull_feed(service: &Service, key: &str) -> Vec<Value> {
    let (status, page, _) = service.get("/notifications?limit=1000", Some(key)).await;
    assert_eq!(status, StatusCode::OK);
    page["items"].as_array().expect("items").clone()
}

#[tokio::test]
async fn a_stream_sends_the_feed_resumes_after_the_last_event_and_delivers_what_comes_later() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let items = pull_feed(&service, &key).await;
    assert!(items.len() > 10);

    let mut stream = open(&service, &key, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(stream.headers()[header::CONTENT_TYPE], "text/event-stream");
    assert_eq!(stream.headers()["x-accel-buffering"], "no");
    assert!(!stream.headers().contains_key(header::ETAG), "a stream is not tagged");
    let streamed = notifications(&mut stream, items.len()).await;
    let data: Vec<&Value> = streamed.iter().map(|(_, data)| data).collect();
    assert_eq!(data, items.iter().collect::<Vec<_>>(), "the stream sends what the pull feed lists");
    drop(stream);

    let resume_after = items[9]["cursor"].as_str().expect("cursor");
    let mut resumed = open(&service, &key, Some(resume_after)).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let next = notifications(&mut resumed, 1).await;
    assert_eq!(next[0].1, items[10], "it continues after the last event received");

    let write =
        NotificationWrite { id: "SANDBOX-LCC-0001".into(), version: 99_999, body: stored("SANDBOX-LCC-0001", 99_999) };
    let batch = WriteBatch { notifications: vec![write], ..WriteBatch::default() };
    service.store.apply_batch(ModelVersion(1), Arc::new(batch)).await.expect("write");
    let rest = notifications(&mut resumed, items.len() - 10).await;
    let last = &rest.last().expect("events").1;
    assert_eq!((last["id"].as_str(), last["version"].as_u64()), (Some("SANDBOX-LCC-0001"), Some(99_999)));
}

#[tokio::test]
async fn a_key_holds_two_streams_and_a_client_far_behind_is_sent_to_the_pull_feed() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let first = open(&service, &key, None).await;
    let second = open(&service, &key, None).await;
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    let (status, problem, _) = support::split(open(&service, &key, None).await).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("too_many_streams")));
    drop(first);
    assert_eq!(open(&service, &key, None).await.status(), StatusCode::OK, "a closed stream gives its slot back");
    drop(second);

    let backlog = (0..1_000)
        .map(|index| {
            let (id, version) = (format!("SANDBOX-LCC-{index:04}"), 1_000_000 + index);
            NotificationWrite { body: stored(&id, version), id, version }
        })
        .collect();
    let batch = WriteBatch { notifications: backlog, ..WriteBatch::default() };
    service.store.apply_batch(ModelVersion(1), Arc::new(batch)).await.expect("write");
    let other = service.sandbox_key();
    let (status, problem, _) = support::split(open(&service, &other, None).await).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::CONFLICT, Some("far_behind")), "{problem}");
    assert!(problem["detail"].as_str().expect("detail").contains("/notifications"), "{problem}");
}
