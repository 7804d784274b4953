//! The evidence package: stored inputs plus what depends on the request,
//! the remaining term of protection and the public lookup link.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::answer_tags;
use read_model::calendar::{Date, Timestamp};
use read_model::documents::{
    CertificateRecord, DisputeStatus, DisputeSummary, EvidenceInputs, RightHolding, WorkStatus,
};
use read_model::{Audience, DocumentKind};
use serde::Serialize;
use utoipa::ToSchema;

use super::metadata::{chained_provenance, provenance_versions};
use super::parameters::{PathParameters, WorkPath};
use super::{decode, json_of, work_document};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::conditional::KnownTag;
use crate::errors::ApiError;
use crate::keys::Scope;
use crate::provenance_chain::ChainHead;

/// The answer of `GET /rights/{lccId}/evidence`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvidencePackage {
    pub lcc_id: String,
    pub title: String,
    pub status: WorkStatus,
    pub earliest_recorded_at: Timestamp,
    pub file_sha256: String,
    pub rights_chain: RightsChain,
    pub protection: Protection,
    pub dispute_status: DisputeStatus,
    pub disputes: Vec<DisputeSummary>,
    pub certificate: Option<CertificateRecord>,
    /// The work's public record (`/records/{lccId}`): anyone can open it
    /// without a key, see what the registry holds now, and check this
    /// package's signature there.
    pub public_lookup_url: String,
    /// The head of the work's provenance chain (`/rights/{lccId}/provenance`)
    /// when the package was generated: a later provenance must extend it.
    pub provenance_chain: ChainHead,
    /// The instant the registry issued this package; signed with the rest.
    pub generated_at: Timestamp,
    /// A detached JWS (RFC 7515, EdDSA with Ed25519) over the RFC 8785
    /// canonical JSON of this package without `signature`. Its header names
    /// the key (`kid`) of the key set at `/keys`, or at
    /// `/keys?audience=sandbox` for a sandbox work. Every package served
    /// has one; it is absent only from the content it signs.
    #[schema(required = true, value_type = String)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RightsChain {
    pub authors_rights: Vec<RightHolding>,
    pub related_rights: Vec<RightHolding>,
}

/// The term of protection as of the request.
#[derive(Debug, Serialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Protection {
    pub ends_on: Option<Date>,
    pub in_force: bool,
    pub remaining: RemainingTerm,
}

#[derive(Debug, Serialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemainingTerm {
    pub years: i64,
    pub months: i64,
    pub days: i64,
    pub total_days: i64,
}

/// The term left on `today` for protection ending on `ends_on` (inclusive).
pub fn protection(ends_on: Option<Date>, today: Date) -> Protection {
    let in_force = answer_tags::in_force(ends_on, today);
    let (years, months, days, total_days) = match ends_on {
        Some(ends) if in_force => {
            let (years, months, days) = today.calendar_distance(ends);
            (years, months, days, today.days_until(ends))
        }
        _ => (0, 0, 0, 0),
    };
    Protection { ends_on, in_force, remaining: RemainingTerm { years, months, days, total_days } }
}

/// `GET /rights/{lccId}/evidence`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/rights/{lccId}/evidence",
    operation_id = "getEvidencePackage",
    tag = "Rights",
    summary = "Evidence package of a work",
    description = "Identifier, earliest recorded timestamp, file hash, the chain of authors' rights and related rights, the remaining term of protection as of the request, dispute status, and a public lookup link; the head of the work's provenance chain; the instant it was issued; and a signature over all of it, checkable offline against the key set at `/keys` (`/keys?audience=sandbox` for a sandbox work). Each issue carries its own `generatedAt`, so the entity tag is weak: it changes when what the registry records for the package changes, or when the term of protection ends, not with the instant or the remaining term's count of days; the tag is the one notifications name.",
    params(WorkPath),
    responses(
        (status = 200, description = "The evidence package.", body = EvidencePackage),
        (status = 404, description = "No work has this identifier.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["evidence:read"])),
)]
pub async fn evidence(
    State(app): State<Arc<App>>,
    PathParameters(WorkPath { lcc_id }): PathParameters<WorkPath>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::EvidenceRead, Some(&lcc_id), async |_| {
        let body = work_document(&app, DocumentKind::Evidence, &lcc_id).await?;
        let inputs: EvidenceInputs = decode(&body)?;
        let (entries, provenance_chain) = chained_provenance(&app, &lcc_id).await?;
        let now = Timestamp(app.clock.unix_ms());
        let protection = protection(inputs.protection_ends_on, Date::of(now));
        let versions = provenance_versions(&entries);
        let tag = answer_tags::evidence(Audience::of(&lcc_id), &body, protection.in_force, versions);
        let mut package = EvidencePackage {
            public_lookup_url: app.public_url(&format!("/records/{lcc_id}")),
            lcc_id: inputs.lcc_id,
            title: inputs.title,
            status: inputs.status,
            earliest_recorded_at: inputs.earliest_recorded_at,
            file_sha256: inputs.file_sha256,
            rights_chain: RightsChain { authors_rights: inputs.authors_rights, related_rights: inputs.related_rights },
            protection,
            dispute_status: inputs.dispute_status,
            disputes: inputs.disputes,
            certificate: inputs.certificate,
            provenance_chain,
            generated_at: Timestamp(0),
            signature: None,
        };
        package.generated_at = now;
        package.signature = Some(app.signer.sign(Audience::of(&lcc_id), &package).map_err(|error| {
            tracing::error!(%error, "failed to sign an evidence package");
            ApiError::Internal
        })?);
        let mut response = json_of(StatusCode::OK, &package)?;
        response.extensions_mut().insert(KnownTag(tag));
        Ok(response)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remaining_term_is_counted_to_the_last_day_inclusive() {
        let today = Date::parse("2026-11-21").expect("date");
        let open = protection(Date::parse("2096-12-31"), today);
        assert!(open.in_force);
        assert_eq!(open.remaining, RemainingTerm { years: 70, months: 1, days: 10, total_days: 25_608 });
        let last_day = protection(Some(today), today);
        assert!(last_day.in_force);
        assert_eq!(last_day.remaining.total_days, 0);
        let ended = protection(Date::parse("1999-12-31"), today);
        assert!(!ended.in_force);
        assert_eq!(ended.remaining, RemainingTerm { years: 0, months: 0, days: 0, total_days: 0 });
        assert!(!protection(None, today).in_force);
    }
}
