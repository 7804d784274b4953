//! The OpenAPI 3.1 description of the public endpoints, served at
//! `{base_url}/openapi.json`.
//!
//! The paths, parameters, bodies and scopes come from the handlers'
//! `#[utoipa::path]` attributes. This module adds what is the same for every
//! operation (the API key scheme, the answers of the access guard and the
//! rate limiter with their headers), what depends on the configuration (the
//! bulk maximum), and the examples, which are real answers of the service
//! over the sandbox fixtures, kept in `schemas/openapi/examples.json` and
//! checked against the live service by a test. It must not describe anything
//! the router does not serve.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::OpenApi;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::{Response as ResponseObject, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{Content, Header, RefOr, Required, Server};

use super::ClientAddress;
use crate::access::with_rate_headers;
use crate::app::{App, BASE_PATH};
use crate::config::Settings;
use crate::errors::Problem;

/// The name of the API key scheme in the document's security requirements.
pub const API_KEY_SCHEME: &str = "apiKey";

/// The examples: for each operation id, its parameters and its answer.
const EXAMPLES: &str = include_str!("../../../schemas/openapi/examples.json");

/// One operation's example, as `schemas/openapi/examples.json` holds it.
#[derive(Debug, Clone, Deserialize)]
pub struct OperationExample {
    /// Parameter values by name (path and query), typed as their schemas.
    #[serde(default)]
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// The request body, for operations that take one.
    #[serde(default)]
    pub request: Option<serde_json::Value>,
    /// The status of the answer.
    pub status: u16,
    /// The answer's JSON body.
    pub response: serde_json::Value,
}

/// The examples of every operation, by operation id.
pub fn examples() -> BTreeMap<String, OperationExample> {
    // The file is part of the binary and checked by a test, so it always parses.
    serde_json::from_str(EXAMPLES).unwrap_or_default()
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "LCC public rights data API",
        version = "1.0.0",
        description = "Read-only rights data of the registry of creative works: rights profiles, verification, \
license status, Dublin Core metadata, provenance, a bulk export of published works without personal data, and \
evidence packages.\n\nSend your key in the `x-api-key` header. Each operation names the scope it needs. Sandbox keys \
(from `POST /sandbox/register`) read only sandbox records, whose ids start with `SANDBOX-`; `GET /sandbox/fixtures` \
lists them with the scenario each demonstrates. Responses of the sandbox and of production have the same shapes. \
Sandbox records are simulated data, provided under Decree 277/2026, Article 7(5); they are not records of the \
registry.\n\nAnyone may read a work's public record, without a key, at `/records/{lccId}` (the `publicLookupUrl` \
of its evidence packages): JSON, or a page that checks an evidence package in the browser.\n\n\
Every limited response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (whole seconds \
until the quota is fully restored); over the limit the answer is 429 with `Retry-After`. Every failure is an RFC 9457 \
`application/problem+json` body with a stable `code`. Every answer carries `x-request-id`: the one the request \
carried, when well formed, or a new one; quote it when you report a problem.\n\nPages on any origin may call the API: \
every answer carries `Access-Control-Allow-Origin: *` and exposes `X-RateLimit-*`, `ETag`, `Last-Modified`, \
`Retry-After` and `x-request-id` to scripts; a preflight (`OPTIONS`) takes no key and no quota. Keys travel in a \
header, never in cookies. Every answer carries `X-Content-Type-Options: nosniff`.\n\nJSON and XML answers of \
1 KiB or more are compressed as `Accept-Encoding` allows (`zstd`, `br`, `gzip`; the heaviest weight wins, ties in \
that order); a compressed answer's `ETag` is its identity tag marked with the coding (`\"…-gzip\"`). Snapshot \
files are sent as they are."
    ),
    tags(
        (name = "Rights", description = "Rights profiles, verification and evidence packages of works."),
        (name = "Licenses", description = "License status, Blanket or Individual."),
        (name = "Metadata", description = "Dublin Core metadata and provenance of works."),
        (name = "Bulk", description = "The open-data export of published works."),
        (name = "Notifications", description = "Not in the specification: which answers of which works and licenses changed, with their new entity tags, so a client need not poll each."),
        (name = "Public record", description = "What anyone may know about a work, without a key: the public lookup link of evidence packages."),
        (name = "Sandbox", description = "Simulated data to try the API with, provided under Decree 277/2026, Article 7(5), and sandbox keys."),
        (name = "Keys", description = "The public keys that verify signed evidence packages and snapshot manifests."),
        (name = "Description", description = "This document."),
    ),
    components(schemas(
        Problem,
        crate::webhooks::payload::NotificationDelivery,
        crate::webhooks::payload::WebhookChallenge,
        crate::webhooks::payload::ChallengeAnswer,
    )),
)]
struct Description;

