//! `GET /notifications/stream`: the notification feed as server-sent
//! events, for a client that wants each notification as it is recorded
//! rather than polling.
//!
//! Each event is one notification (`event: notification`), its `id` the
//! item's cursor, so a client that reconnects with `Last-Event-ID` (or
//! `since`) continues after the last one it received and misses nothing.
//! The stream reads the store after its position each second while caught
//! up (replicas are stateless: each stream follows the store, not a
//! broadcast), sends a comment line as a heartbeat every 15 seconds so
//! that proxies and clients tell a quiet stream from a dead one, and tells
//! `X-Accel-Buffering: no` to nginx.
//!
//! A stream is counted once against the key's rate limit, when it opens. A
//! key holds at most [`MAX_STREAMS_PER_KEY`] on a replica. A client more
//! than a page of the pull feed behind is sent there (`409`) rather than
//! streamed a backlog, and a cursor the pull feed answers with `410` gets
//! the same `410` here. A stream that meets such a cursor later (a rebuild
//! switched model versions while it was open) sends `event: gone` with the
//! cursor to resume from and ends; so it does when the server shuts down,
//! and the client reconnects elsewhere.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use futures_util::stream;
use read_model::Audience;
use read_model::ModelVersion;
use read_model::change_feed::FeedPosition;
use tokio::time::Instant;

use super::notifications::{cursor_of, read_for_key};
use super::parameters::{NotificationsStreamQuery, QueryParameters};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;
use crate::keys::notification_filter::NotificationFilter;
use crate::notification_streams::{MAX_STREAMS_PER_KEY, StreamSlot};

/// How often a caught-up stream reads the store.
const POLL: Duration = Duration::from_secs(1);
/// How long a stream may send nothing before it sends a heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// Notifications read per store read; a client further behind than this at
/// opening is sent to the pull feed.
const PAGE: u32 = 1_000;

/// `GET /notifications/stream[?since=]`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/notifications/stream",
    operation_id = "streamNotifications",
    tag = "Notifications",
    summary = "The notification feed as server-sent events",
    description = "Not in the specification. The items of `GET /notifications` as they are recorded, as server-sent events (`text/event-stream`): each `event: notification` carries one item as its `data` and its cursor as its `id`. Resume after a disconnect with `Last-Event-ID` (what EventSource sends by itself) or `since`; a comment line every 15 s keeps a quiet stream alive. The stream counts as one request of the key's limit when it opens; a key holds at most 2 streams open on a replica (`429` past that). A client more than 1,000 notifications behind gets `409` and catches up with the pull feed first. A cursor that can no longer be continued from gets `410` as from the pull feed; if that happens while the stream is open (a rebuild), an `event: gone` carries the cursor to resume from and the stream ends. The stream also ends when the server shuts down: reconnect with `Last-Event-ID`.",
    params(NotificationsStreamQuery, ("Last-Event-ID" = Option<String>, Header, description = "The `id` of the last event received: the stream continues after it. Takes precedence over `since`.")),
    responses(
        (status = 200, description = "The stream.", body = String, content_type = "text/event-stream"),
        (status = 400, description = "The cursor is not a notification cursor of this service or of this key's audience.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The cursor is more than 1,000 notifications behind: read `GET /notifications` from it first.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 410, description = "The cursor can no longer be continued from; `resumeFrom` is a cursor at the feed's end.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["notifications:read"])),
)]
pub async fn stream(
    State(app): State<Arc<App>>,
    QueryParameters(query): QueryParameters<NotificationsStreamQuery>,
    credentials: Credentials,
    headers: HeaderMap,
) -> Response {
    app.answer_authorized(&credentials, Scope::NotificationsRead, None, async |granted| {
        let audience = granted.audience();
        let last_event_id = headers.get("last-event-id").and_then(|value| value.to_str().ok());
        let since = last_event_id.or(query.since.as_deref());
        let cursor = cursor_of(since, audience)?;
        let slot = app
            .notification_streams
            .take(&granted.principal.key_id)
            .ok_or(ApiError::TooManyStreams(MAX_STREAMS_PER_KEY))?;
        let filter = granted.principal.notification_filter.clone();
        let after = cursor.map(|cursor| (cursor.model_version, cursor.position));
        let page = read_for_key(app.store.as_ref(), audience, filter.as_deref(), after, PAGE).await?;
        if !page.exhausted {
            let since = since.map(|since| format!("?since={}", since.trim())).unwrap_or_default();
            return Err(ApiError::FarBehind { pull: app.public_url(&format!("/notifications{since}")) });
        }
        let mut live = Live {
            app: Arc::clone(&app),
            audience,
            filter,
            model_version: page.model_version,
            position: page.next,
            queue: VecDeque::new(),
            last_sent: Instant::now(),
            ended: false,
            _slot: slot,
        };
        for item in &page.items {
            live.queue.push_back(event("notification", item)?);
        }
        // Sent at once, so that the client knows the stream is open before the first notification.
        live.queue.push_front(Bytes::from_static(b": stream open\n\n"));
        let body = Body::from_stream(stream::unfold(live, |mut live| async move {
            let chunk = live.next_chunk().await?;
            Some((Ok::<Bytes, std::convert::Infallible>(chunk), live))
        }));
        let mut response = Response::new(body);
        let response_headers = response.headers_mut();
        response_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        response_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response_headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        Ok(response)
    })
    .await
}

