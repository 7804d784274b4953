//! Dublin Core metadata (JSON, or `oai_dc` XML on `Accept: application/xml`)
//! and provenance.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use read_model::answer_tags::{self, ProvenanceVersions};
use read_model::documents::{DublinCoreRecord, ProvenanceEntry};
use read_model::{Audience, DocumentKind};
use serde::Serialize;
use utoipa::ToSchema;

use super::parameters::{PathParameters, WorkPath};
use super::{decode, json, json_of, work_document};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::conditional::KnownTag;
use crate::errors::ApiError;
use crate::keys::Scope;
use crate::oai::xml::oai_dc_element;
use crate::provenance_chain::{ChainHead, chain};

fn wants_xml(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/xml") || accept.contains("text/xml"))
}

/// The record as an OAI-PMH `oai_dc` document; elements with no value are left out.
pub fn oai_dc_xml(record: &DublinCoreRecord) -> String {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}", oai_dc_element(record))
}

/// The answer of `GET /rights/{lccId}/provenance`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    pub lcc_id: String,
    /// Every change applied to the record, oldest first, each with its `chainHash`.
    #[schema(value_type = Vec<ChainedProvenanceEntry>)]
    pub entries: Vec<serde_json::Value>,
    /// The newest entry's `chainHash` and the number of entries.
    pub chain: ChainHead,
}

/// A provenance entry with its place in the chain (the served entries' schema).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChainedProvenanceEntry {
    #[serde(flatten)]
    pub entry: ProvenanceEntry,
    /// SHA-256 (hexadecimal) of the previous entry's `chainHash` (64 zeros
    /// before the first) followed by this entry's RFC 8785 canonical JSON
    /// without `chainHash`.
    pub chain_hash: String,
}

/// `GET /rights/{lccId}/metadata`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/rights/{lccId}/metadata",
    operation_id = "getMetadata",
    tag = "Metadata",
    summary = "Dublin Core metadata of a work",
    description = "All fifteen Dublin Core elements, each a list (empty where unknown). JSON by default; the OAI-PMH `oai_dc` XML record with `Accept: application/xml`.",
    params(WorkPath),
    responses(
        (status = 200, description = "The Dublin Core record.", content(
            (DublinCoreRecord = "application/json"),
            (String = "application/xml"),
        )),
        (status = 404, description = "No work has this identifier.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["metadata:read"])),
)]
pub async fn metadata(
    State(app): State<Arc<App>>,
    PathParameters(WorkPath { lcc_id }): PathParameters<WorkPath>,
    credentials: Credentials,
    headers: HeaderMap,
) -> Response {
    app.answer_authorized(&credentials, Scope::MetadataRead, Some(&lcc_id), async |_| {
        let body = work_document(&app, DocumentKind::Metadata, &lcc_id).await?;
        if !wants_xml(&headers) {
            return Ok(json(StatusCode::OK, body));
        }
        let record: DublinCoreRecord = decode(&body)?;
        let mut response = (StatusCode::OK, oai_dc_xml(&record)).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/xml; charset=utf-8"));
        Ok(response)
    })
    .await
}

/// `GET /rights/{lccId}/provenance`: every applied change, oldest first.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/rights/{lccId}/provenance",
    operation_id = "getProvenance",
    tag = "Metadata",
    summary = "Provenance of a work's record",
    description = "How the record was formed: each change applied to it, when it occurred and was recorded, from which source system, and which public fields it set. Each entry carries `chainHash`, a SHA-256 over the previous entry's hash and its own RFC 8785 canonical JSON, and `chain` names the newest hash and the length: a holder of an earlier answer checks that this one extends it.",
    params(WorkPath),
    responses(
        (status = 200, description = "The applied changes, oldest first.", body = Provenance),
        (status = 404, description = "No work has this identifier.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["metadata:read"])),
)]
pub async fn provenance(
    State(app): State<Arc<App>>,
    PathParameters(WorkPath { lcc_id }): PathParameters<WorkPath>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::MetadataRead, Some(&lcc_id), async |_| {
        work_document(&app, DocumentKind::RightsProfile, &lcc_id).await?;
        let (entries, chain) = chained_provenance(&app, &lcc_id).await?;
        let tag = answer_tags::provenance(Audience::of(&lcc_id), &lcc_id, provenance_versions(&entries));
        let mut response = json_of(StatusCode::OK, &Provenance { lcc_id: lcc_id.clone(), entries, chain })?;
        response.extensions_mut().insert(KnownTag(tag));
        Ok(response)
    })
    .await
}

/// A work's provenance with its chain.
pub(crate) async fn chained_provenance(
    app: &App,
    lcc_id: &str,
) -> Result<(Vec<serde_json::Value>, ChainHead), ApiError> {
    chain(&app.store.provenance(lcc_id).await?).ok_or_else(|| {
        tracing::error!(lcc_id, "a stored provenance entry is not a JSON object");
        ApiError::Internal
    })
}

/// The newest version of each topic among a work's provenance entries,
/// which its answers' weak tags are computed from.
pub(crate) fn provenance_versions(entries: &[serde_json::Value]) -> ProvenanceVersions {
    let mut versions = ProvenanceVersions::default();
    for entry in entries {
        if let (Some(topic), Some(version)) = (entry["topic"].as_str(), entry["aggregateVersion"].as_u64()) {
            versions.note(topic, version);
        }
    }
    versions
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
