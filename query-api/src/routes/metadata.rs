//! Dublin Core metadata (JSON, or `oai_dc` XML on `Accept: application/xml`)
//! and provenance.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::DocumentKind;
use read_model::documents::DublinCoreRecord;

use super::{decode, json, push_json_array};
use crate::app::App;
use crate::errors::ApiError;
use crate::keys::Scope;

fn wants_xml(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/xml") || accept.contains("text/xml"))
}

fn escape_xml(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// The record as an OAI-PMH `oai_dc` document; elements with no value are left out.
pub fn oai_dc_xml(record: &DublinCoreRecord) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<oai_dc:dc xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd\">\n",
    );
    for (element, values) in record.elements() {
        for value in values {
            xml.push_str(&format!("  <dc:{element}>{}</dc:{element}>\n", escape_xml(value)));
        }
    }
    xml.push_str("</oai_dc:dc>\n");
    xml
}

/// `GET /rights/{lccId}/metadata`.
pub async fn metadata(State(app): State<Arc<App>>, Path(lcc_id): Path<String>, headers: HeaderMap) -> Response {
    let granted = match app.authorize(&headers, Scope::MetadataRead, Some(&lcc_id)) {
        Ok(granted) => granted,
        Err(refused) => return refused,
    };
    let result = async {
        let body = app
            .store
            .document(DocumentKind::Metadata, &lcc_id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no work {lcc_id}")))?;
        if !wants_xml(&headers) {
            return Ok(json(StatusCode::OK, body));
        }
        let record: DublinCoreRecord = decode(&body)?;
        let mut response = (StatusCode::OK, oai_dc_xml(&record)).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/xml; charset=utf-8"));
        Ok(response)
    };
    granted.respond(result.await)
}

/// `GET /rights/{lccId}/provenance`: every applied change, oldest first.
pub async fn provenance(State(app): State<Arc<App>>, Path(lcc_id): Path<String>, headers: HeaderMap) -> Response {
    let granted = match app.authorize(&headers, Scope::MetadataRead, Some(&lcc_id)) {
        Ok(granted) => granted,
        Err(refused) => return refused,
    };
    let result = async {
        if app.store.document(DocumentKind::RightsProfile, &lcc_id).await?.is_none() {
            return Err(ApiError::NotFound(format!("no work {lcc_id}")));
        }
        let entries = app.store.provenance(&lcc_id).await?;
        let mut body = format!("{{\"lccId\":{},\"entries\":", serde_json::json!(lcc_id)).into_bytes();
        push_json_array(&mut body, &entries);
        body.push(b'}');
        Ok(json(StatusCode::OK, body))
    };
    granted.respond(result.await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oai_dc_escapes_values_and_skips_empty_elements() {
        let record = DublinCoreRecord {
            lcc_id: "LCC-1".into(),
            title: vec!["Rock & <Roll>".into()],
            creator: vec!["Ada \"A\" O'Neil".into()],
            ..DublinCoreRecord::default()
        };
        let xml = oai_dc_xml(&record);
        assert!(xml.contains("<dc:title>Rock &amp; &lt;Roll&gt;</dc:title>"));
        assert!(xml.contains("<dc:creator>Ada &quot;A&quot; O&apos;Neil</dc:creator>"));
        assert!(!xml.contains("<dc:subject>"));
        assert!(xml.starts_with("<?xml") && xml.trim_end().ends_with("</oai_dc:dc>"));
    }
}
