//! The direct path of the rights lookup (`routes::direct`) answers exactly
//! as the router does. Each case sends the same request to the public
//! router, which takes plain `GET /rights/{lccId}` requests before its axum
//! router, and to that axum router alone (`PublicRouter::routed`). Each side
//! has its own key with the same scopes and limit, so that the quotas match.
//! Compared: the status, every header the client receives but the date and
//! a made request id, and the body.

mod support;

use std::sync::Arc;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{Request, StatusCode, header};
use query_api::connection::Connection;
use query_api::keys::Scope;
use query_api::keys::memo::KeyMemo;
use query_api::routes::{PublicRouter, router};
use support::{BASE, Service};
use tower::ServiceExt;

/// A status, the headers that must match (sorted, each value as text), and the body.
type Answer = (StatusCode, Vec<(String, String)>, Bytes);

/// How each side's request is made: its path and headers, the key given by the side.
struct Case {
    name: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    /// How many times it is sent in a row (the last answers are compared too).
    times: usize,
}

async fn answer(service: &PublicRouter, direct: bool, request: Request<Body>, given_id: bool) -> Answer {
    let response = if direct {
        service.clone().oneshot(request).await.expect("infallible")
    } else {
        service.clone().routed().oneshot(request).await.expect("infallible")
    };
    let status = response.status();
    let mut headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| *name != header::DATE && (given_id || name.as_str() != "x-request-id"))
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().expect("text").to_owned()))
        .collect();
    // hyper sends the length of a body of known size when the answer does
    // not name it, as it does for the direct path's (the router's routes
    // name it themselves): that is the header the client receives.
    if let Some(length) = response.body().size_hint().exact()
        && !response.headers().contains_key(header::CONTENT_LENGTH)
    {
        headers.push((header::CONTENT_LENGTH.as_str().to_owned(), length.to_string()));
    }
    headers.sort();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
    (status, headers, body)
}

/// Sends `case` to both sides, the direct side with the first key and the
/// router with the second, and returns the statuses they agreed on.
async fn compare(router: &PublicRouter, case: &Case, keys: [Option<String>; 2]) -> Vec<StatusCode> {
    let given_id = case.headers.iter().any(|(name, _)| *name == "x-request-id");
    let mut statuses = Vec::new();
    for _ in 0..case.times {
        let mut answers = Vec::new();
        for (direct, key) in [true, false].into_iter().zip(&keys) {
            let mut request = Request::get(format!("{BASE}{}", case.path));
            if let Some(key) = key {
                request = request.header("x-api-key", key);
            }
            for (name, value) in &case.headers {
                request = request.header(*name, value);
            }
            answers.push(answer(router, direct, request.body(Body::empty()).expect("request"), given_id).await);
        }
        assert_eq!(answers[0], answers[1], "{}: the direct path and the router answer alike", case.name);
        statuses.push(answers[0].0);
    }
    statuses
}

/// Two production keys alike, one for each side.
async fn two_keys(service: &Service, scopes: &[Scope], rate_limit: u32) -> [Option<String>; 2] {
    [Some(service.issue_key(scopes, rate_limit).await), Some(service.issue_key(scopes, rate_limit).await)]
}

#[tokio::test]
async fn the_direct_path_answers_every_kind_of_rights_lookup_as_the_router_does() {
    let service = Service::start().await;
    let router = router(Arc::clone(&service.app));
    let work = service.production_work();
    let (_, _, first) = service.get(&format!("/rights/{work}"), Some(&service.full_key)).await;
    let tag = first.headers()[header::ETAG].to_str().expect("text").to_owned();
    let case = |name, path: String, headers: Vec<(&'static str, String)>| Case { name, path, headers, times: 1 };
    let production = [
        (case("a profile", format!("/rights/{work}"), vec![]), StatusCode::OK),
        (case("its tag held", format!("/rights/{work}"), vec![("if-none-match", tag)]), StatusCode::NOT_MODIFIED),
        (case("compressed", format!("/rights/{work}"), vec![("accept-encoding", "gzip".into())]), StatusCode::OK),
        (
            case(
                "from a page of another origin, with an id",
                format!("/rights/{work}"),
                vec![("origin", "https://partner.example".into()), ("x-request-id", "partner-trace-1".into())],
            ),
            StatusCode::OK,
        ),
        (case("an unknown work", "/rights/LCC-9999999999".into(), vec![]), StatusCode::NOT_FOUND),
        (case("an id of odd characters", "/rights/LCC-0000000001;x=1".into(), vec![]), StatusCode::NOT_FOUND),
    ];
    for (case, status) in &production {
        let keys = two_keys(&service, &Scope::ALL, 1_000).await;
        assert_eq!(compare(&router, case, keys).await, [*status], "{}", case.name);
    }

    let profile = case("a profile", format!("/rights/{work}"), vec![]);
    let without_scope = two_keys(&service, &[Scope::MetadataRead], 1_000).await;
    assert_eq!(compare(&router, &profile, without_scope).await, [StatusCode::FORBIDDEN], "no rights:read");
    assert_eq!(compare(&router, &profile, [None, None]).await, [StatusCode::UNAUTHORIZED], "no key");
    let unknown = Some("lcc_live_0000000000000000000000000000000000000000".to_owned());
    let unknown = [unknown.clone(), unknown];
    assert_eq!(compare(&router, &profile, unknown).await, [StatusCode::UNAUTHORIZED], "an unknown key");
    let sandbox = || [Some(service.sandbox_key()), Some(service.sandbox_key())];
    assert_eq!(
        compare(&router, &profile, sandbox()).await,
        [StatusCode::FORBIDDEN],
        "a sandbox key on a production work"
    );
    let fixture = case("a sandbox profile", "/rights/SANDBOX-LCC-0003".into(), vec![]);
    assert_eq!(compare(&router, &fixture, sandbox()).await, [StatusCode::OK], "a sandbox key on a sandbox work");

    let twice = Case { times: 2, ..case("over the limit", format!("/rights/{work}"), vec![]) };
    let limited = two_keys(&service, &[Scope::RightsRead], 1).await;
    assert_eq!(compare(&router, &twice, limited).await, [StatusCode::OK, StatusCode::TOO_MANY_REQUESTS]);
}

/// The server gives each connection its own public router; both of its
/// paths must use the connection's key memo, or every request on it hashes
/// and looks up its key again.
#[tokio::test]
async fn both_paths_of_a_connection_remember_its_key() {
    let service = Service::start().await;
    let work = service.production_work();
    for path in [format!("/rights/{work}"), format!("/rights/{work}/verify"), format!("/rights/{work}?x=1")] {
        let key_memo = Arc::new(KeyMemo::default());
        let connection =
            Connection { peer: "192.0.2.7:40000".parse().expect("address"), key_memo: Arc::clone(&key_memo) };
        let request = Request::get(format!("{BASE}{path}")).header("x-api-key", &service.full_key);
        let response = service
            .router
            .on_connection(connection)
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("infallible");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let generation = service.app.production_keys.generation();
        assert!(key_memo.recall(service.full_key.as_bytes(), generation).is_some(), "{path}: the key is remembered");
    }
}
