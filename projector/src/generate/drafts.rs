//! The vocabulary of generated events before they are numbered: a
//! [`Draft`] names its topic, aggregate, time and [`Payload`], and may carry
//! a deliberate [`Malformation`]. The worlds ([`super::world`],
//! [`super::sandbox`]) produce drafts; the generator writes them as Avro.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::LicenseStatus;

use crate::contract::Topic;
use crate::events::{LicenseGrant, PartyProfile, RightRecord, WorkAmendment, WorkRecord};

/// A day, in milliseconds.
pub const DAY: i64 = 86_400_000;
/// 2023-01-01T00:00:00Z: the start of the generated timeline.
pub(super) const TIMELINE_START: i64 = 1_672_531_200_000;
/// The timeline spans three years.
pub(super) const TIMELINE_DAYS: i64 = 3 * 365;
/// Where rights and licenses apply; the world most often.
pub(super) const TERRITORIES: &[&str] = &["WORLD", "WORLD", "WORLD", "FR", "DE", "ES", "IT", "PL"];

/// Personal data of a party: generated only to prove it never reaches the read side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonalData {
    pub email: String,
    pub phone: String,
    pub postal_address: String,
    pub birth_date: Option<Date>,
    pub national_id: String,
}

/// The content of a generated event.
#[derive(Debug, Clone)]
pub enum Payload {
    WorkRegistered(WorkRecord),
    WorkAmended(WorkAmendment),
    WorkPublished(Timestamp),
    WorkWithdrawn(String),
    /// An event type newer than the contract: undecodable by this projector.
    WorkArchived,
    RightsChain(Vec<RightRecord>, bool),
    Availability(bool),
    LicenseGranted(LicenseGrant),
    LicenseStatus(LicenseStatus, Date, Option<String>),
    LicenseRenewed(Option<Date>),
    DisputeOpened(String, &'static str),
    DisputeUpdated(String, &'static str),
    DisputeResolved(String, &'static str),
    CertificateIssued(String, String, Timestamp),
    CertificateRevoked(String, String),
    PartyRegistered(PartyProfile, PersonalData),
    PartyRenamed(String),
    PartyIdentifiers(Option<String>, Option<String>),
    PartyPersonalData(PersonalData),
}

impl Payload {
    pub fn type_name(&self) -> &'static str {
        match self {
            Payload::WorkRegistered(_) => "WorkRegistered",
            Payload::WorkAmended(_) => "WorkAmended",
            Payload::WorkPublished(_) => "WorkPublished",
            Payload::WorkWithdrawn(_) => "WorkWithdrawn",
            Payload::WorkArchived => "WorkArchived",
            Payload::RightsChain(..) => "RightsChainRecorded",
            Payload::Availability(_) => "LicensingAvailabilityChanged",
            Payload::LicenseGranted(_) => "LicenseGranted",
            Payload::LicenseStatus(..) => "LicenseStatusChanged",
            Payload::LicenseRenewed(_) => "LicenseRenewed",
            Payload::DisputeOpened(..) => "DisputeOpened",
            Payload::DisputeUpdated(..) => "DisputeUpdated",
            Payload::DisputeResolved(..) => "DisputeResolved",
            Payload::CertificateIssued(..) => "CertificateIssued",
            Payload::CertificateRevoked(..) => "CertificateRevoked",
            Payload::PartyRegistered(..) => "PartyRegistered",
            Payload::PartyRenamed(_) => "PartyRenamed",
            Payload::PartyIdentifiers(..) => "PartyIdentifiersChanged",
            Payload::PartyPersonalData(_) => "PartyPersonalDataChanged",
        }
    }
}

/// A deliberate defect in the envelope of an otherwise well-formed event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformation {
    /// `eventType` names another payload.
    WrongEventType,
    /// `aggregateVersion` is 0.
    ZeroVersion,
}

/// One event before versions and ids are assigned.
#[derive(Debug, Clone)]
pub struct Draft {
    pub topic: Topic,
    pub aggregate_id: String,
    pub at: Timestamp,
    pub payload: Payload,
    pub malformation: Option<Malformation>,
    /// Whether the projector must park this event.
    pub must_be_parked: bool,
}

impl Draft {
    pub fn new(topic: Topic, aggregate_id: &str, at: i64, payload: Payload) -> Draft {
        Draft {
            topic,
            aggregate_id: aggregate_id.to_owned(),
            at: Timestamp(at),
            payload,
            malformation: None,
            must_be_parked: false,
        }
    }
}