/// `GET /openapi.json`: this document. Takes no key; limited per client address.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/openapi.json",
    operation_id = "getOpenApiDescription",
    tag = "Description",
    summary = "The OpenAPI 3.1 description of the public endpoints",
    responses((status = 200, description = "This document.", body = Object)),
)]
pub async fn openapi_json(
    State(app): State<Arc<App>>,
    State(ServedDocument(document)): State<ServedDocument>,
    ClientAddress(client): ClientAddress,
) -> Response {
    match app.limit_anonymous(&client) {
        Ok(rate) => {
            let mut response = (StatusCode::OK, document).into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            with_rate_headers(response, &rate)
        }
        Err(refused) => refused,
    }
}

/// The finished document as served, serialized once when the router is built.
#[derive(Debug, Clone)]
pub struct ServedDocument(pub Bytes);

impl ServedDocument {
    /// The paths the handlers describe, completed for `settings` and serialized.
    pub fn of(paths: utoipa::openapi::OpenApi, settings: &Settings) -> ServedDocument {
        // Serializing a document built from typed parts cannot fail.
        let mut document = serde_json::to_value(complete(paths, settings)).unwrap_or_default();
        if let Some(members) = document.as_object_mut() {
            members.insert("webhooks".to_owned(), webhooks());
        }
        ServedDocument(Bytes::from(serde_json::to_vec(&document).unwrap_or_default()))
    }
}

/// The paths the handlers describe, completed into the served document.
pub fn complete(paths: utoipa::openapi::OpenApi, settings: &Settings) -> utoipa::openapi::OpenApi {
    let mut document = Description::openapi();
    document.merge(relative_to_base_path(paths));
    document.servers = Some(vec![Server::new(BASE_PATH)]);
    let components = document.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        API_KEY_SCHEME.to_owned(),
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "x-api-key",
            "A production key from the operator, or a sandbox key from POST /sandbox/register.",
        ))),
    );
    let examples = examples();
    for item in document.paths.paths.values_mut() {
        if let Some(operation) = item.get.as_mut() {
            add_conditional_requests(operation);
        }
        for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
            add_common_responses(operation);
            add_response_headers(operation);
            limit_bulk_page_size(operation, settings.bulk_max_limit);
            if let Some(example) = operation.operation_id.as_ref().and_then(|id| examples.get(id)) {
                add_example(operation, example);
            }
        }
    }
    document
}

/// The document's `webhooks` section (OpenAPI 3.1): what the service posts
/// to a subscription's endpoint. The typed document has no member for it.
fn webhooks() -> serde_json::Value {
    let header = |name: &str, description: &str| serde_json::json!({"name": name, "in": "header", "required": true, "description": description, "schema": {"type": "string"}});
    let headers = serde_json::json!([
        header("webhook-id", "The message's id: the same on every attempt of one message; deduplicate by it."),
        header(
            "webhook-timestamp",
            "Seconds since the epoch, of this attempt; refuse one more than five minutes from your clock."
        ),
        header(
            "webhook-signature",
            "`v1a,` and the standard base64 of the Ed25519 signature of `{webhook-id}.{webhook-timestamp}.{body}` by a production key of `/keys` (space-separated when there are several)."
        ),
        header("webhook-key-id", "The id of the key that signed; a hint only: verify with the keys of `/keys`."),
    ]);
    let post = |summary: &str, description: &str, schema: &str, answer: serde_json::Value| {
        serde_json::json!({"post": {
            "summary": summary,
            "description": description,
            "tags": ["Notifications"],
            "parameters": headers,
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}},
            "responses": answer,
        }})
    };
    serde_json::json!({
        "notifications": post(
            "A subscription's next notifications",
            "Posted to the subscription's endpoint, one message at a time and in order: each continues from the `next` of the one before (`previous`). Answer 2xx once you have stored it; any other answer, or none within the timeout, is retried on the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h) with the same `webhook-id`, and nothing after it is posted meanwhile. `410` pauses the subscription until the operator resumes it, from where it stopped. Redirects are not followed.",
            "NotificationDelivery",
            serde_json::json!({
                "2XX": {"description": "Stored: the next message follows."},
                "410": {"description": "Stop: the subscription is paused."},
            }),
        ),
        "challenge": post(
            "The challenge before the first delivery",
            "Posted before the first delivery, signed as deliveries are: answer 2xx with `{\"challenge\": …}`, the value posted, to prove the endpoint asked for deliveries.",
            "WebhookChallenge",
            serde_json::json!({
                "2XX": {"description": "The challenge echoed.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChallengeAnswer"}}}},
            }),
        ),
    })
}

