//! The contract's Avro records as Rust types, for apache-avro's schema-aware
//! serde deserializer, and the change each makes (see the parent module for
//! how the deserializer holds them to the contract).
//!
//! Each record's struct bears its Avro name and its fields' names; each
//! payload union is an enum of its branches in the contract's order, with
//! one more for a branch beyond them; each Avro enum is read through the
//! table of what its symbols mean here.

use std::marker::PhantomData;

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{
    CreatorRole, DisputeStatus, HolderRole, LicenseKind, LicenseStatus, PartyKind, RightType, WorkType,
};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, VariantAccess, Visitor};

use super::RecordError;
use crate::contract::Topic;
use crate::events::{
    Change, Creator, Envelope, Event, LicenseGrant, PartyProfile, RightRecord, WorkAmendment, WorkRecord,
};

/// One payload record of the contract, as the change it makes.
trait IntoChange {
    fn into_change(self) -> Result<Change, RecordError>;
}

/// Each topic's event record (named as in the contract) and its payload
/// union, whose branches are listed in the contract's order. A branch
/// beyond them (a newer event type) is read past and rejected.
macro_rules! topic_events {
    ($($record:ident: $topic:ident => $payload:ident { $($branch:ident),+ $(,)? })+) => {$(
        #[derive(Deserialize)]
        pub(in crate::events) struct $record {
            envelope: EnvelopeRecord,
            payload: $payload,
        }

        enum $payload {
            $($branch($branch),)+
            OutsideContract(u32),
        }

        impl<'de> Deserialize<'de> for $payload {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Branches;

                impl<'de> Visitor<'de> for Branches {
                    type Value = $payload;

                    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        formatter.write_str(concat!("a branch of ", stringify!($payload)))
                    }

                    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<$payload, A::Error> {
                        let (index, branch) = data.variant_seed(BranchIndex)?;
                        // The branches of the contract, in order: the first has index 0.
                        let mut place = 0_u32;
                        $(
                            if index == place {
                                return branch.newtype_variant::<$branch>().map($payload::$branch);
                            }
                            place += 1;
                        )+
                        let _ = place;
                        branch.newtype_variant::<Skipped>().map(|_| $payload::OutsideContract(index))
                    }
                }

                deserializer.deserialize_enum(stringify!($payload), &[$(stringify!($branch)),+], Branches)
            }
        }

        impl $record {
            pub(in crate::events) fn into_event(self) -> Result<Event, RecordError> {
                let change = match self.payload {
                    $($payload::$branch(record) => record.into_change()?,)+
                    $payload::OutsideContract(index) => return Err(RecordError::OutsideContract(index)),
                };
                Ok(Event { topic: Topic::$topic, envelope: self.envelope.into_envelope(), change })
            }
        }
    )+};
}

topic_events! {
    WorkEvent: Works => WorkPayload { WorkRegistered, WorkAmended, WorkPublished, WorkWithdrawn }
    RightsEvent: Rights => RightsPayload { RightsChainRecorded, LicensingAvailabilityChanged }
    LicenseEvent: Licenses => LicensePayload { LicenseGranted, LicenseStatusChanged, LicenseRenewed }
    DisputeEvent: Disputes => DisputePayload { DisputeOpened, DisputeUpdated, DisputeResolved }
    CertificateEvent: Certificates => CertificatePayload { CertificateIssued, CertificateRevoked }
    PartyEvent: Parties => PartyPayload {
        PartyRegistered, PartyRenamed, PartyIdentifiersChanged, PartyPersonalDataChanged,
    }
}

#[derive(Deserialize)]
#[serde(rename = "Envelope", rename_all = "camelCase")]
struct EnvelopeRecord {
    event_id: String,
    event_type: String,
    aggregate_id: String,
    aggregate_version: i64,
    occurred_at: i64,
    recorded_at: i64,
    source_system: String,
}

