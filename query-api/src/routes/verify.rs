//! Verification of a work's rights and certificate, computed at request time
//! from the stored inputs (protection in force depends on the day).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use read_model::answer_tags;
use read_model::calendar::{Date, Timestamp};
use read_model::documents::{CertificateRecord, RightType, VerificationInputs, WorkStatus};
use read_model::{Audience, DocumentKind};
use serde::Serialize;
use utoipa::ToSchema;

use super::parameters::{PathParameters, QueryParameters, VerifyQuery, WorkPath};
use super::{decode, json_of, work_document};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::conditional::KnownTag;
use crate::errors::ApiError;
use crate::keys::Scope;

/// The answer of `GET /rights/{lccId}/verify`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationResult {
    pub lcc_id: String,
    /// True when every check passed.
    pub verified: bool,
    /// The day the checks were made (UTC).
    pub checked_on: Date,
    pub checks: Vec<Check>,
    pub certificate: Option<CertificateRecord>,
}

/// One named check.
#[derive(Debug, Serialize, ToSchema)]
pub struct Check {
    /// `certificate`, `rights_chain_complete`, `no_open_dispute`,
    /// `protection_in_force`, `record_active`, and `file_hash_matches` when a
    /// `sha256` was given.
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// The checks, in a fixed order; `file_sha256` is the client's hash, when given.
pub fn checks(inputs: &VerificationInputs, today: Date, file_sha256: Option<&str>) -> Vec<Check> {
    let mut checks = Vec::new();
    let certificate = match &inputs.certificate {
        None => (false, "no certificate was issued".to_owned()),
        Some(certificate) if certificate.revoked => {
            (false, format!("certificate {} was revoked", certificate.certificate_id))
        }
        Some(certificate) => (true, format!("certificate {} is valid", certificate.certificate_id)),
    };
    checks.push(Check { name: "certificate", passed: certificate.0, detail: certificate.1 });
    let authors = inputs.shares.iter().any(|total| total.right_type == RightType::AuthorsRight);
    let incomplete: Vec<String> = inputs
        .shares
        .iter()
        .filter(|total| !total.complete)
        .map(|total| format!("{:?} shares add up to {}%", total.right_type, f64::from(total.basis_points) / 100.0))
        .collect();
    let chain = if !authors {
        (false, "no authors' rights are recorded".to_owned())
    } else if incomplete.is_empty() {
        (true, "the shares of every right type add up to 100%".to_owned())
    } else {
        (false, incomplete.join("; "))
    };
    checks.push(Check { name: "rights_chain_complete", passed: chain.0, detail: chain.1 });
    let open = inputs.dispute_status.is_unresolved();
    let status = serde_json::to_value(inputs.dispute_status).ok().and_then(|value| value.as_str().map(str::to_owned));
    checks.push(Check {
        name: "no_open_dispute",
        passed: !open,
        detail: format!("dispute status: {}", status.unwrap_or_default()),
    });
    let in_force = answer_tags::in_force(inputs.protection_ends_on, today);
    let protection = match inputs.protection_ends_on {
        None => (false, "no term of protection is recorded".to_owned()),
        Some(ends) if in_force => (true, format!("protected until {ends}")),
        Some(ends) => (false, format!("protection ended on {ends}")),
    };
    checks.push(Check { name: "protection_in_force", passed: protection.0, detail: protection.1 });
    let active = inputs.status != WorkStatus::Withdrawn;
    checks.push(Check {
        name: "record_active",
        passed: active,
        detail: if active { "the record is active".to_owned() } else { "the work was withdrawn".to_owned() },
    });
    if let Some(hash) = file_sha256 {
        let matches = hash == inputs.file_sha256;
        checks.push(Check {
            name: "file_hash_matches",
            passed: matches,
            detail: if matches {
                "the SHA-256 given matches the registered file".to_owned()
            } else {
                "the SHA-256 given differs from the registered file".to_owned()
            },
        });
    }
    checks
}

/// `GET /rights/{lccId}/verify[?sha256=HEX]`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/rights/{lccId}/verify",
    operation_id = "verifyRights",
    tag = "Rights",
    summary = "Verify the rights and certificate of a work",
    description = "Each check is named in the result; `verified` is true when all passed. Computed at request time: whether protection is in force depends on the day. The entity tag is weak: it names what the checks state, not `checkedOn`, and is the one notifications name.",
    params(WorkPath, VerifyQuery),
    responses(
        (status = 200, description = "The verification result.", body = VerificationResult),
        (status = 400, description = "`sha256` is not 64 hexadecimal characters.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No work has this identifier.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["rights:verify"])),
)]
pub async fn verify(
    State(app): State<Arc<App>>,
    PathParameters(WorkPath { lcc_id }): PathParameters<WorkPath>,
    QueryParameters(query): QueryParameters<VerifyQuery>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::RightsVerify, Some(&lcc_id), async |_| {
        let file_sha256 = query
            .sha256
            .map(|hash| {
                let hash = hash.trim().to_ascii_lowercase();
                if hash.len() == 64 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()) {
                    Ok(hash)
                } else {
                    Err(ApiError::InvalidParameter("sha256 must be 64 hexadecimal characters".into()))
                }
            })
            .transpose()?;
        let body = work_document(&app, DocumentKind::Verification, &lcc_id).await?;
        let inputs: VerificationInputs = decode(&body)?;
        let today = Date::of(Timestamp(app.clock.unix_ms()));
        let file_hash_matches = file_sha256.as_ref().map(|hash| *hash == inputs.file_sha256);
        let in_force = answer_tags::in_force(inputs.protection_ends_on, today);
        let tag = answer_tags::verification(Audience::of(&lcc_id), &body, in_force, file_hash_matches);
        let checks = checks(&inputs, today, file_sha256.as_deref());
        let result = VerificationResult {
            verified: checks.iter().all(|check| check.passed),
            lcc_id: lcc_id.clone(),
            checked_on: today,
            checks,
            certificate: inputs.certificate,
        };
        let mut response = json_of(StatusCode::OK, &result)?;
        response.extensions_mut().insert(KnownTag(tag));
        Ok(response)
    })
    .await
}
