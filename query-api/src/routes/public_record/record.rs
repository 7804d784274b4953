//! The public record as data: what anyone may know about a work, taken from
//! its stored evidence inputs, identifiers and provenance chain. Both forms
//! of the answer (`super::page` renders the HTML) are made from it.

use read_model::Audience;
use read_model::calendar::{Date, Timestamp};
use read_model::documents::{CertificateRecord, DisputeStatus, EvidenceInputs, WorkStatus};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::app::App;
use crate::provenance_chain::ChainHead;
use crate::routes::evidence::protection;
use crate::routes::sandbox::SIMULATED_DATA_NOTICE;

/// The answer of `GET /records/{lccId}` in JSON.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicRecord {
    pub lcc_id: String,
    /// `production`, or `sandbox` for simulated data.
    #[schema(pattern = "^(production|sandbox)$")]
    pub audience: String,
    /// For sandbox works, what the data is and the legal basis it is
    /// provided under; `null` for records of the registry.
    pub notice: Option<String>,
    pub title: String,
    pub iswc: Option<String>,
    pub isrcs: Vec<String>,
    pub status: WorkStatus,
    pub earliest_recorded_at: Timestamp,
    /// SHA-256 (hexadecimal) of the registered file.
    pub file_sha256: String,
    pub certificate: Option<PublicCertificate>,
    pub dispute_status: DisputeStatus,
    /// Whether the term of protection runs today, and its last day.
    pub protection: PublicProtection,
    /// The head of the work's provenance chain now: a package's
    /// `provenanceChain` of the same length must name the same hash.
    pub provenance_chain: ChainHead,
    /// The key set that verifies this work's evidence packages.
    pub key_set_url: String,
}

/// A certificate's public facts.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicCertificate {
    pub certificate_id: String,
    pub sha256: String,
    pub issued_at: Timestamp,
    pub revoked: bool,
}

/// The term of protection as of the request.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicProtection {
    pub in_force: bool,
    pub ends_on: Option<Date>,
}

/// The identifiers a rights profile carries; the rest of it is not public.
#[derive(Debug, Deserialize)]
pub struct Identifiers {
    iswc: Option<String>,
    isrcs: Vec<String>,
}

impl PublicRecord {
    /// The record of a work from its stored evidence inputs and identifiers,
    /// with the protection computed for `today`.
    pub fn of(
        inputs: EvidenceInputs,
        identifiers: Identifiers,
        chain: ChainHead,
        today: Date,
        app: &App,
    ) -> PublicRecord {
        let audience = Audience::of(&inputs.lcc_id);
        let term = protection(inputs.protection_ends_on, today);
        let key_set = match audience {
            Audience::Production => "/keys",
            Audience::Sandbox => "/keys?audience=sandbox",
        };
        PublicRecord {
            audience: audience.code().to_owned(),
            notice: (audience == Audience::Sandbox).then(|| SIMULATED_DATA_NOTICE.to_owned()),
            title: inputs.title,
            iswc: identifiers.iswc,
            isrcs: identifiers.isrcs,
            status: inputs.status,
            earliest_recorded_at: inputs.earliest_recorded_at,
            file_sha256: inputs.file_sha256,
            certificate: inputs.certificate.map(
                |CertificateRecord { certificate_id, sha256, issued_at, revoked, .. }| PublicCertificate {
                    certificate_id,
                    sha256,
                    issued_at,
                    revoked,
                },
            ),
            dispute_status: inputs.dispute_status,
            protection: PublicProtection { in_force: term.in_force, ends_on: term.ends_on },
            provenance_chain: chain,
            key_set_url: app.public_url(key_set),
            lcc_id: inputs.lcc_id,
        }
    }
}
