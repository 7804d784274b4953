//! The HTML form of a public record, and the page's own script and style.
//!
//! The record is rendered here, so a visitor reads it without any script;
//! the script (`query-api/assets/record/`) only checks a pasted evidence
//! package or snapshot manifest, in the browser, against the key sets at
//! `/keys`. Every asset is compiled into the binary and served from the
//! page's own origin, and the Content-Security-Policy forbids everything
//! else: no inline script, no other origin, no form submission, no framing.
//! The page sets no cookie. Unlike `/api/docs`, these routes are served in
//! production: the page is the public lookup link of evidence packages.

use std::fmt::Write as _;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::record::PublicRecord;
use crate::app::BASE_PATH;
// The five characters XML escapes are the ones HTML needs escaped in text
// and quoted attributes, and HTML5 knows all five references.
use crate::oai::xml::escape_xml as escape;

const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SCRIPT: &str = include_str!("../../../assets/record/record.js");
const CANONICAL_JSON: &str = include_str!("../../../assets/record/canonical-json.js");
const VERIFICATION: &str = include_str!("../../../assets/record/verification.js");
const STYLE: &str = include_str!("../../../assets/record/record.css");
const ICON: &str = include_str!("../../../assets/record/icon.svg");

/// The page's assets, under `{BASE_PATH}/assets/record/`; merged into the
/// public router in every environment. They take no key and no quota.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let path = |file: &str| format!("{BASE_PATH}/assets/record/{file}");
    Router::new()
        .route(&path("record.js"), get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }))
        .route(&path("canonical-json.js"), get(|| async { asset("text/javascript; charset=utf-8", CANONICAL_JSON) }))
        .route(&path("verification.js"), get(|| async { asset("text/javascript; charset=utf-8", VERIFICATION) }))
        .route(&path("record.css"), get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .route(&path("icon.svg"), get(|| async { asset("image/svg+xml", ICON) }))
}

fn asset(content_type: &'static str, body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    secure(response.headers_mut(), content_type);
    response
}

/// The headers of every page and asset.
fn secure(headers: &mut axum::http::HeaderMap, content_type: &'static str) {
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
}

/// A vocabulary value (`resolved_upheld`) as words (`resolved upheld`).
fn words(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(|code| code.replace('_', " ")))
        .unwrap_or_default()
}

fn html_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    secure(response.headers_mut(), "text/html; charset=utf-8");
    response
}

/// The document around `main`, titled `title`.
fn document(title: &str, main: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<link rel=\"stylesheet\" href=\"{BASE_PATH}/assets/record/record.css\">\n\
         <link rel=\"icon\" href=\"{BASE_PATH}/assets/record/icon.svg\" type=\"image/svg+xml\">\n\
         <script type=\"module\" src=\"{BASE_PATH}/assets/record/record.js\"></script>\n</head>\n<body>\n{main}</body>\n</html>\n",
        title = escape(title),
    )
}

