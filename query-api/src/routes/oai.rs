//! `GET` and `POST {base}/oai`: OAI-PMH 2.0 (see `crate::oai`).
//!
//! Keyless, so that harvesters that cannot set headers can harvest: limited
//! per client address like every keyless endpoint, and serving production
//! records. A harvester that sends `x-api-key` is served its key's audience
//! (a sandbox key harvests the sandbox works) under its key's limit, and
//! needs `metadata:read`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::change_feed::{
    ChangeKind, ChangeQuery, ChangesRead, FeedCursor, FeedPosition, sequence_of_millisecond,
};
use read_model::documents::DublinCoreRecord;
use read_model::{Audience, DocumentKind};
use utoipa::ToSchema;

use super::{ClientAddress, decode};
use crate::access::{Credentials, with_rate_headers};
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;
use crate::keys::Scope;
use crate::oai::arguments::{self, Arguments, Selection, Verb};
use crate::oai::resumption::ResumptionToken;
use crate::oai::xml::oai_dc_element;
use crate::oai::{OaiError, PAGE_SIZE, xml};

/// The arguments of an OAI-PMH request as a form body describes them, so
/// that a client generated from the document sends named fields.
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    reason = "the handler reads the body with the protocol's own checks (`oai::arguments`): each argument once, only those the verb takes"
)]
#[schema(rename_all = "camelCase")]
pub struct OaiRequest {
    /// `Identify`, `ListMetadataFormats`, `ListSets`, `GetRecord`, `ListIdentifiers` or `ListRecords`.
    pub verb: String,
    /// `oai:<repository>:<lccId>` (GetRecord, ListMetadataFormats).
    #[schema(nullable = false)]
    pub identifier: Option<String>,
    /// `oai_dc`, the one format served (GetRecord, ListIdentifiers, ListRecords).
    #[schema(nullable = false)]
    pub metadata_prefix: Option<String>,
    /// Records changed at or after: `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ssZ`.
    #[schema(nullable = false)]
    pub from: Option<String>,
    /// Records changed at or before, of the granularity of `from`.
    #[schema(nullable = false)]
    pub until: Option<String>,
    /// Sets are not supported (`noSetHierarchy`).
    #[schema(nullable = false)]
    pub set: Option<String>,
    /// Continues a list; exclusive of every argument but `verb`.
    #[schema(nullable = false)]
    pub resumption_token: Option<String>,
}

/// `GET /oai?verb=…`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/oai",
    operation_id = "oaiPmh",
    tag = "OAI-PMH",
    summary = "OAI-PMH 2.0 for metadata harvesters",
    description = "The six OAI-PMH verbs over `oai_dc` (Dublin Core): `Identify`, `ListMetadataFormats`, `ListSets` (none: `noSetHierarchy`), `GetRecord`, `ListIdentifiers` and `ListRecords` with `from`, `until` and `resumptionToken`. Every published work is a record, dated by its newest change; a withdrawn work is a deleted record for as long as the change feed keeps withdrawals (30 days by default: `deletedRecord` is `transient`). Errors are the protocol's own codes in a 200 answer. No key is needed (production records, limited per client address); with `x-api-key`, a key with `metadata:read` harvests its own audience under its own limit. `POST` with a form body takes the same arguments.",
    params(
        ("verb" = String, Query, description = "`Identify`, `ListMetadataFormats`, `ListSets`, `GetRecord`, `ListIdentifiers` or `ListRecords`."),
        ("identifier" = Option<String>, Query, description = "`oai:<repository>:<lccId>` (GetRecord, ListMetadataFormats)."),
        ("metadataPrefix" = Option<String>, Query, description = "`oai_dc`, the one format served (GetRecord, ListIdentifiers, ListRecords)."),
        ("from" = Option<String>, Query, description = "Records changed at or after: `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ssZ`."),
        ("until" = Option<String>, Query, description = "Records changed at or before, of the granularity of `from`."),
        ("set" = Option<String>, Query, description = "Sets are not supported (`noSetHierarchy`)."),
        ("resumptionToken" = Option<String>, Query, description = "Continues a list; exclusive of every argument but `verb`."),
    ),
    responses((status = 200, description = "An OAI-PMH answer, or one of its errors.", body = String, content_type = "text/xml")),
)]
pub async fn oai_get(
    State(app): State<Arc<App>>,
    client: ClientAddress,
    RawQuery(query): RawQuery,
    credentials: Credentials,
) -> Response {
    let arguments = arguments::parse(query.unwrap_or_default().as_bytes());
    answer(app, client, arguments, credentials).await
}

