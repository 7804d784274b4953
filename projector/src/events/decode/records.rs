//! The contract's Avro records as Rust types, each read from the bytes in
//! the contract's field order, and the change each makes (see the parent
//! module for when bytes may be read this way).
//!
//! Each record's struct lists its fields in the contract's order; each
//! payload union is an enum of its branches in the contract's order, with
//! one more for a branch beyond them; each Avro enum is read through the
//! table of its symbols, in the contract's order, and what each means here.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{
    CreatorRole, DisputeStatus, HolderRole, LicenseKind, LicenseStatus, PartyKind, RightType, WorkType,
};

use super::RecordError;
use super::binary::{self, BinaryError};
use crate::contract::Topic;
use crate::events::{
    Change, Creator, Envelope, Event, LicenseGrant, PartyProfile, RightRecord, WorkAmendment, WorkRecord,
};

/// A value of the contract, read from its bytes.
pub(in crate::events) trait Decode: Sized {
    fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError>;
}

/// Each primitive of the contract, read as [`binary`] reads its kind.
macro_rules! primitives {
    ($($type:ty => $read:path),+ $(,)?) => {$(
        impl Decode for $type {
            fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
                $read(bytes)
            }
        }
    )+};
}

primitives! { String => binary::string, i64 => binary::long, i32 => binary::int, bool => binary::boolean }

/// Every optional field of the contract is a union of null, first, and its type.
impl<T: Decode> Decode for Option<T> {
    fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
        binary::optional(bytes, T::decode)
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
        binary::array(bytes, T::decode)
    }
}

/// Declares a record of the contract and reads it field by field.
macro_rules! record {
    ($(#[$attribute:meta])* $visibility:vis struct $name:ident { $($field:ident: $type:ty),+ $(,)? }) => {
        $(#[$attribute])*
        $visibility struct $name {
            $($field: $type),+
        }

        impl Decode for $name {
            fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
                // A struct expression evaluates its fields in the order they
                // are written, which is the contract's.
                Ok($name { $($field: Decode::decode(bytes)?),+ })
            }
        }

        #[cfg(test)]
        impl $name {
            /// The fields as declared, for the test that holds them to the contract.
            const FIELDS: &[&str] = &[$(stringify!($field)),+];
        }
    };
}

/// One payload record of the contract, as the change it makes.
trait IntoChange {
    fn into_change(self) -> Result<Change, RecordError>;
}

/// Each topic's event record (named as in the contract) and its payload
/// union, whose branches are listed in the contract's order. The value of a
/// branch beyond them (a newer event type) is not read here: its schema is
/// the writer's alone (see [`super::decode_datum`]).
macro_rules! topic_events {
    ($($record:ident: $topic:ident => $payload:ident { $($branch:ident),+ $(,)? })+) => {$(
        record! {
            pub(in crate::events) struct $record {
                envelope: EnvelopeRecord,
                payload: $payload,
            }
        }

        enum $payload {
            $($branch($branch),)+
            OutsideContract(u32),
        }

        impl Decode for $payload {
            fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
                let index = binary::branch(bytes, None)?;
                // The branches of the contract, in order: the first has index 0.
                let mut place = 0_u32;
                $(
                    if index == place {
                        return $branch::decode(bytes).map($payload::$branch);
                    }
                    place += 1;
                )+
                let _ = place;
                Ok($payload::OutsideContract(index))
            }
        }

        #[cfg(test)]
        impl $payload {
            /// The branches as declared, for the test that holds them to the contract.
            const BRANCHES: &[&str] = &[$(stringify!($branch)),+];
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

record! {
    struct EnvelopeRecord {
        event_id: String,
        event_type: String,
        aggregate_id: String,
        aggregate_version: i64,
        occurred_at: i64,
        recorded_at: i64,
        source_system: String,
    }
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

record! {
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

record! {
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

record! {
    struct CreatorRecord {
        party_id: String,
        role: Symbol<CreatorRoles>,
    }
}

fn creators(records: Vec<CreatorRecord>) -> Vec<Creator> {
    records.into_iter().map(|record| Creator { party_id: record.party_id, role: record.role.0 }).collect()
}

record! {
    struct WorkPublished {
        published_at: i64,
    }
}

impl IntoChange for WorkPublished {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::WorkPublished { published_at: Timestamp(self.published_at) })
    }
}

record! {
    struct WorkWithdrawn {
        reason: String,
    }
}

impl IntoChange for WorkWithdrawn {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::WorkWithdrawn { reason: self.reason })
    }
}

record! {
    struct RightsChainRecorded {
        rights: Vec<Right>,
        open_for_licensing: bool,
    }
}

impl IntoChange for RightsChainRecorded {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::RightsChainRecorded {
            rights: self.rights.into_iter().map(Right::into_record).collect::<Result<_, _>>()?,
            open_for_licensing: self.open_for_licensing,
        })
    }
}

record! {
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

record! {
    struct LicensingAvailabilityChanged {
        open_for_licensing: bool,
    }
}

impl IntoChange for LicensingAvailabilityChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::LicensingAvailabilityChanged { open_for_licensing: self.open_for_licensing })
    }
}