/// The page of a work's public record.
pub fn page(record: &PublicRecord) -> Response {
    let mut main = String::new();
    let lcc_id = escape(&record.lcc_id);
    let sandbox = record.notice.is_some();
    // Writing to a String cannot fail.
    let _ = writeln!(
        main,
        "<main id=\"record\" data-lcc-id=\"{lcc_id}\" data-audience=\"{audience}\" data-base-path=\"{BASE_PATH}\">",
        audience = escape(&record.audience),
    );
    if let Some(notice) = &record.notice {
        let _ = writeln!(
            main,
            "<p class=\"notice\" role=\"note\" id=\"simulated\"><strong>{}</strong></p>",
            escape(notice)
        );
    }
    let kind = if sandbox { "Sandbox record" } else { "Public record" };
    let _ = write!(
        main,
        "<header>\n<p class=\"kicker\">{kind} of the registry of creative works</p>\n<h1>{title}</h1>\n\
         <p class=\"identifier\">{lcc_id}</p>\n</header>\n\
         <section aria-labelledby=\"facts-heading\">\n<h2 id=\"facts-heading\">What the registry holds now</h2>\n<dl class=\"facts\">\n",
        title = escape(&record.title),
    );
    let mut fact = |name: &str, value: String| {
        let _ = writeln!(main, "<div><dt>{name}</dt><dd>{value}</dd></div>");
    };
    let none = || "<span class=\"none\">none recorded</span>".to_owned();
    fact("Registry identifier", format!("<code>{lcc_id}</code>"));
    fact("ISWC", record.iswc.as_deref().map_or_else(none, |iswc| format!("<code>{}</code>", escape(iswc))));
    let isrcs = record.isrcs.iter().map(|isrc| format!("<code>{}</code>", escape(isrc))).collect::<Vec<_>>();
    fact("ISRC", if isrcs.is_empty() { none() } else { isrcs.join(", ") });
    fact("Status", escape(&words(&record.status)));
    fact("Earliest recorded", format!("<time>{}</time>", record.earliest_recorded_at));
    fact("File SHA-256", format!("<code class=\"hash\">{}</code>", escape(&record.file_sha256)));
    fact(
        "Certificate",
        record.certificate.as_ref().map_or_else(none, |certificate| {
            let state = if certificate.revoked { "revoked" } else { "valid" };
            format!(
                "<code>{}</code>, issued <time>{}</time>, {state}",
                escape(&certificate.certificate_id),
                certificate.issued_at
            )
        }),
    );
    fact("Dispute status", escape(&words(&record.dispute_status)));
    fact(
        "Protection",
        match (record.protection.in_force, record.protection.ends_on) {
            (true, Some(ends_on)) => format!("in force until <time>{ends_on}</time> inclusive"),
            (false, Some(ends_on)) => format!("not in force: it ended on <time>{ends_on}</time>"),
            (_, None) => "not in force: no term recorded".to_owned(),
        },
    );
    fact(
        "Provenance chain",
        format!(
            "{} entries; head <code class=\"hash\">{}</code>",
            record.provenance_chain.length,
            escape(&record.provenance_chain.hash)
        ),
    );
    let _ = write!(
        main,
        "</dl>\n<p class=\"aside\">The same record as JSON: this address with <code>Accept: application/json</code>. \
         Who holds which rights is not public; an evidence package states it, under the registry's signature.</p>\n\
         </section>\n{checker}<script type=\"application/json\" id=\"public-record\">{json}</script>\n</main>\n",
        checker = CHECKER,
        json = script_safe_json(record),
    );
    let title = format!("{} ({}) · {kind}", record.title, record.lcc_id);
    html_response(StatusCode::OK, document(&title, &main))
}

/// The page of an identifier no work has.
pub fn not_found(lcc_id: &str) -> Response {
    let main = format!(
        "<main>\n<h1>No such work</h1>\n<p>The registry has no work <code>{}</code>. Check the identifier in the link \
         you were given.</p>\n</main>\n",
        escape(lcc_id)
    );
    html_response(StatusCode::NOT_FOUND, document("No such work", &main))
}

/// The record as JSON that can sit in a `<script>` data block: `<`, `>` and
/// `&` only occur in strings, where their `\u` escapes mean the same.
fn script_safe_json(record: &PublicRecord) -> String {
    serde_json::to_string(record)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The checker's form; `record.js` gives it life, and without script it
/// says so.
const CHECKER: &str = "<section aria-labelledby=\"check-heading\" id=\"checker\">\n\
<h2 id=\"check-heading\">Check an evidence package</h2>\n\
<p>Paste or drop an evidence package, or a snapshot manifest, that you were given. The check runs in this page, with \
the registry's published keys: what you paste is not sent anywhere.</p>\n\
<form id=\"check-form\">\n\
<label for=\"document\">Evidence package or snapshot manifest (JSON)</label>\n\
<textarea id=\"document\" name=\"document\" rows=\"8\" spellcheck=\"false\" autocomplete=\"off\" \
aria-describedby=\"drop-hint\"></textarea>\n\
<p id=\"drop-hint\" class=\"hint\">You can also drop a file on this box.</p>\n\
<label for=\"file\">Or choose a file</label>\n\
<input type=\"file\" id=\"file\" name=\"file\" accept=\"application/json,.json\">\n\
<button type=\"submit\" id=\"check\">Check</button>\n\
</form>\n\
<noscript><p>Checking a package needs JavaScript; <code>query-api evidence verify</code> does the same check \
offline.</p></noscript>\n\
<div id=\"verdict\" role=\"status\" aria-live=\"polite\" data-verdict=\"none\"></div>\n\
</section>\n";