/// `POST /oai` with `application/x-www-form-urlencoded` arguments.
#[utoipa::path(
    post,
    context_path = BASE_PATH,
    path = "/oai",
    operation_id = "oaiPmhPost",
    tag = "OAI-PMH",
    summary = "OAI-PMH 2.0, arguments in a form body",
    description = "The same as `GET /oai`, as the protocol requires, with the arguments in an `application/x-www-form-urlencoded` body.",
    request_body(content = OaiRequest, content_type = "application/x-www-form-urlencoded", example = json!({"verb": "Identify"})),
    responses(
        (status = 200, description = "An OAI-PMH answer, or one of its errors.", body = String, content_type = "text/xml"),
        (status = 413, description = "The body is larger than 4 KiB.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
)]
pub async fn oai_post(
    State(app): State<Arc<App>>,
    client: ClientAddress,
    credentials: Credentials,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match body {
        Ok(body) => answer(app, client, arguments::parse(&body), credentials).await,
        Err(rejection) => super::body_problem(&rejection).into_response(),
    }
}

async fn answer(
    app: Arc<App>,
    ClientAddress(client): ClientAddress,
    arguments: Arguments,
    credentials: Credentials,
) -> Response {
    if credentials.present_a_key() {
        return app
            .answer_authorized(&credentials, Scope::MetadataRead, None, async |granted| {
                respond(&app, granted.audience(), &arguments).await
            })
            .await;
    }
    let rate = match app.limit_anonymous(&client) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let answer = respond(&app, Audience::Production, &arguments).await;
    with_rate_headers(answer.unwrap_or_else(IntoResponse::into_response), &rate)
}

/// The XML answer; store failures become the API's 503, as everywhere.
async fn respond(app: &App, audience: Audience, arguments: &Arguments) -> Result<Response, ApiError> {
    let base_url = app.public_url("/oai");
    let repository = repository_identifier(&app.settings.public_base_url);
    let text = match verb_answer(app, audience, arguments, &repository).await? {
        Ok(body) => xml::answer(&base_url, arguments, &body),
        Err(error) => xml::error(&base_url, arguments, &error),
    };
    let mut response = (StatusCode::OK, text).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml; charset=utf-8"));
    Ok(response)
}

/// The host of the public origin: the repository's part of every identifier.
fn repository_identifier(public_base_url: &str) -> String {
    let without_scheme = public_base_url.split_once("://").map_or(public_base_url, |(_, rest)| rest);
    without_scheme.split(['/', ':']).next().unwrap_or_default().to_owned()
}

/// The lccId of an `oai:<repository>:<lccId>` identifier of this repository.
fn lcc_id_of<'a>(identifier: &'a str, repository: &str) -> Option<&'a str> {
    identifier.strip_prefix("oai:")?.strip_prefix(repository)?.strip_prefix(':').filter(|id| !id.is_empty())
}

fn does_not_exist(identifier: &str) -> OaiError {
    OaiError::new("idDoesNotExist", format!("{identifier} is not a record of this repository"))
}

async fn verb_answer(
    app: &App,
    audience: Audience,
    arguments: &Arguments,
    repository: &str,
) -> Result<Result<String, OaiError>, ApiError> {
    let verb = match arguments::verb(arguments) {
        Ok(verb) => verb,
        Err(error) => return Ok(Err(error)),
    };
    match verb {
        Verb::Identify => {
            let bounds = app.store.change_feed_bounds(audience).await?;
            let earliest = bounds.oldest.map_or_else(
                || read_model::calendar::Timestamp::now().0,
                |oldest| read_model::change_feed::millisecond_of_sequence(oldest.sequence),
            );
            Ok(Ok(xml::identify(&app.public_url("/oai"), &app.settings.oai_admin_email, earliest, repository)))
        }
        Verb::ListSets => Ok(Err(OaiError::new("noSetHierarchy", "this repository does not support sets"))),
        Verb::ListMetadataFormats { identifier } => {
            if let Some(identifier) = identifier {
                let known = match lcc_id_of(&identifier, repository) {
                    Some(lcc_id) => app.store.latest_change(audience, lcc_id).await?.is_some(),
                    None => false,
                };
                if !known {
                    return Ok(Err(does_not_exist(&identifier)));
                }
            }
            Ok(Ok(xml::metadata_formats()))
        }
        Verb::GetRecord { identifier } => {
            let Some(lcc_id) = lcc_id_of(&identifier, repository) else { return Ok(Err(does_not_exist(&identifier))) };
            let Some((_, item)) = app.store.latest_change(audience, lcc_id).await? else {
                return Ok(Err(does_not_exist(&identifier)));
            };
            let Some(record) = record(app, &identifier, &item, true).await? else {
                return Ok(Err(does_not_exist(&identifier)));
            };
            Ok(Ok(format!("<GetRecord>{record}</GetRecord>")))
        }
        Verb::List { records, selection } => list(app, audience, records, selection, repository).await,
    }
}

