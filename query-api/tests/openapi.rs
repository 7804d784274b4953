//! The OpenAPI document against the service itself: it covers every endpoint
//! of the specification, the scopes it names are the scopes enforced, its
//! examples are what the service answers for the sandbox fixtures, and the
//! interactive documentation exists outside production only.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use query_api::config::Environment;
use query_api::keys::Scope;
use query_api::routes::router;
use serde_json::{Value, json};
use support::{BASE, Service, split, text};
use tower::ServiceExt;

/// One operation of the served document.
struct Operation {
    id: String,
    method: String,
    path: String,
    scope: Option<Scope>,
    description: Value,
}

async fn served_document(service: &Service) -> Value {
    let (status, document, response) = service.get("/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert!(response.headers().contains_key("x-ratelimit-remaining"));
    document
}

fn operations(document: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, description) in item.as_object().expect("path item") {
            let scope = description["security"][0]["apiKey"][0].as_str().map(|name| Scope::parse(name).expect("scope"));
            let id = description["operationId"].as_str().expect("operationId").to_owned();
            operations.push(Operation {
                id,
                method: method.clone(),
                path: path.clone(),
                scope,
                description: description.clone(),
            });
        }
    }
    operations
}

/// The request an operation's example describes.
fn example_request(operation: &Operation, example: &Value, key: Option<&str>) -> Request<Body> {
    let mut path = operation.path.clone();
    let mut query = Vec::new();
    for parameter in operation.description["parameters"].as_array().into_iter().flatten() {
        let name = parameter["name"].as_str().expect("name");
        let value = match &example["parameters"][name] {
            Value::Null => continue,
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        match parameter["in"].as_str() {
            Some("path") => path = path.replace(&format!("{{{name}}}"), &value),
            _ => query.push(format!("{name}={value}")),
        }
    }
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    let mut request = Request::builder().method(operation.method.to_uppercase().as_str()).uri(format!("{BASE}{path}"));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    match example.get("request") {
        Some(body) => {
            request.header("content-type", "application/json").body(Body::from(body.to_string())).expect("request")
        }
        None => request.body(Body::empty()).expect("request"),
    }
}

fn examples_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas/openapi/examples.json")
}

/// The examples the service gives today: sandbox fixtures chosen by scenario.
async fn live_examples(service: &Service, document: &Value) -> BTreeMap<String, Value> {
    let (_, catalogue, _) = service.get("/sandbox/fixtures", None).await;
    let fixtures = catalogue["fixtures"].as_array().expect("fixtures");
    let with = |resource: &str, scenarios: &[&str]| {
        fixtures
            .iter()
            .find(|fixture| {
                fixture["resource"] == resource
                    && scenarios
                        .iter()
                        .all(|wanted| fixture["scenarios"].as_array().expect("scenarios").contains(&json!(wanted)))
            })
            .unwrap_or_else(|| panic!("no {resource} fixture shows {scenarios:?}"))
            .clone()
    };
    let work = with("work", &["split_rights", "related_rights", "dispute_none"]);
    let by_iswc = with("work", &["found_by_iswc"]);
    let license = with("license", &["license_blanket_active"]);
    let work_id = work["id"].as_str().expect("id");
    let key = service.sandbox_key();
    let (_, evidence, _) = service.get(&format!("/rights/{work_id}/evidence"), Some(&key)).await;

    let mut requests: BTreeMap<&str, Value> = BTreeMap::new();
    for id in ["getRightsProfile", "getMetadata", "getProvenance", "getEvidencePackage", "getPublicRecord"] {
        requests.insert(id, json!({ "parameters": { "lccId": work_id } }));
    }
    requests.insert("verifyRights", json!({ "parameters": { "lccId": work_id, "sha256": evidence["fileSha256"] } }));
    requests.insert("findRightsProfiles", json!({ "parameters": { "iswc": by_iswc["iswc"] } }));
    requests.insert("getLicenseStatus", json!({ "parameters": { "id": license["id"] } }));
    requests.insert("listPublishedWorks", json!({ "parameters": { "page": 1, "limit": 2 } }));
    requests.insert("listSandboxFixtures", json!({}));
    requests.insert("listChanges", json!({ "parameters": { "limit": 2 } }));
    requests.insert("listNotifications", json!({ "parameters": { "limit": 2 } }));
    requests.insert(
        "lookupRightsProfiles",
        json!({ "request": { "lccIds": [work_id, "SANDBOX-LCC-9999"], "iswcs": [by_iswc["iswc"]] } }),
    );
    requests.insert("listSnapshots", json!({}));
    let (_, snapshots, _) = service.get("/bulk/snapshots", Some(&key)).await;
    let snapshot_id = &snapshots["snapshots"][0]["snapshotId"];
    requests.insert("getSnapshotManifest", json!({ "parameters": { "snapshotId": snapshot_id } }));
    requests.insert("registerSandboxKey", json!({ "request": { "email": "developer@example.org" } }));
    requests.insert("getSigningKeys", json!({ "parameters": { "audience": "sandbox" } }));

    let operations = operations(document);
    let mut examples = BTreeMap::new();
    for (id, mut example) in requests {
        let operation = operations.iter().find(|operation| operation.id == id).expect("operation");
        let (status, body, _) = split(service.send(example_request(operation, &example, Some(&key))).await).await;
        assert!(status.is_success(), "{id}: {status} {body}");
        example["status"] = json!(status.as_u16());
        example["response"] = body;
        examples.insert(id.to_owned(), example);
    }
    examples
}

