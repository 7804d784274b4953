//! From Avro bytes to an [`Event`].
//!
//! Each topic's event record is read straight from the bytes into the
//! record types of [`records`], which are then turned into an event: the
//! fields in the contract's order, as [`binary`] reads each kind of value,
//! nothing passing through generic Avro values or a schema walked for each
//! event. That is only right for bytes written with the contract's schema,
//! or with a newer one that only adds event types after the contract's
//! (their values are read past with the writer's schema and rejected):
//! [`crate::resolution::Resolver::reads_directly`] tells which writers
//! those are, and a writer that needs resolving is resolved to the contract
//! and written again with it before it comes here
//! ([`crate::source::event_from_value`]). The records hold the projector
//! to the contract: each struct lists its record's fields in order, a
//! payload enum its union's branches in order, and an enum's table its
//! symbols in order, each checked against the contract by a test. A
//! party's personal data has no field in any type here: it is read past
//! and kept nowhere.

mod binary;
mod records;

pub use self::binary::BinaryError;
use self::records::{CertificateEvent, Decode, DisputeEvent, LicenseEvent, PartyEvent, RightsEvent, WorkEvent};
use super::Event;
use crate::contract::Topic;
use crate::datum_codec::DatumCodec;

/// Why a record read from the bytes does not make an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// It holds a value no event can have.
    #[error("{0}")]
    Shape(String),
    /// Its payload is the writer's union branch of this index, which is
    /// not a payload record of the contract.
    #[error("payload branch {0} is outside the contract")]
    OutsideContract(u32),
}