impl EnvelopeRecord {
    fn into_envelope(self) -> Envelope {
        Envelope {
            event_id: self.event_id,
            event_type: self.event_type,
            aggregate_id: self.aggregate_id,
            // A version below 1 is rejected by validation, as 0 is.
            aggregate_version: u64::try_from(self.aggregate_version).unwrap_or(0),
            occurred_at: Timestamp(self.occurred_at),
            recorded_at: Timestamp(self.recorded_at),
            source_system: self.source_system,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkRegistered {
    title: String,
    alternative_titles: Vec<String>,
    iswc: Option<String>,
    isrcs: Vec<String>,
    creators: Vec<CreatorRecord>,
    language: Option<String>,
    work_type: Symbol<WorkTypes>,
    created_on: Option<i32>,
    description: Option<String>,
    subjects: Vec<String>,
    publisher_party_id: Option<String>,
    related_work_ids: Vec<String>,
    file_sha256: String,
    file_format: Option<String>,
    earliest_recorded_at: i64,
}

impl IntoChange for WorkRegistered {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::WorkRegistered(WorkRecord {
            title: self.title,
            alternative_titles: self.alternative_titles,
            iswc: self.iswc,
            isrcs: self.isrcs,
            creators: creators(self.creators),
            language: self.language,
            work_type: self.work_type.0,
            created_on: self.created_on.map(Date),
            description: self.description,
            subjects: self.subjects,
            publisher_party_id: self.publisher_party_id,
            related_work_ids: self.related_work_ids,
            file_sha256: self.file_sha256,
            file_format: self.file_format,
            earliest_recorded_at: Timestamp(self.earliest_recorded_at),
        }))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkAmended {
    title: Option<String>,
    alternative_titles: Option<Vec<String>>,
    iswc: Option<String>,
    isrcs: Option<Vec<String>>,
    creators: Option<Vec<CreatorRecord>>,
    language: Option<String>,
    work_type: Option<Symbol<WorkTypes>>,
    created_on: Option<i32>,
    description: Option<String>,
    subjects: Option<Vec<String>>,
    publisher_party_id: Option<String>,
    related_work_ids: Option<Vec<String>>,
    file_format: Option<String>,
}

impl IntoChange for WorkAmended {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::WorkAmended(WorkAmendment {
            title: self.title,
            alternative_titles: self.alternative_titles,
            iswc: self.iswc,
            isrcs: self.isrcs,
            creators: self.creators.map(creators),
            language: self.language,
            work_type: self.work_type.map(|symbol| symbol.0),
            created_on: self.created_on.map(Date),
            description: self.description,
            subjects: self.subjects,
            publisher_party_id: self.publisher_party_id,
            related_work_ids: self.related_work_ids,
            file_format: self.file_format,
        }))
    }
}

#[derive(Deserialize)]
#[serde(rename = "Creator", rename_all = "camelCase")]
struct CreatorRecord {
    party_id: String,
    role: Symbol<CreatorRoles>,
}

fn creators(records: Vec<CreatorRecord>) -> Vec<Creator> {
    records.into_iter().map(|record| Creator { party_id: record.party_id, role: record.role.0 }).collect()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkPublished {
    published_at: i64,
}

impl IntoChange for WorkPublished {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::WorkPublished { published_at: Timestamp(self.published_at) })
    }
}

#[derive(Deserialize)]
struct WorkWithdrawn {
    reason: String,
}

impl IntoChange for WorkWithdrawn {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::WorkWithdrawn { reason: self.reason })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RightsChainRecorded {
    rights: Vec<Right>,
    open_for_licensing: bool,
}

