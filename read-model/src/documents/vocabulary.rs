//! Value types shared by several documents: statuses, roles, kinds, and the
//! public reference to a party.

use serde::{Deserialize, Serialize};

/// Where a work stands in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WorkStatus {
    /// Registered, not yet published: readable by id, absent from the bulk export.
    Registered,
    /// Published: part of the public catalogue and the bulk export.
    Published,
    /// Withdrawn: still readable by id, absent from the bulk export.
    Withdrawn,
}

/// Kind of creative work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WorkType {
    MusicalWork,
    SoundRecording,
    LiteraryWork,
    AudiovisualWork,
    VisualWork,
    Software,
    Other,
}

/// What a creator contributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CreatorRole {
    Author,
    Composer,
    Lyricist,
    Arranger,
    Translator,
    Performer,
    Producer,
    Other,
}

impl CreatorRole {
    /// Whether Dublin Core lists this role under `creator` (else `contributor`).
    pub fn is_primary_creator(self) -> bool {
        matches!(self, CreatorRole::Author | CreatorRole::Composer | CreatorRole::Lyricist)
    }
}

/// Authors' rights or related rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RightType {
    /// Copyright of the creators and their successors.
    AuthorsRight,
    /// Rights of performers, producers and broadcasters.
    RelatedRight,
}

/// Capacity in which a party holds a right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum HolderRole {
    Author,
    Composer,
    Lyricist,
    Publisher,
    Performer,
    Producer,
    Broadcaster,
    Successor,
    Other,
}

/// A natural person or an organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PartyKind {
    Person,
    Organisation,
}

/// The public face of a party inside a document.
///
/// `name` and `kind` are absent while the party's own registration has not
/// reached the read side yet; they fill in when it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PartyReference {
    pub party_id: String,
    pub name: Option<String>,
    pub kind: Option<PartyKind>,
    pub ipi: Option<String>,
    pub isni: Option<String>,
}

/// License kind, spelled as the specification spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum LicenseKind {
    Blanket,
    Individual,
}

/// Lifecycle status of a license.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum LicenseStatus {
    Pending,
    Active,
    Suspended,
    Expired,
    Terminated,
    Revoked,
}

/// Dispute status of a work on the platform.
///
/// The first three values are unresolved; the rest are outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DisputeStatus {
    /// No dispute was ever opened about the work.
    None,
    Open,
    UnderReview,
    InMediation,
    ResolvedUpheld,
    ResolvedRejected,
    Settled,
    Withdrawn,
}

impl DisputeStatus {
    /// Whether a dispute in this status is still open on the platform.
    pub fn is_unresolved(self) -> bool {
        matches!(self, DisputeStatus::Open | DisputeStatus::UnderReview | DisputeStatus::InMediation)
    }
}

/// One dispute about a work, without any detail about the claimant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DisputeSummary {
    pub dispute_id: String,
    pub grounds: String,
    pub status: DisputeStatus,
    pub opened_at: crate::calendar::Timestamp,
    pub updated_at: crate::calendar::Timestamp,
}