record! {
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

record! {
    struct LicenseStatusChanged {
        status: Symbol<LicenseStatuses>,
        effective_from: i32,
        reason: Option<String>,
    }
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

record! {
    struct LicenseRenewed {
        valid_until: Option<i32>,
    }
}

impl IntoChange for LicenseRenewed {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::LicenseRenewed { valid_until: self.valid_until.map(Date) })
    }
}

record! {
    struct DisputeOpened {
        dispute_id: String,
        grounds: Symbol<DisputeGrounds>,
    }
}

impl IntoChange for DisputeOpened {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::DisputeOpened { dispute_id: self.dispute_id, grounds: self.grounds.0 })
    }
}

record! {
    struct DisputeUpdated {
        dispute_id: String,
        progress: Symbol<DisputeProgress>,
    }
}

impl IntoChange for DisputeUpdated {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::DisputeUpdated { dispute_id: self.dispute_id, status: self.progress.0 })
    }
}

record! {
    struct DisputeResolved {
        dispute_id: String,
        outcome: Symbol<DisputeOutcome>,
    }
}

impl IntoChange for DisputeResolved {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::DisputeResolved { dispute_id: self.dispute_id, status: self.outcome.0 })
    }
}

record! {
    struct CertificateIssued {
        certificate_id: String,
        sha256: String,
        issued_at: i64,
    }
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

record! {
    struct CertificateRevoked {
        certificate_id: String,
        reason: String,
    }
}

impl IntoChange for CertificateRevoked {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::CertificateRevoked { certificate_id: self.certificate_id, reason: self.reason })
    }
}

record! {
    struct PartyRegistered {
        profile: PartyPublicProfile,
        _personal_data: PersonalData,
    }
}

record! {
    struct PartyPublicProfile {
        name: String,
        kind: Symbol<PartyKinds>,
        ipi: Option<String>,
        isni: Option<String>,
    }
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

record! {
    struct PartyRenamed {
        name: String,
    }
}

impl IntoChange for PartyRenamed {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::PartyRenamed { name: self.name })
    }
}

record! {
    struct PartyIdentifiersChanged {
        ipi: Option<String>,
        isni: Option<String>,
    }
}

impl IntoChange for PartyIdentifiersChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::PartyIdentifiersChanged { ipi: self.ipi, isni: self.isni })
    }
}

record! {
    /// Carries only personal data, which is read past.
    struct PartyPersonalDataChanged {
        _personal_data: PersonalData,
    }
}

impl IntoChange for PartyPersonalDataChanged {
    fn into_change(self) -> Result<Change, RecordError> {
        Ok(Change::PartyPersonalDataChanged)
    }
}

/// A party's personal data, read past and kept nowhere: its fields are
/// three optional strings (email, phone, postal address), an optional date
/// (birth date) and an optional string (national id), as
/// `tests::personal_data_is_read_past_as_the_contract_writes_it` holds.
struct PersonalData;

impl Decode for PersonalData {
    fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
        for _ in 0..3 {
            binary::optional(bytes, binary::skip_string)?;
        }
        binary::optional(bytes, binary::int)?;
        binary::optional(bytes, binary::skip_string)?;
        Ok(PersonalData)
    }
}