/// A record (or, without metadata, its header alone) of a feed item;
/// `None` when a published work has no Dublin Core document to show.
async fn record(
    app: &App,
    identifier: &str,
    item: &read_model::change_feed::ChangeItem,
    with_metadata: bool,
) -> Result<Option<String>, ApiError> {
    let deleted = item.kind == ChangeKind::Withdrawn;
    let header = xml::header(identifier, item.committed_at_ms(), deleted);
    if !with_metadata {
        return Ok(Some(header));
    }
    if deleted {
        return Ok(Some(xml::record(&header, None)));
    }
    let Some(body) = app.store.document(DocumentKind::Metadata, item.lcc_id()).await? else {
        tracing::warn!(lcc_id = item.lcc_id(), "a published work has no Dublin Core document");
        return Ok(None);
    };
    let metadata = oai_dc_element(&decode::<DublinCoreRecord>(&body)?);
    Ok(Some(xml::record(&header, Some(&metadata))))
}

async fn list(
    app: &App,
    audience: Audience,
    records: bool,
    selection: Selection,
    repository: &str,
) -> Result<Result<String, OaiError>, ApiError> {
    let resumed = matches!(selection, Selection::Resumed(_));
    let mut page = None;
    // A fresh harvest names the active version; a rebuild activated between
    // reading it and listing is met by reading it again.
    for _ in 0..2 {
        let (after, until_sequence) = match &selection {
            Selection::New { from_ms, until_ms } => {
                let version = app.store.change_feed_bounds(audience).await?.model_version;
                let after = from_ms.map(|from| (version, FeedPosition::before_millisecond(from)));
                (after, until_ms.map(|until| sequence_of_millisecond(until + 1) - 1))
            }
            Selection::Resumed(token) => {
                if token.cursor.audience != audience {
                    return Ok(Err(OaiError::new("badResumptionToken", "the resumption token is of another audience")));
                }
                (Some((token.cursor.model_version, token.cursor.position.clone())), token.until_sequence)
            }
        };
        // One more than a page, so that a token is given only when records follow.
        let query = ChangeQuery { audience, after, until_sequence, limit: PAGE_SIZE + 1, latest_only: true };
        if let ChangesRead::Page(found) = app.store.changes(&query).await? {
            page = Some((found, until_sequence));
            break;
        }
        if resumed {
            break;
        }
    }
    let Some((mut page, until_sequence)) = page else {
        return Ok(Err(OaiError::new(
            "badResumptionToken",
            "a rebuild replaced the records this harvest began on; start the harvest again",
        )));
    };
    if page.items.is_empty() && !resumed {
        return Ok(Err(OaiError::new("noRecordsMatch", "no record matches the selection")));
    }
    let more = page.items.len() > PAGE_SIZE as usize;
    page.items.truncate(PAGE_SIZE as usize);
    let element = if records { "ListRecords" } else { "ListIdentifiers" };
    let mut body = format!("<{element}>\n");
    for item in &page.items {
        let identifier = format!("oai:{repository}:{}", item.lcc_id());
        if let Some(record) = record(app, &identifier, item, records).await? {
            body.push_str(&record);
            body.push('\n');
        }
    }
    let token = more.then(|| {
        let last = page.items.last().map_or(page.next, |item| item.position.clone());
        let cursor = FeedCursor { model_version: page.model_version, audience, position: last };
        ResumptionToken { cursor, until_sequence }.encode()
    });
    body.push_str(&xml::resumption_token(token.as_deref(), resumed));
    body.push_str(&format!("\n</{element}>"));
    Ok(Ok(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_name_the_repository_by_the_public_host() {
        assert_eq!(repository_identifier("https://api.example.org"), "api.example.org");
        assert_eq!(repository_identifier("http://127.0.0.1:8080/"), "127.0.0.1");
        assert_eq!(lcc_id_of("oai:api.example.org:LCC-1", "api.example.org"), Some("LCC-1"));
        assert_eq!(lcc_id_of("oai:other.org:LCC-1", "api.example.org"), None);
        assert_eq!(lcc_id_of("oai:api.example.org:", "api.example.org"), None);
        assert_eq!(lcc_id_of("LCC-1", "api.example.org"), None);
    }
}