/// The same examples with the values that depend on the day or on chance blanked.
fn without_varying_values(mut examples: BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    let varying = [
        ("verifyRights", "/response/checkedOn"),
        ("getEvidencePackage", "/response/generatedAt"),
        ("getEvidencePackage", "/response/protection/remaining"),
        ("getEvidencePackage", "/response/signature"),
        ("registerSandboxKey", "/response/apiKey"),
        ("registerSandboxKey", "/response/expiresAt"),
    ];
    for (id, pointer) in varying {
        if let Some(value) = examples.get_mut(id).and_then(|example| example.pointer_mut(pointer)) {
            *value = json!("varies");
        }
    }
    // Cursors and snapshot ids carry the moment the feed and the snapshot were written.
    for id in ["listChanges", "listNotifications", "listSnapshots", "getSnapshotManifest"] {
        if let Some(example) = examples.get_mut(id) {
            blank_moments(example);
        }
    }
    examples
}

fn blank_moments(value: &mut Value) {
    const MOMENTS: [&str; 11] = [
        "cursor",
        "recordedAt",
        "next",
        "self",
        "changedAt",
        "version",
        "snapshotId",
        "createdAt",
        "manifest",
        "changesCursor",
        "signature",
    ];
    match value {
        Value::Object(members) => {
            for (name, member) in members.iter_mut() {
                if MOMENTS.contains(&name.as_str()) {
                    *member = json!("varies");
                } else {
                    blank_moments(member);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank_moments),
        _ => {}
    }
}

#[tokio::test]
async fn the_examples_are_what_the_service_answers_for_the_sandbox_fixtures() {
    let service = Service::start().await;
    let document = served_document(&service).await;
    let live = live_examples(&service, &document).await;
    if std::env::var_os("UPDATE_API_EXAMPLES").is_some() {
        let text = serde_json::to_string_pretty(&live).expect("json") + "\n";
        std::fs::write(examples_file(), text).expect("write the examples");
    }
    let committed: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(examples_file()).expect("examples")).expect("examples parse");
    assert_eq!(
        without_varying_values(committed),
        without_varying_values(live),
        "schemas/openapi/examples.json is out of date; run the test with UPDATE_API_EXAMPLES=1 and review the change"
    );

    // The served document carries them: parameters, request body and answer.
    let operations = operations(&document);
    let profile = operations.iter().find(|operation| operation.id == "getRightsProfile").expect("operation");
    let lcc_id = &profile.description["parameters"][0];
    assert_eq!(lcc_id["name"], "lccId");
    assert!(lcc_id["example"].as_str().is_some_and(|id| id.starts_with("SANDBOX-")), "{lcc_id}");
    let answer = &profile.description["responses"]["200"]["content"]["application/json"]["example"];
    assert_eq!(answer["lccId"], lcc_id["example"]);
    let register = operations.iter().find(|operation| operation.id == "registerSandboxKey").expect("operation");
    assert_eq!(
        register.description["requestBody"]["content"]["application/json"]["example"],
        json!({ "email": "developer@example.org" })
    );
}

#[tokio::test]
async fn the_description_is_openapi_3_1_and_covers_every_endpoint_of_the_specification() {
    let service = Service::start().await;
    let document = served_document(&service).await;
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["servers"][0]["url"], BASE);
    assert_eq!(
        document["components"]["securitySchemes"]["apiKey"],
        json!({ "type": "apiKey", "in": "header", "name": "x-api-key", "description": "A production key from the operator, or a sandbox key from POST /sandbox/register." })
    );
    let described: BTreeSet<(String, String, Option<&str>)> = operations(&document)
        .iter()
        .map(|operation| (operation.method.clone(), operation.path.clone(), operation.scope.map(Scope::name)))
        .collect();
    let specified: BTreeSet<(String, String, Option<&str>)> = [
        ("get", "/rights/{lccId}", Some("rights:read")),
        ("get", "/rights", Some("rights:read")),
        ("get", "/rights/{lccId}/verify", Some("rights:verify")),
        ("get", "/licenses/{id}/status", Some("licenses:read")),
        ("get", "/rights/{lccId}/metadata", Some("metadata:read")),
        ("get", "/rights/{lccId}/provenance", Some("metadata:read")),
        ("get", "/bulk/works", Some("bulk:read")),
        ("get", "/rights/{lccId}/evidence", Some("evidence:read")),
        ("get", "/sandbox/fixtures", None),
        ("post", "/sandbox/register", None),
        ("get", "/openapi.json", None),
    ]
    .into_iter()
    .map(|(method, path, scope)| (method.to_owned(), path.to_owned(), scope))
    .collect();
    let extensions: BTreeSet<(String, String, Option<&str>)> = [
        ("get", "/bulk/changes", Some("bulk:read")),
        ("get", "/bulk/snapshots", Some("bulk:read")),
        ("get", "/bulk/snapshots/{snapshotId}", Some("bulk:read")),
        ("get", "/bulk/snapshots/{snapshotId}/files/{name}", Some("bulk:read")),
        ("get", "/oai", None),
        ("post", "/oai", None),
        ("post", "/rights/lookup", Some("rights:read")),
        ("get", "/keys", None),
        ("get", "/records/{lccId}", None),
        ("get", "/notifications", Some("notifications:read")),
        ("get", "/notifications/stream", Some("notifications:read")),
        ("get", "/webhooks", Some("notifications:read")),
    ]
    .into_iter()
    .map(|(method, path, scope)| (method.to_owned(), path.to_owned(), scope))
    .collect();
    assert_eq!(described, specified.union(&extensions).cloned().collect());

    // What a webhook subscription is posted, in the `webhooks` section.
    let schemas = &document["components"]["schemas"];
    for (name, schema) in [("notifications", "NotificationDelivery"), ("challenge", "WebhookChallenge")] {
        let post = &document["webhooks"][name]["post"];
        let reference = &post["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(reference, &format!("#/components/schemas/{schema}"), "{name}");
        assert!(schemas[schema]["properties"].is_object(), "{schema} is described");
        let headers: Vec<&str> = post["parameters"]
            .as_array()
            .expect("headers")
            .iter()
            .filter_map(|header| header["name"].as_str())
            .collect();
        assert!(headers.starts_with(&["webhook-id", "webhook-timestamp", "webhook-signature"]), "{headers:?}");
    }
    assert_eq!(
        schemas["NotificationDelivery"]["properties"]["notifications"]["items"]["$ref"],
        "#/components/schemas/NotificationItem"
    );

    for operation in operations(&document) {
        let responses = operation.description["responses"].as_object().expect("responses");
        let mut expected = vec!["429", "500", "503"];
        if operation.scope.is_some() {
            expected.extend(["401", "403"]);
        }
        for status in expected {
            let response = &responses[status];
            assert_eq!(
                response["content"]["application/problem+json"]["schema"]["$ref"], "#/components/schemas/Problem",
                "{} {status}",
                operation.id
            );
        }
        assert!(responses["429"]["headers"].get("Retry-After").is_some(), "{}", operation.id);
        assert!(responses.keys().any(|status| status.starts_with('2')), "{}", operation.id);
    }
    let bulk = operations(&document).into_iter().find(|operation| operation.id == "listPublishedWorks").expect("bulk");
    let limit =
        bulk.description["parameters"].as_array().expect("parameters").iter().find(|p| p["name"] == "limit").cloned();
    assert_eq!(limit.expect("limit")["schema"]["maximum"], 1_000);
}

#[tokio::test]
async fn each_operation_requires_exactly_the_scope_its_description_names() {
    let service = Service::start().await;
    let document = served_document(&service).await;
    let examples: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(examples_file()).expect("examples")).expect("examples parse");
    let mut checked = 0;
    for operation in operations(&document) {
        let Some(example) = examples.get(&operation.id) else { continue };
        let status = StatusCode::from_u16(example["status"].as_u64().expect("status") as u16).expect("status");
        let Some(scope) = operation.scope else {
            let (answer, body, _) = split(service.send(example_request(&operation, example, None)).await).await;
            assert_eq!(answer, status, "{} needs no key: {body}", operation.id);
            continue;
        };
        let others: Vec<Scope> = Scope::ALL.into_iter().filter(|other| *other != scope).collect();
        let lacking = service.issue_key(&others, 1_000).await;
        let (answer, body, _) = split(service.send(example_request(&operation, example, Some(&lacking))).await).await;
        assert_eq!(
            (answer, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("insufficient_scope")),
            "{}",
            operation.id
        );
        assert_eq!(body["detail"], format!("this API key lacks the {scope} scope"));
        // A production key with just that scope passes the guard. (It may still
        // find nothing: production keys do not see sandbox works by ISWC.)
        let only = service.issue_key(&[scope], 1_000).await;
        let (answer, body, _) = split(service.send(example_request(&operation, example, Some(&only))).await).await;
        assert!(
            answer != StatusCode::UNAUTHORIZED && answer != StatusCode::FORBIDDEN,
            "{} with only {scope}: {body}",
            operation.id
        );
        checked += 1;
    }
    assert_eq!(checked, 13, "every keyed operation with a JSON answer has an example");
}

