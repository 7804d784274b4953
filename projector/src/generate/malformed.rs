//! Deliberately malformed events mixed into a production-like stream: each
//! kind the projector must park (an invalid identifier, shares over 100%, an
//! event type that names another payload, a bad hash, an event type newer
//! than the contract, a version of zero), so tests see every parking path.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{HolderRole, RightType};

use super::drafts::{DAY, Draft, Malformation, Payload, TIMELINE_DAYS, TIMELINE_START};
use super::random::Random;
use crate::contract::Topic;
use crate::events::{RightRecord, WorkAmendment};

/// Adds about one malformed event per 400 works (at least five, one of each kind).
pub(super) fn mix_in_malformed_events(random: &mut Random, drafts: &mut Vec<Draft>, works: usize) {
    let mut malformed = random.fork(4);
    let count = (works / 400).max(5);
    for number in 0..count {
        let work = format!("LCC-{:010}", malformed.range(0, works.max(1) as i64));
        let at = TIMELINE_START + malformed.range(0, TIMELINE_DAYS) * DAY + 1;
        let mut draft = match number % 6 {
            0 => Draft::new(
                Topic::Works,
                &work,
                at,
                Payload::WorkAmended(WorkAmendment {
                    iswc: Some("T-123.456.789-0".to_owned()),
                    ..WorkAmendment::default()
                }),
            ),
            1 => {
                let share = |suffix: &str| RightRecord {
                    right_id: format!("{work}-X{suffix}"),
                    right_type: RightType::AuthorsRight,
                    holder_party_id: "PTY-0000000".to_owned(),
                    role: HolderRole::Author,
                    share_basis_points: 6_000,
                    acquired_from_party_id: None,
                    territory: "WORLD".to_owned(),
                    valid_from: Date(19_000),
                    valid_until: None,
                    protection_ends_on: Date(60_000),
                };
                Draft::new(Topic::Rights, &work, at, Payload::RightsChain(vec![share("1"), share("2")], true))
            }
            2 => amendment_with_bad_envelope(&work, at, Malformation::WrongEventType),
            3 => Draft::new(
                Topic::Certificates,
                &work,
                at,
                Payload::CertificateIssued("CERT-BAD".to_owned(), "not-a-hash".to_owned(), Timestamp(at)),
            ),
            4 => Draft::new(Topic::Works, &work, at, Payload::WorkArchived),
            _ => amendment_with_bad_envelope(&work, at, Malformation::ZeroVersion),
        };
        draft.must_be_parked = true;
        drafts.push(draft);
    }
}

/// A well-formed amendment whose envelope carries `malformation`.
fn amendment_with_bad_envelope(work: &str, at: i64, malformation: Malformation) -> Draft {
    let amendment = WorkAmendment { description: Some(format!("{malformation:?}")), ..WorkAmendment::default() };
    let mut draft = Draft::new(Topic::Works, work, at, Payload::WorkAmended(amendment));
    draft.malformation = Some(malformation);
    draft
}