/// An open stream: where it stands, and the events read but not sent yet.
struct Live {
    app: Arc<App>,
    audience: Audience,
    /// What the key's notifications are limited to.
    filter: Option<Arc<NotificationFilter>>,
    model_version: ModelVersion,
    position: FeedPosition,
    queue: VecDeque<Bytes>,
    last_sent: Instant,
    ended: bool,
    /// Held while the stream is open.
    _slot: StreamSlot,
}

impl Live {
    /// The next bytes to send, or `None` when the stream ends.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.queue.pop_front() {
                self.last_sent = Instant::now();
                return Some(chunk);
            }
            if self.ended || self.app.draining.load(Ordering::Acquire) {
                return None;
            }
            let after = Some((self.model_version, self.position.clone()));
            match read_for_key(self.app.store.as_ref(), self.audience, self.filter.as_deref(), after, PAGE).await {
                Ok(page) => {
                    for item in &page.items {
                        match event("notification", item) {
                            Ok(chunk) => self.queue.push_back(chunk),
                            Err(_) => self.end_with_error(),
                        }
                    }
                    self.model_version = page.model_version;
                    self.position = page.next;
                    if page.exhausted && self.queue.is_empty() {
                        let heartbeat_at = self.last_sent + HEARTBEAT;
                        let wake = (Instant::now() + POLL).min(heartbeat_at);
                        tokio::time::sleep_until(wake).await;
                        if Instant::now() >= heartbeat_at {
                            self.queue.push_back(Bytes::from_static(b": heartbeat\n\n"));
                        }
                    }
                }
                Err(ApiError::NotificationsGone { resume_from, .. }) => {
                    let data = serde_json::json!({ "resumeFrom": resume_from });
                    self.queue.push_back(event_bytes("gone", None, &data.to_string()));
                    self.ended = true;
                }
                Err(error) => {
                    tracing::warn!(%error, "a notification stream could not read the store; it ends");
                    self.end_with_error();
                }
            }
        }
    }

    fn end_with_error(&mut self) {
        self.queue.push_back(event_bytes(
            "error",
            None,
            "{\"detail\":\"the stream failed; reconnect with Last-Event-ID\"}",
        ));
        self.ended = true;
    }
}

/// One notification as an event.
fn event(name: &str, item: &super::notifications::NotificationItem) -> Result<Bytes, ApiError> {
    let data = serde_json::to_string(item).map_err(|_| ApiError::Internal)?;
    Ok(event_bytes(name, Some(&item.cursor), &data))
}

/// An event's lines; `data` is one line of JSON, which never holds a line break.
fn event_bytes(name: &str, id: Option<&str>, data: &str) -> Bytes {
    let id = id.map(|id| format!("id: {id}\n")).unwrap_or_default();
    Bytes::from(format!("event: {name}\n{id}data: {data}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_has_its_name_id_and_one_data_line() {
        let bytes = event_bytes("notification", Some("n1.abc"), r#"{"id":"LCC-1"}"#);
        assert_eq!(&bytes[..], b"event: notification\nid: n1.abc\ndata: {\"id\":\"LCC-1\"}\n\n");
        assert_eq!(&event_bytes("gone", None, "{}")[..], b"event: gone\ndata: {}\n\n");
    }
}
