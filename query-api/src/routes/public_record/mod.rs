//! `GET /records/{lccId}`: the public record of a work, the page an
//! evidence package's `publicLookupUrl` points to. It takes no key (it is
//! limited per client address) and states only what anyone may see: the
//! work's identifiers, title and status, and the facts a verifier compares a
//! package against. Nothing the bulk export leaves out (holders, parties,
//! shares, dispute parties, revocation reasons) is in it.
//!
//! One address, two representations: HTML for a browser (`page`), JSON
//! (`record`) for `Accept: application/json` and by default. The edge
//! gives each its own entity tag.

pub mod page;
mod record;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::DocumentKind;
use read_model::calendar::{Date, Timestamp};

use self::record::PublicRecord;
use super::metadata::chained_provenance;
use super::parameters::{PathParameters, WorkPath};
use super::{ClientAddress, decode, json_of};
use crate::access::with_rate_headers;
use crate::app::{App, BASE_PATH};
use crate::errors::ApiError;

/// Whether the request prefers HTML to JSON (RFC 9110, 12.5.1): each type
/// takes the weight of the most specific range that names it, and a tie
/// goes to JSON. A browser navigating to the link prefers HTML; a client
/// that names neither, or `application/json` first, gets JSON.
pub fn prefers_html(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|accept| accept.to_str().ok()) else { return false };
    let ranges: Vec<(String, f32)> = accept
        .split(',')
        .map(|range| {
            let mut parameters = range.split(';');
            let media_range = parameters.next().unwrap_or_default().trim().to_ascii_lowercase();
            let weight = parameters
                .filter_map(|parameter| parameter.trim().strip_prefix("q="))
                .find_map(|value| value.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (media_range, weight)
        })
        .collect();
    let weight_of = |exact: &str, family: &str| {
        [exact, family, "*/*"]
            .into_iter()
            .find_map(|wanted| ranges.iter().find(|(range, _)| range == wanted).map(|(_, weight)| *weight))
            .unwrap_or(0.0)
    };
    weight_of("text/html", "text/*") > weight_of("application/json", "application/*")
}

/// `GET /records/{lccId}`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/records/{lccId}",
    operation_id = "getPublicRecord",
    tag = "Public record",
    summary = "The public record of a work, without a key",
    description = "What anyone may know about a work, without a key: identifiers, title, status, and the facts a verifier compares an evidence package against (earliest recorded timestamp, file hash, certificate, dispute status, whether protection is in force and until when, the head and length of the provenance chain). An evidence package's `publicLookupUrl` points here. A browser (`Accept: text/html` preferred) gets a page that shows the record and checks a pasted evidence package or snapshot manifest in the page itself, with the key set at `/keys`; other clients get JSON. A sandbox work's record says that it is simulated data and the legal basis it is provided under. Takes no key; limited per client address.",
    params(WorkPath),
    responses(
        (status = 200, description = "The public record.", content(
            (PublicRecord = "application/json"),
            (String = "text/html"),
        )),
        (status = 404, description = "No work has this identifier: a problem body, or a page saying so for a browser.", content(
            (crate::errors::Problem = "application/problem+json"),
            (String = "text/html"),
        )),
    ),
)]
pub async fn public_record(
    State(app): State<Arc<App>>,
    ClientAddress(client): ClientAddress,
    path: Result<PathParameters<WorkPath>, ApiError>,
    headers: HeaderMap,
) -> Response {
    let rate = match app.limit_anonymous(&client) {
        Ok(rate) => rate,
        Err(refused) => return refused,
    };
    let html = prefers_html(&headers);
    let answer = async {
        let PathParameters(WorkPath { lcc_id }) = path?;
        let record = read_record(&app, &lcc_id).await?;
        match (record, html) {
            (Some(record), true) => Ok(page::page(&record)),
            (Some(record), false) => json_of(StatusCode::OK, &record),
            (None, true) => Ok(page::not_found(&lcc_id)),
            (None, false) => Err(ApiError::NotFound(format!("no work {lcc_id}"))),
        }
    };
    with_rate_headers(answer.await.unwrap_or_else(IntoResponse::into_response), &rate)
}

/// The public record of `lcc_id`, or `None` when there is no such work.
async fn read_record(app: &App, lcc_id: &str) -> Result<Option<PublicRecord>, ApiError> {
    let Some(evidence) = app.store.document(DocumentKind::Evidence, lcc_id).await? else { return Ok(None) };
    let Some(profile) = app.store.document(DocumentKind::RightsProfile, lcc_id).await? else { return Ok(None) };
    let (_, chain) = chained_provenance(app, lcc_id).await?;
    let today = Date::of(Timestamp(app.clock.unix_ms()));
    Ok(Some(PublicRecord::of(decode(&evidence)?, decode(&profile)?, chain, today, app)))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn accepting(accept: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(accept).expect("header"));
        headers
    }

    #[test]
    fn browsers_get_html_and_everyone_else_json() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";
        let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert!(prefers_html(&accepting(chromium)));
        assert!(prefers_html(&accepting(firefox)));
        assert!(prefers_html(&accepting("text/*")));
        assert!(!prefers_html(&HeaderMap::new()), "no Accept");
        assert!(!prefers_html(&accepting("*/*")));
        assert!(!prefers_html(&accepting("application/json")));
        assert!(!prefers_html(&accepting("application/json, text/html;q=0.5")));
        assert!(!prefers_html(&accepting("text/html;q=0.4, */*;q=0.5")), "json through */* weighs more");
        assert!(!prefers_html(&accepting("text/html;q=0")));
        assert!(!prefers_html(&accepting("image/png")));
    }
}