impl IntoChange for RightsChainRecorded {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::RightsChainRecorded {
            rights: self.rights.into_iter().map(Right::into_record).collect::<Result<_, _>>()?,
            open_for_licensing: self.open_for_licensing,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Right {
    right_id: String,
    right_type: Symbol<RightTypes>,
    holder_party_id: String,
    role: Symbol<HolderRoles>,
    share_basis_points: i32,
    acquired_from_party_id: Option<String>,
    territory: String,
    valid_from: i32,
    valid_until: Option<i32>,
    protection_ends_on: i32,
}

impl Right {
    fn into_record(self) -> Result<RightRecord, RecordError> {
        let share = self.share_basis_points;
        Ok(RightRecord {
            right_id: self.right_id,
            right_type: self.right_type.0,
            holder_party_id: self.holder_party_id,
            role: self.role.0,
            share_basis_points: u32::try_from(share)
                .map_err(|_| RecordError::Shape(format!("right.shareBasisPoints: {share} is negative")))?,
            acquired_from_party_id: self.acquired_from_party_id,
            territory: self.territory,
            valid_from: Date(self.valid_from),
            valid_until: self.valid_until.map(Date),
            protection_ends_on: Date(self.protection_ends_on),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LicensingAvailabilityChanged {
    open_for_licensing: bool,
}

impl IntoChange for LicensingAvailabilityChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::LicensingAvailabilityChanged { open_for_licensing: self.open_for_licensing })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LicenseGranted {
    kind: Symbol<LicenseKinds>,
    licensee_party_id: String,
    status: Symbol<LicenseStatuses>,
    valid_from: i32,
    valid_until: Option<i32>,
    covered_work_ids: Vec<String>,
    repertoire: Option<String>,
    territory: String,
}

impl IntoChange for LicenseGranted {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::LicenseGranted(LicenseGrant {
            kind: self.kind.0,
            licensee_party_id: self.licensee_party_id,
            status: self.status.0,
            valid_from: Date(self.valid_from),
            valid_until: self.valid_until.map(Date),
            covered_work_ids: self.covered_work_ids,
            repertoire: self.repertoire,
            territory: self.territory,
        }))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LicenseStatusChanged {
    status: Symbol<LicenseStatuses>,
    effective_from: i32,
    reason: Option<String>,
}

impl IntoChange for LicenseStatusChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::LicenseStatusChanged {
            status: self.status.0,
            effective_from: Date(self.effective_from),
            reason: self.reason,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LicenseRenewed {
    valid_until: Option<i32>,
}

impl IntoChange for LicenseRenewed {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::LicenseRenewed { valid_until: self.valid_until.map(Date) })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisputeOpened {
    dispute_id: String,
    grounds: Symbol<DisputeGrounds>,
}

impl IntoChange for DisputeOpened {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::DisputeOpened { dispute_id: self.dispute_id, grounds: self.grounds.0 })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisputeUpdated {
    dispute_id: String,
    progress: Symbol<DisputeProgress>,
}

impl IntoChange for DisputeUpdated {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::DisputeUpdated { dispute_id: self.dispute_id, status: self.progress.0 })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisputeResolved {
    dispute_id: String,
    outcome: Symbol<DisputeOutcome>,
}

impl IntoChange for DisputeResolved {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::DisputeResolved { dispute_id: self.dispute_id, status: self.outcome.0 })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertificateIssued {
    certificate_id: String,
    sha256: String,
    issued_at: i64,
}

impl IntoChange for CertificateIssued {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::CertificateIssued {
            certificate_id: self.certificate_id,
            sha256: self.sha256,
            issued_at: Timestamp(self.issued_at),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertificateRevoked {
    certificate_id: String,
    reason: String,
}

impl IntoChange for CertificateRevoked {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::CertificateRevoked { certificate_id: self.certificate_id, reason: self.reason })
    }
}

#[derive(Deserialize)]
struct PartyRegistered {
    profile: PartyPublicProfile,
    #[serde(rename = "personalData")]
    _personal_data: Skipped,
}

#[derive(Deserialize)]
struct PartyPublicProfile {
    name: String,
    kind: Symbol<PartyKinds>,
    ipi: Option<String>,
    isni: Option<String>,
}

impl IntoChange for PartyRegistered {
    fn into_change(self) -> Result<Change, RecordError> {
        let profile = self.profile;
        Ok(Change::PartyRegistered(PartyProfile {
            name: profile.name,
            kind: profile.kind.0,
            ipi: profile.ipi,
            isni: profile.isni,
        }))
    }
}

#[derive(Deserialize)]
struct PartyRenamed {
    name: String,
}

impl IntoChange for PartyRenamed {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::PartyRenamed { name: self.name })
    }
}

#[derive(Deserialize)]
struct PartyIdentifiersChanged {
    ipi: Option<String>,
    isni: Option<String>,
}

impl IntoChange for PartyIdentifiersChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::PartyIdentifiersChanged { ipi: self.ipi, isni: self.isni })
    }
}

/// Carries only personal data, which is skipped.
#[derive(Deserialize)]
struct PartyPersonalDataChanged {
    #[serde(rename = "personalData")]
    _personal_data: Skipped,
}

impl IntoChange for PartyPersonalDataChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::PartyPersonalDataChanged)
    }
}