/// The symbols of one Avro enum of the contract, in its order, and what each means here.
trait Symbols {
    type Value;
    /// The enum's name in the contract, for errors.
    const ENUM: &'static str;
    const SYMBOLS: &'static [&'static str];
    /// The meaning of the symbol at `index`, one of `SYMBOLS`' indexes.
    fn value(index: usize) -> Self::Value;
}

/// A symbol of the Avro enum `S`, read as what it means here.
struct Symbol<S: Symbols>(S::Value);

impl<S: Symbols> Decode for Symbol<S> {
    fn decode(bytes: &mut &[u8]) -> Result<Self, BinaryError> {
        let index = binary::symbol(bytes, S::ENUM, S::SYMBOLS.len())?;
        Ok(Symbol(S::value(index)))
    }
}

/// For each Avro enum, a type naming it and the meaning of each symbol.
macro_rules! symbols {
    ($($name:ident($avro:literal): $value:ident { $($symbol:literal => $variant:ident),+ $(,)? })+) => {$(
        struct $name;

        impl Symbols for $name {
            type Value = $value;
            const ENUM: &'static str = $avro;
            const SYMBOLS: &'static [&'static str] = &[$($symbol),+];

            fn value(index: usize) -> $value {
                const VALUES: &[$value] = &[$($value::$variant),+];
                VALUES[index]
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
    const SYMBOLS: &'static [&'static str] = &["OWNERSHIP", "SHARE_SPLIT", "ATTRIBUTION", "PLAGIARISM", "OTHER"];

    fn value(index: usize) -> String {
        Self::SYMBOLS[index].to_ascii_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::contract::Contract;

    /// Every enum of the contract is read with its symbols in the
    /// contract's order (an index read means the contract's symbol), and no
    /// two symbols of an enum mean the same here (grounds are kept as written).
    #[test]
    fn every_symbol_of_the_contract_is_read_at_its_index_with_a_meaning_of_its_own() {
        fn meanings<S: Symbols>(symbols: &[String]) -> usize
        where
            S::Value: std::fmt::Debug,
        {
            assert_eq!(S::SYMBOLS, symbols, "{}", S::ENUM);
            (0..symbols.len()).map(|index| format!("{:?}", S::value(index))).collect::<BTreeSet<_>>().len()
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
                assert_eq!(distinct, symbols.len(), "{name}: {symbols:?}");
                found.insert(name);
            }
        }
        assert_eq!(found.len(), 10, "{found:?}");
    }

    /// [`PersonalData`] reads past the fields the contract gives a party's
    /// personal data, in their order, without a type for them.
    #[test]
    fn personal_data_is_read_past_as_the_contract_writes_it() {
        let contract = Contract::load().expect("the contract");
        let json = serde_json::to_value(contract.reader_schema(Topic::Parties)).expect("the schema as JSON");
        let mut records = Vec::new();
        collect_records(&json, &mut records);
        let personal = records
            .iter()
            .find(|record| record["name"].as_str().is_some_and(|name| name.ends_with("PartyPersonalData")))
            .expect("the personal data record");
        let types: Vec<String> =
            personal["fields"].as_array().expect("fields").iter().map(|field| field["type"].to_string()).collect();
        let string = r#"["null","string"]"#;
        let date = r#"["null",{"logicalType":"date","type":"int"}]"#;
        assert_eq!(types, [string, string, string, date, string]);
    }

    /// Every record of the contract but a party's personal data (read past
    /// by [`PersonalData`]) has a type here that lists its fields by name,
    /// in the contract's order.
    #[test]
    fn every_record_type_lists_its_records_fields_in_the_contracts_order() {
        let declared: Vec<(&str, &[&str])> = vec![
            ("Envelope", EnvelopeRecord::FIELDS),
            ("WorkEvent", WorkEvent::FIELDS),
            ("WorkRegistered", WorkRegistered::FIELDS),
            ("Creator", CreatorRecord::FIELDS),
            ("WorkAmended", WorkAmended::FIELDS),
            ("WorkPublished", WorkPublished::FIELDS),
            ("WorkWithdrawn", WorkWithdrawn::FIELDS),
            ("RightsEvent", RightsEvent::FIELDS),
            ("RightsChainRecorded", RightsChainRecorded::FIELDS),
            ("Right", Right::FIELDS),
            ("LicensingAvailabilityChanged", LicensingAvailabilityChanged::FIELDS),
            ("LicenseEvent", LicenseEvent::FIELDS),
            ("LicenseGranted", LicenseGranted::FIELDS),
            ("LicenseStatusChanged", LicenseStatusChanged::FIELDS),
            ("LicenseRenewed", LicenseRenewed::FIELDS),
            ("DisputeEvent", DisputeEvent::FIELDS),
            ("DisputeOpened", DisputeOpened::FIELDS),
            ("DisputeUpdated", DisputeUpdated::FIELDS),
            ("DisputeResolved", DisputeResolved::FIELDS),
            ("CertificateEvent", CertificateEvent::FIELDS),
            ("CertificateIssued", CertificateIssued::FIELDS),
            ("CertificateRevoked", CertificateRevoked::FIELDS),
            ("PartyEvent", PartyEvent::FIELDS),
            ("PartyRegistered", PartyRegistered::FIELDS),
            ("PartyPublicProfile", PartyPublicProfile::FIELDS),
            ("PartyRenamed", PartyRenamed::FIELDS),
            ("PartyIdentifiersChanged", PartyIdentifiersChanged::FIELDS),
            ("PartyPersonalDataChanged", PartyPersonalDataChanged::FIELDS),
        ];
        let snake_case = |name: &str| {
            let mut snake = String::new();
            for character in name.chars() {
                if character.is_ascii_uppercase() {
                    snake.push('_');
                }
                snake.push(character.to_ascii_lowercase());
            }
            snake
        };
        let contract = Contract::load().expect("the contract");
        let mut in_contract = std::collections::BTreeMap::new();
        for topic in Topic::ALL {
            let json = serde_json::to_value(contract.reader_schema(topic)).expect("the schema as JSON");
            let mut records = Vec::new();
            collect_records(&json, &mut records);
            for record in records {
                let name = record["name"].as_str().expect("a name").rsplit('.').next().unwrap_or_default();
                let fields = record["fields"].as_array().expect("fields").iter();
                let fields: Vec<String> =
                    fields.map(|field| snake_case(field["name"].as_str().expect("a name"))).collect();
                in_contract.insert(name.to_owned(), fields);
            }
        }
        assert!(in_contract.remove("PartyPersonalData").is_some());
        for (name, fields) in &declared {
            let fields: Vec<&str> = fields.iter().map(|field| field.trim_start_matches('_')).collect();
            assert_eq!(
                in_contract.remove(*name),
                Some(fields.iter().map(|field| field.to_string()).collect()),
                "{name}"
            );
        }
        assert!(in_contract.is_empty(), "records of the contract with no type here: {in_contract:?}");
    }

    /// Each payload union's branches are declared in the contract's order,
    /// so that a branch index read means the contract's record.
    #[test]
    fn every_payload_lists_its_unions_branches_in_the_contracts_order() {
        let contract = Contract::load().expect("the contract");
        for (topic, declared) in [
            (Topic::Works, WorkPayload::BRANCHES),
            (Topic::Rights, RightsPayload::BRANCHES),
            (Topic::Licenses, LicensePayload::BRANCHES),
            (Topic::Disputes, DisputePayload::BRANCHES),
            (Topic::Certificates, CertificatePayload::BRANCHES),
            (Topic::Parties, PartyPayload::BRANCHES),
        ] {
            let json = serde_json::to_value(contract.reader_schema(topic)).expect("the schema as JSON");
            let payload = json["fields"].as_array().expect("fields").iter().find(|field| field["name"] == "payload");
            let branches = payload.and_then(|payload| payload["type"].as_array()).expect("a payload union");
            let names: Vec<&str> = branches
                .iter()
                .map(|branch| branch.as_str().or_else(|| branch["name"].as_str()).expect("a named branch"))
                .map(|name| name.rsplit('.').next().unwrap_or_default())
                .collect();
            assert_eq!(names, declared, "{}", topic.name());
        }
    }

    fn collect_records<'a>(json: &'a serde_json::Value, records: &mut Vec<&'a serde_json::Value>) {
        match json {
            serde_json::Value::Object(object) => {
                if object.get("type").and_then(serde_json::Value::as_str) == Some("record") {
                    records.push(json);
                }
                object.values().for_each(|value| collect_records(value, records));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| collect_records(item, records)),
            _ => {}
        }
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