/// The paths relative to [`BASE_PATH`], the document's server URL: the
/// handlers are described at their full paths, as they are routed.
fn relative_to_base_path(mut paths: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    paths.paths.paths = std::mem::take(&mut paths.paths.paths)
        .into_iter()
        .map(|(path, item)| match path.strip_prefix(BASE_PATH) {
            Some(relative) => (relative.to_owned(), item),
            None => (path, item),
        })
        .collect();
    paths
}

fn problem_response(description: &str) -> RefOr<ResponseObject> {
    let content = Content::new(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("Problem"))));
    ResponseBuilder::new().description(description).content("application/problem+json", content).build().into()
}

/// The answers of the access guard, the rate limiter and the store, which
/// every keyed operation (or every operation) can give.
fn add_common_responses(operation: &mut Operation) {
    let keyed = operation.security.as_ref().is_some_and(|requirements| !requirements.is_empty());
    let responses = &mut operation.responses.responses;
    if keyed {
        responses
            .entry("401".into())
            .or_insert_with(|| problem_response("No key, an unknown or revoked key, or an expired sandbox key."));
        responses.entry("403".into()).or_insert_with(|| {
            problem_response(
                "The key lacks the operation's scope, or a sandbox key names a record that is not a sandbox record.",
            )
        });
    }
    responses
        .entry("429".into())
        .or_insert_with(|| problem_response("Over the rate limit; retry after `Retry-After` seconds."));
    responses
        .entry("500".into())
        .or_insert_with(|| problem_response("An unexpected failure; the body carries no internals."));
    responses.entry("503".into()).or_insert_with(|| {
        problem_response(
            "The read model is unavailable (`service_unavailable`), or the answer took longer than the request timeout \
             (`request_timeout`); retry shortly.",
        )
    });
}

fn string_header(description: &str) -> Header {
    let mut header = Header::new(RefOr::T(Schema::Object(ObjectBuilder::new().schema_type(Type::String).build())));
    header.description = Some(description.to_owned());
    header
}

/// The operations whose answers carry `Last-Modified`: only where a date
/// bounds every change of the answer (a rendered document depends on
/// records and parties whose own dates do not, so it has a tag only).
const DATED_OPERATIONS: [&str; 3] = ["getSigningKeys", "getSnapshotManifest", "downloadSnapshotFile"];