/// Any Avro value, read past and kept nowhere. (serde's `IgnoredAny` cannot
/// read past a record here: apache-avro's deserializer gives a record's
/// field names only to `deserialize_identifier`, which it does not call. A
/// field left out of a struct is read as `IgnoredAny`, so a record field the
/// projector does not keep is named, with this type.)
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Skipping)
    }
}

/// Reads past a value of any shape, or a field name or symbol.
struct Skipping;

impl<'de> DeserializeSeed<'de> for Skipping {
    type Value = Skipped;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Skipped, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for Skipping {
    type Value = Skipped;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_none<E: de::Error>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Skipped, D::Error> {
        Skipped::deserialize(deserializer)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut items: A) -> Result<Skipped, A::Error> {
        while items.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut fields: A) -> Result<Skipped, A::Error> {
        while fields.next_key_seed(Skipping)?.is_some() {
            fields.next_value::<Skipped>()?;
        }
        Ok(Skipped)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Skipped, A::Error> {
        // Only an Avro enum reaches here (a union is read as its branch): a symbol.
        let (_, symbol) = data.variant_seed(Skipping)?;
        symbol.unit_variant()?;
        Ok(Skipped)
    }
}

/// The index of a union's branch, as the deserializer gives it.
struct BranchIndex;

impl<'de> DeserializeSeed<'de> for BranchIndex {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u32, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for BranchIndex {
    type Value = u32;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a union branch index")
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<u32, E> {
        u32::try_from(index).map_err(|_| E::custom(format_args!("union branch {index} is out of range")))
    }
}

/// The symbols of one Avro enum of the contract and what each means here.
trait Symbols {
    type Value;
    /// The enum's name in the contract, for errors.
    const ENUM: &'static str;
    fn value(symbol: &str) -> Option<Self::Value>;
}

/// A symbol of the Avro enum `S`, read as what it means here.
struct Symbol<S: Symbols>(S::Value);

impl<'de, S: Symbols> Deserialize<'de> for Symbol<S> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_enum(S::ENUM, &[], SymbolVisitor(PhantomData::<S>))
    }
}

struct SymbolVisitor<S>(PhantomData<S>);

impl<'de, S: Symbols> Visitor<'de> for SymbolVisitor<S> {
    type Value = Symbol<S>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "a symbol of the enum {}", S::ENUM)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        let (value, variant) = data.variant_seed(SymbolVisitor(PhantomData::<S>))?;
        variant.unit_variant()?;
        Ok(value)
    }

    fn visit_str<E: de::Error>(self, symbol: &str) -> Result<Self::Value, E> {
        S::value(symbol).map(Symbol).ok_or_else(|| E::custom(format_args!("{}: unknown symbol {symbol}", S::ENUM)))
    }
}

impl<'de, S: Symbols> DeserializeSeed<'de> for SymbolVisitor<S> {
    type Value = Symbol<S>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

/// For each Avro enum, a type naming it and the meaning of each symbol.
macro_rules! symbols {
    ($($name:ident($avro:literal): $value:ident { $($symbol:literal => $variant:ident),+ $(,)? })+) => {$(
        struct $name;

        impl Symbols for $name {
            type Value = $value;
            const ENUM: &'static str = $avro;

            fn value(symbol: &str) -> Option<$value> {
                Some(match symbol {
                    $($symbol => $value::$variant,)+
                    _ => return None,
                })
            }
        }
    )+};
}

symbols! {
    WorkTypes("WorkType"): WorkType {
        "MUSICAL_WORK" => MusicalWork,
        "SOUND_RECORDING" => SoundRecording,
        "LITERARY_WORK" => LiteraryWork,
        "AUDIOVISUAL_WORK" => AudiovisualWork,
        "VISUAL_WORK" => VisualWork,
        "SOFTWARE" => Software,
        "OTHER" => Other,
    }
    CreatorRoles("CreatorRole"): CreatorRole {
        "AUTHOR" => Author,
        "COMPOSER" => Composer,
        "LYRICIST" => Lyricist,
        "ARRANGER" => Arranger,
        "TRANSLATOR" => Translator,
        "PERFORMER" => Performer,
        "PRODUCER" => Producer,
        "OTHER" => Other,
    }
    RightTypes("RightType"): RightType {
        "AUTHORS_RIGHT" => AuthorsRight,
        "RELATED_RIGHT" => RelatedRight,
    }
    HolderRoles("HolderRole"): HolderRole {
        "AUTHOR" => Author,
        "COMPOSER" => Composer,
        "LYRICIST" => Lyricist,
        "PUBLISHER" => Publisher,
        "PERFORMER" => Performer,
        "PRODUCER" => Producer,
        "BROADCASTER" => Broadcaster,
        "SUCCESSOR" => Successor,
        "OTHER" => Other,
    }
    LicenseKinds("LicenseKind"): LicenseKind {
        "Blanket" => Blanket,
        "Individual" => Individual,
    }
    LicenseStatuses("LicenseStatus"): LicenseStatus {
        "PENDING" => Pending,
        "ACTIVE" => Active,
        "SUSPENDED" => Suspended,
        "EXPIRED" => Expired,
        "TERMINATED" => Terminated,
        "REVOKED" => Revoked,
    }
    DisputeProgress("DisputeProgress"): DisputeStatus {
        "OPEN" => Open,
        "UNDER_REVIEW" => UnderReview,
        "IN_MEDIATION" => InMediation,
    }
    DisputeOutcome("DisputeOutcome"): DisputeStatus {
        "UPHELD" => ResolvedUpheld,
        "REJECTED" => ResolvedRejected,
        "SETTLED" => Settled,
        "WITHDRAWN" => Withdrawn,
    }
    PartyKinds("PartyKind"): PartyKind {
        "PERSON" => Person,
        "ORGANISATION" => Organisation,
    }
}

/// Grounds are kept as their symbol in lower case.
struct DisputeGrounds;

impl Symbols for DisputeGrounds {
    type Value = String;
    const ENUM: &'static str = "DisputeGrounds";