#[tokio::test]
async fn interactive_documentation_is_served_outside_production_only() {
    let service = Service::start().await;
    let page = |path: &str| Request::get(path).body(Body::empty()).expect("request");
    let response = service.send(page("/api/docs")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/html; charset=utf-8");
    let policy = response.headers()["content-security-policy"].to_str().expect("policy").to_owned();
    assert!(policy.contains("default-src 'none'") && policy.contains("connect-src 'self'"), "{policy}");
    let html = text(response).await;
    assert!(html.contains(&format!("data-openapi-url=\"{BASE}/openapi.json\"")), "{html}");
    for (asset, content_type) in [("/api/docs/docs.js", "text/javascript"), ("/api/docs/docs.css", "text/css")] {
        let response = service.send(page(asset)).await;
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert!(response.headers()["content-type"].to_str().expect("type").starts_with(content_type));
        let body = text(response).await;
        assert!(!body.contains("http://") && !body.contains("https://"), "{asset} names another origin");
    }
    assert!(!html.contains("http://") && !html.contains("https://"), "the page names another origin");

    let production = service.in_environment(Environment::Production);
    for path in ["/api/docs", "/api/docs/docs.js"] {
        let (status, body, _) =
            split(router(Arc::clone(&production)).oneshot(page(path)).await.expect("infallible")).await;
        assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("unknown_route")), "{path}");
    }
    let (status, _, _) =
        split(router(production).oneshot(page(&format!("{BASE}/openapi.json"))).await.expect("infallible")).await;
    assert_eq!(status, StatusCode::OK, "the description itself is served in production too");
}