/// Why bytes do not hold a datum of the writer's schema.
#[derive(Debug, thiserror::Error)]
pub enum DatumError {
    #[error(transparent)]
    Binary(#[from] BinaryError),
    /// apache-avro's reader of the writer schema refused them: the datum of
    /// an event type outside the contract, read past, or of a writer that
    /// needs resolving, read as generic values.
    #[error(transparent)]
    Avro(#[from] apache_avro::Error),
}

/// Decodes one event of `topic` from `datum`, written with the schema of
/// `codec`: the contract's schema of the topic or one that reads directly
/// (see [`crate::resolution::Resolver::reads_directly`]); `datum` is left
/// after the event's bytes. The outer error is the bytes' (they do not hold
/// a record of the schema), the inner one the record's.
pub fn decode_datum(
    topic: Topic,
    codec: &DatumCodec,
    datum: &mut &[u8],
) -> Result<Result<Event, RecordError>, DatumError> {
    let start = *datum;
    let decoded = by_topic!(topic, Record => Record::decode(datum)?.into_event());
    if let Err(RecordError::OutsideContract(_)) = decoded {
        // The branch's value has the writer's schema alone: the whole datum
        // is read again with it, to leave `datum` after the event.
        *datum = start;
        codec.read_value(datum)?;
    }
    Ok(decoded)
}

/// Runs `$body` with `$record` naming the event record type of `$topic`.
macro_rules! by_topic {
    ($topic:expr, $record:ident => $body:expr) => {
        by_topic!(@each $topic, $record => $body;
            Works: WorkEvent, Rights: RightsEvent, Licenses: LicenseEvent,
            Disputes: DisputeEvent, Certificates: CertificateEvent, Parties: PartyEvent)
    };
    (@each $topic:expr, $record:ident => $body:expr; $($name:ident: $type:ident),+) => {
        match $topic {
            $(Topic::$name => {
                type $record = $type;
                $body
            })+
        }
    };
}
use by_topic;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use apache_avro::types::Value;
    use read_model::documents::DisputeStatus;

    use super::*;
    use crate::contract::Contract;
    use crate::events::Change;
    use crate::generate::drafts::{Draft, Malformation, Payload};
    use crate::generate::{Random, avro, sandbox, world};

    /// The contract's bytes of `value`, an event record of `topic`.
    fn datum(contract: &Contract, topic: Topic, value: Value) -> Vec<u8> {
        contract.datum_codec(topic).write_value(value).expect("a value of the contract")
    }

    fn decode(contract: &Contract, topic: Topic, bytes: &[u8]) -> Result<Result<Event, RecordError>, DatumError> {
        let mut rest = bytes;
        let decoded = decode_datum(topic, contract.datum_codec(topic), &mut rest);
        if decoded.is_ok() {
            assert!(rest.is_empty(), "{} bytes left after the event", rest.len());
        }
        decoded
    }

    /// What a draft's payload says, as the change it must decode to.
    fn expected_change(payload: &Payload) -> Change {
        let status = |symbol: &str| match symbol {
            "OPEN" => DisputeStatus::Open,
            "UNDER_REVIEW" => DisputeStatus::UnderReview,
            "IN_MEDIATION" => DisputeStatus::InMediation,
            "UPHELD" => DisputeStatus::ResolvedUpheld,
            "REJECTED" => DisputeStatus::ResolvedRejected,
            "SETTLED" => DisputeStatus::Settled,
            "WITHDRAWN" => DisputeStatus::Withdrawn,
            other => panic!("not a dispute symbol: {other}"),
        };
        match payload.clone() {
            Payload::WorkRegistered(work) => Change::WorkRegistered(work),
            Payload::WorkAmended(amendment) => Change::WorkAmended(amendment),
            Payload::WorkPublished(published_at) => Change::WorkPublished { published_at },
            Payload::WorkWithdrawn(reason) => Change::WorkWithdrawn { reason },
            Payload::WorkArchived => unreachable!("not an event type of the contract"),
            Payload::RightsChain(rights, open_for_licensing) => {
                Change::RightsChainRecorded { rights, open_for_licensing }
            }
            Payload::Availability(open_for_licensing) => Change::LicensingAvailabilityChanged { open_for_licensing },
            Payload::LicenseGranted(grant) => Change::LicenseGranted(grant),
            Payload::LicenseStatus(status, effective_from, reason) => {
                Change::LicenseStatusChanged { status, effective_from, reason }
            }
            Payload::LicenseRenewed(valid_until) => Change::LicenseRenewed { valid_until },
            Payload::DisputeOpened(dispute_id, grounds) => {
                Change::DisputeOpened { dispute_id, grounds: grounds.to_ascii_lowercase() }
            }
            Payload::DisputeUpdated(dispute_id, progress) => {
                Change::DisputeUpdated { dispute_id, status: status(progress) }
            }
            Payload::DisputeResolved(dispute_id, outcome) => {
                Change::DisputeResolved { dispute_id, status: status(outcome) }
            }
            Payload::CertificateIssued(certificate_id, sha256, issued_at) => {
                Change::CertificateIssued { certificate_id, sha256, issued_at }
            }
            Payload::CertificateRevoked(certificate_id, reason) => {
                Change::CertificateRevoked { certificate_id, reason }
            }
            Payload::PartyRegistered(profile, _) => Change::PartyRegistered(profile),
            Payload::PartyRenamed(name) => Change::PartyRenamed { name },
            Payload::PartyIdentifiers(ipi, isni) => Change::PartyIdentifiersChanged { ipi, isni },
            Payload::PartyPersonalData(_) => Change::PartyPersonalDataChanged,
        }
    }

    fn drafts() -> Vec<Draft> {
        let mut drafts = world::production_world(300, &mut Random::new(3));
        drafts.extend(sandbox::sandbox_world());
        drafts.retain(|draft| !matches!(draft.payload, Payload::WorkArchived));
        drafts
    }

    /// The generator writes each draft as a producer would, with explicit
    /// union branches and enum indexes; each must decode to what it drafted.
    #[test]
    fn every_drafted_event_decodes_to_its_draft() {
        let contract = Contract::load().expect("the contract");
        let mut types = BTreeSet::new();
        for (index, draft) in drafts().iter().enumerate() {
            let event_id = format!("event-{index}");
            let bytes = datum(&contract, draft.topic, avro::event_value(draft, 7, &event_id));
            let event = decode(&contract, draft.topic, &bytes).expect("bytes of the contract").expect("an event");
            assert_eq!(event.topic, draft.topic);
            let envelope = &event.envelope;
            assert_eq!(
                (envelope.event_id.as_str(), envelope.aggregate_id.as_str()),
                (event_id.as_str(), draft.aggregate_id.as_str())
            );
            let version = if draft.malformation == Some(Malformation::ZeroVersion) { 0 } else { 7 };
            assert_eq!(envelope.aggregate_version, version);
            assert_eq!((envelope.occurred_at.0, envelope.recorded_at), (draft.at.0 - 60_000, draft.at));
            assert_eq!(event.change, expected_change(&draft.payload), "{draft:?}");
            types.insert(event.change.type_name());
        }
        assert_eq!(types.len(), 18, "every payload record of the contract is drafted: {types:?}");
    }

    #[test]
    fn a_negative_share_is_an_error_of_the_record_and_bytes_cut_short_are_an_error_of_the_bytes() {
        let contract = Contract::load().expect("the contract");
        let drafts = drafts();
        let chain = drafts.iter().find(|draft| matches!(draft.payload, Payload::RightsChain(..))).expect("a chain");
        let mut value = avro::event_value(chain, 1, "event");
        set_first_share(&mut value, -5);
        let bytes = datum(&contract, Topic::Rights, value);
        let shape =
            decode(&contract, Topic::Rights, &bytes).expect("bytes of the contract").expect_err("a negative share");
        assert_eq!(shape, RecordError::Shape("right.shareBasisPoints: -5 is negative".into()));
        decode(&contract, Topic::Rights, &bytes[..bytes.len() - 2]).expect_err("bytes cut short");
    }

    /// A newer works schema adds an event type after the contract's: its
    /// bytes read directly, the contract's event types as they are and the
    /// newer one read past and rejected, the bytes after it still read.
    #[test]
    fn an_event_type_after_the_contract_is_read_past_and_rejected() {
        let newer =
            DatumCodec::new(crate::generate::future_works_schema().expect("the newer works schema")).expect("a codec");
        let drafts = drafts();
        let registered =
            drafts.iter().find(|draft| matches!(draft.payload, Payload::WorkRegistered(_))).expect("a work");
        let archived = Draft::new(Topic::Works, &registered.aggregate_id, registered.at.0, Payload::WorkArchived);
        let mut bytes = Vec::new();
        for draft in [&archived, registered] {
            bytes.extend(newer.write_value(avro::event_value(draft, 2, "event")).expect("a value"));
        }
        let mut rest = bytes.as_slice();
        let outside = decode_datum(Topic::Works, &newer, &mut rest).expect("bytes of the schema");
        assert_eq!(outside.expect_err("a newer event type"), RecordError::OutsideContract(4));
        let event = decode_datum(Topic::Works, &newer, &mut rest).expect("bytes of the schema").expect("an event");
        assert_eq!(event.change, expected_change(&registered.payload));
        assert!(rest.is_empty());
    }

    /// Bytes of every drafted event with bytes changed at random or cut
    /// short, read by the decoder and by apache-avro's generic reader of the
    /// contract's schema: whatever the decoder reads, apache-avro reads too,
    /// taking the same bytes, as a value whose event is the one decoded; and
    /// whatever apache-avro reads as the very bytes it would write, the
    /// decoder reads. The second holds only there because apache-avro reads
    /// some datums that end too soon: a union whose branch index is cut off
    /// as its null branch, a string cut short as a null (not a value of the
    /// schema, so a value counts as read only when it can be written again).
    #[test]
    fn changed_bytes_read_as_apache_avros_generic_reader_reads_them() {
        let contract = Contract::load().expect("the contract");
        let mut random = Random::new(11);
        let (mut read, mut refused) = (0, 0);
        for (index, draft) in drafts().iter().enumerate() {
            let codec = contract.datum_codec(draft.topic);
            let bytes = datum(&contract, draft.topic, avro::event_value(draft, 7, &format!("event-{index}")));
            for _ in 0..6 {
                let mut changed = bytes.clone();
                let at = random.range(0, changed.len() as i64) as usize;
                if random.chance(20) {
                    changed.truncate(at);
                } else {
                    changed[at] = random.next_u64() as u8;
                }
                let mut generic_rest = changed.as_slice();
                let generic = codec.read_value(&mut generic_rest).ok().and_then(|value| codec.write_value(value).ok());
                let taken = &changed[..changed.len() - generic_rest.len()];
                let mut rest = changed.as_slice();
                match decode_datum(draft.topic, codec, &mut rest) {
                    Ok(decoded) => {
                        let again = generic.unwrap_or_else(|| panic!("{changed:?}: decoded, apache-avro refuses"));
                        assert_eq!(rest.len(), generic_rest.len(), "{changed:?}");
                        assert_eq!(decode(&contract, draft.topic, &again).expect("its own bytes"), decoded);
                        read += 1;
                    }
                    Err(error) => {
                        assert!(generic.is_none_or(|again| again != taken), "{changed:?}: apache-avro reads, {error}");
                        refused += 1;
                    }
                }
            }
        }
        assert!(read > 1_000 && refused > 1_000, "{read} read, {refused} refused");
    }

    /// Sets the share of the first right of a rights chain event record.
    fn set_first_share(value: &mut Value, share: i32) {
        let Value::Record(fields) = value else { panic!("a record") };
        let Value::Union(_, payload) = &mut fields[1].1 else { panic!("a payload union") };
        let Value::Record(payload) = payload.as_mut() else { panic!("a payload record") };
        let Value::Array(rights) = &mut payload[0].1 else { panic!("rights") };
        let Value::Record(right) = &mut rights[0] else { panic!("a right") };
        let field = right.iter_mut().find(|(name, _)| name == "shareBasisPoints").expect("a share");
        field.1 = Value::Int(share);
    }
}