    fn value(symbol: &str) -> Option<String> {
        Some(symbol.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::contract::Contract;

    /// Every symbol of every enum of the contract means something here, and
    /// no two symbols of an enum mean the same (grounds are kept as written).
    #[test]
    fn every_symbol_of_the_contract_has_a_meaning_of_its_own() {
        fn meanings<S: Symbols>(symbols: &[String]) -> Option<usize>
        where
            S::Value: std::fmt::Debug,
        {
            let values: Option<BTreeSet<String>> =
                symbols.iter().map(|symbol| S::value(symbol).map(|value| format!("{value:?}"))).collect();
            values.map(|values| values.len())
        }
        let contract = Contract::load().expect("the contract");
        let mut found = BTreeSet::new();
        for topic in Topic::ALL {
            let json = serde_json::to_value(contract.reader_schema(topic)).expect("the schema as JSON");
            let mut enums = Vec::new();
            collect_enums(&json, &mut enums);
            for (name, symbols) in enums {
                let distinct = match name.rsplit('.').next().unwrap_or_default() {
                    "WorkType" => meanings::<WorkTypes>(&symbols),
                    "CreatorRole" => meanings::<CreatorRoles>(&symbols),
                    "RightType" => meanings::<RightTypes>(&symbols),
                    "HolderRole" => meanings::<HolderRoles>(&symbols),
                    "LicenseKind" => meanings::<LicenseKinds>(&symbols),
                    "LicenseStatus" => meanings::<LicenseStatuses>(&symbols),
                    "DisputeGrounds" => meanings::<DisputeGrounds>(&symbols),
                    "DisputeProgress" => meanings::<DisputeProgress>(&symbols),
                    "DisputeOutcome" => meanings::<DisputeOutcome>(&symbols),
                    "PartyKind" => meanings::<PartyKinds>(&symbols),
                    other => panic!("the enum {other} has no reading"),
                };
                assert_eq!(distinct, Some(symbols.len()), "{name}: {symbols:?}");
                found.insert(name);
            }
        }
        assert_eq!(found.len(), 10, "{found:?}");
    }

    fn collect_enums(json: &serde_json::Value, enums: &mut Vec<(String, Vec<String>)>) {
        match json {
            serde_json::Value::Object(object) => {
                if object.get("type").and_then(serde_json::Value::as_str) == Some("enum") {
                    let name = object["name"].as_str().unwrap_or_default().to_owned();
                    let symbols = object["symbols"].as_array().into_iter().flatten();
                    enums.push((name, symbols.filter_map(|symbol| symbol.as_str().map(str::to_owned)).collect()));
                }
                object.values().for_each(|value| collect_enums(value, enums));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| collect_enums(item, enums)),
            _ => {}
        }
    }
}