/// What `crate::conditional` adds to every `GET`: `If-None-Match`, a `304`,
/// and the tag and caching headers of its `200`; `If-Modified-Since` and
/// `Last-Modified` where the answer is dated.
fn add_conditional_requests(operation: &mut Operation) {
    let dated = operation.operation_id.as_deref().is_some_and(|id| DATED_OPERATIONS.contains(&id));
    if dated {
        let if_modified_since = ParameterBuilder::new()
            .name("If-Modified-Since")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "An HTTP date (`Tue, 24 Nov 2026 21:27:32 GMT`); when the answer has not changed since, it is 304. \
                 Ignored when `If-None-Match` is sent.",
            ))
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .build();
        operation.parameters.get_or_insert_with(Vec::new).push(if_modified_since);
    }
    let if_none_match = ParameterBuilder::new()
        .name("If-None-Match")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some("Tags of answers the client holds; when one is current the answer is 304 with no body."))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build();
    operation.parameters.get_or_insert_with(Vec::new).push(if_none_match);
    let responses = &mut operation.responses.responses;
    if let Some(RefOr::T(ok)) = responses.get_mut("200") {
        ok.headers.entry("ETag".into()).or_insert_with(|| {
            string_header(
                "A tag of this representation for this kind of key; send it in `If-None-Match`. Strong, except \
                 for evidence packages: each is stamped with the instant it was issued, and its weak tag follows \
                 what it states.",
            )
        });
        if dated {
            ok.headers.entry("Last-Modified".into()).or_insert_with(|| {
                string_header("When this answer last changed, as an HTTP date; send it in `If-Modified-Since`.")
            });
        }
        ok.headers.entry("Cache-Control".into()).or_insert_with(|| {
            string_header(
                "`private, no-cache` for keyed answers, `public, no-cache` for keyless ones: revalidate before reuse \
                 (the key set: `public, max-age=300`).",
            )
        });
        ok.headers.entry("Vary".into()).or_insert_with(|| string_header("`accept, accept-encoding, x-api-key`."));
    }
    let mut not_modified = ResponseBuilder::new()
        .description(
            "The client's copy is current (its tag was in `If-None-Match`, or it has not changed since \
             `If-Modified-Since`); no body. It counts against the rate limit.",
        )
        .build();
    not_modified.headers.insert("ETag".into(), string_header("The current tag."));
    responses.entry("304".into()).or_insert_with(|| not_modified.into());
}

fn integer_header(description: &str) -> Header {
    let schema = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).build();
    let mut header = Header::new(RefOr::T(Schema::Object(schema)));
    header.description = Some(description.to_owned());
    header
}

/// The request id on every answer, and the quota headers on every answer
/// that went through the limiter (all but 401).
fn add_response_headers(operation: &mut Operation) {
    for (status, response) in &mut operation.responses.responses {
        let RefOr::T(response) = response else { continue };
        let headers = &mut response.headers;
        let mut request_id = Header::new(RefOr::T(Schema::Object(
            ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)).max_length(Some(128)).build(),
        )));
        request_id.description = Some("The request's id: the one it carried, when well formed, or a new one.".into());
        headers.insert("x-request-id".into(), request_id);
        if status == "401" {
            continue;
        }
        headers.insert("X-RateLimit-Limit".into(), integer_header("Requests allowed per minute."));
        headers.insert("X-RateLimit-Remaining".into(), integer_header("Requests left in the current window."));
        headers.insert("X-RateLimit-Reset".into(), integer_header("Whole seconds until the quota is fully restored."));
        if status == "429" {
            headers.insert("Retry-After".into(), integer_header("Seconds until the next request is allowed."));
        }
    }
}

/// The bulk maximum is configuration, so it is written into the document here.
fn limit_bulk_page_size(operation: &mut Operation, maximum: u32) {
    let Some(parameters) = operation.parameters.as_mut() else { return };
    for parameter in parameters.iter_mut().filter(|parameter| parameter.name == "limit") {
        if let Some(RefOr::T(Schema::Object(schema))) = parameter.schema.as_mut() {
            schema.maximum = Some(maximum.into());
        }
        parameter.description = Some(format!("The page size, from 1 to {maximum}; 100 by default."));
    }
}

fn add_example(operation: &mut Operation, example: &OperationExample) {
    if let Some(parameters) = operation.parameters.as_mut() {
        for parameter in parameters.iter_mut() {
            if let Some(value) = example.parameters.get(&parameter.name) {
                *parameter = ParameterBuilder::from(parameter.clone()).example(Some(value.clone())).build();
            }
        }
    }
    if let (Some(body), Some(request)) = (&example.request, operation.request_body.as_mut())
        && let Some(content) = request.content.get_mut("application/json")
    {
        content.example = Some(body.clone());
    }
    if let Some(RefOr::T(response)) = operation.responses.responses.get_mut(&example.status.to_string())
        && let Some(content) = response.content.get_mut("application/json")
    {
        content.example = Some(example.response.clone());
    }
}
