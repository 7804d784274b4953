//! The sandbox fixtures: one small, hand-shaped record per scenario a client
//! must be able to try, every id starting with `SANDBOX-`.
//!
//! They are events like any others, projected by the same code as production
//! data; the fixture catalogue is derived from the projected records.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{CreatorRole, HolderRole, LicenseKind, LicenseStatus, PartyKind, RightType, WorkType};

use super::drafts::{DAY, Draft, Payload, PersonalData};
use super::identities::{ipi_from, isni_from, iswc_for};
use crate::contract::Topic;
use crate::events::{Creator, LicenseGrant, PartyProfile, RightRecord, WorkRecord};

/// Number of sandbox works.
pub const SANDBOX_WORKS: usize = 16;

/// 2025-01-06T09:00:00Z.
const START: i64 = 1_736_154_000_000;

/// A sandbox party: `SANDBOX-PTY-000N` with an IPI name number of its own
/// and, when `with_isni`, an ISNI, both with valid check characters.
fn party(number: u32, name: &str, kind: PartyKind, at: i64, with_isni: bool) -> Draft {
    let id = format!("SANDBOX-PTY-{number:04}");
    let id = id.as_str();
    let personal = PersonalData {
        email: format!("{}@sandbox-personal.invalid", id.to_ascii_lowercase()),
        phone: "+99 700000000".to_owned(),
        postal_address: format!("1 PRIVATE-{id} Street"),
        birth_date: Date::from_ymd(1950, 5, 17),
        national_id: format!("NID-{id}"),
    };
    let profile = PartyProfile {
        name: name.to_owned(),
        kind,
        ipi: Some(ipi_from(&format!("{:09}", 100_277_000 + number * 1_013))),
        isni: with_isni.then(|| isni_from(&format!("00000004{:07}", 2_770_000 + number * 101))),
    };
    Draft::new(Topic::Parties, id, at, Payload::PartyRegistered(profile, personal))
}

/// The SHA-256 of a sandbox work's registered file, whose content is the
/// UTF-8 text `"<lccId>: <title>\n"`: a client can recompute it and try
/// `GET /rights/{lccId}/verify?sha256=…` with a hash that matches.
pub fn file_sha256(lcc_id: &str, title: &str) -> String {
    sha256_hex(&format!("{lcc_id}: {title}\n"))
}

/// The SHA-256 of a sandbox certificate, whose content is the UTF-8 text
/// `"<certificate id> certifies <lccId>\n"`.
pub fn certificate_sha256(certificate_id: &str, lcc_id: &str) -> String {
    sha256_hex(&format!("{certificate_id} certifies {lcc_id}\n"))
}

fn sha256_hex(content: &str) -> String {
    use sha2::Digest;
    read_model::hex::lower_hex(&sha2::Sha256::digest(content.as_bytes()))
}

fn work(number: usize, title: &str, at: i64) -> (String, WorkRecord) {
    let id = format!("SANDBOX-LCC-{number:04}");
    let record = WorkRecord {
        title: title.to_owned(),
        alternative_titles: Vec::new(),
        iswc: None,
        isrcs: Vec::new(),
        creators: vec![Creator { party_id: "SANDBOX-PTY-0001".to_owned(), role: CreatorRole::Composer }],
        language: Some("en".to_owned()),
        work_type: WorkType::MusicalWork,
        created_on: Date::from_ymd(2020, 3, 14),
        description: Some(format!("Sandbox fixture: {title}.")),
        subjects: vec!["sandbox".to_owned()],
        publisher_party_id: None,
        related_work_ids: Vec::new(),
        file_sha256: file_sha256(&id, title),
        file_format: Some("audio/flac".to_owned()),
        earliest_recorded_at: Timestamp(at - DAY),
    };
    (id, record)
}

fn right(
    id: &str,
    suffix: &str,
    right_type: RightType,
    holder: &str,
    role: HolderRole,
    share: u32,
    protection: Date,
) -> RightRecord {
    RightRecord {
        right_id: format!("{id}-{suffix}"),
        right_type,
        holder_party_id: holder.to_owned(),
        role,
        share_basis_points: share,
        acquired_from_party_id: None,
        territory: "WORLD".to_owned(),
        valid_from: Date::from_ymd(2020, 3, 14).unwrap_or(Date(0)),
        valid_until: None,
        protection_ends_on: protection,
    }
}

/// Every sandbox scenario, as events.
pub fn sandbox_world() -> Vec<Draft> {
    let far_future = Date::from_ymd(2110, 12, 31).unwrap_or(Date(0));
    let expired = Date::from_ymd(1999, 12, 31).unwrap_or(Date(0));
    let mut drafts = vec![
        party(1, "Ada Sandbox", PartyKind::Person, START - 10 * DAY, true),
        party(2, "Bruno Example", PartyKind::Person, START - 10 * DAY, false),
        party(3, "Sandbox Music Publishing", PartyKind::Organisation, START - 10 * DAY, true),
        party(4, "Chiara Performer", PartyKind::Person, START - 10 * DAY, true),
        party(5, "Sandbox Broadcasting Ltd", PartyKind::Organisation, START - 10 * DAY, false),
    ];
    let single = |id: &str| {
        vec![right(id, "A0", RightType::AuthorsRight, "SANDBOX-PTY-0001", HolderRole::Composer, 10_000, far_future)]
    };
    let split = |id: &str| {
        vec![
            right(id, "A0", RightType::AuthorsRight, "SANDBOX-PTY-0001", HolderRole::Composer, 5_000, far_future),
            right(id, "A1", RightType::AuthorsRight, "SANDBOX-PTY-0002", HolderRole::Lyricist, 3_000, far_future),
            right(id, "A2", RightType::AuthorsRight, "SANDBOX-PTY-0003", HolderRole::Publisher, 2_000, far_future),
        ]
    };
    let scenarios: [(&str, bool); SANDBOX_WORKS] = [
        ("Open Single Holder (by ISWC)", true),
        ("Closed Split Rights (by ISRC)", false),
        ("Related Rights Recording", true),
        ("Dispute Open", true),
        ("Dispute Under Review", true),
        ("Dispute In Mediation", true),
        ("Dispute Upheld", true),
        ("Dispute Rejected", true),
        ("Dispute Settled", true),
        ("Dispute Withdrawn", true),
        ("Expired Protection", true),
        ("Withdrawn Work", false),
        ("Revoked Certificate", true),
        ("Incomplete Rights Chain", true),
        ("Registered Not Published", true),
        ("Renamed Composer", true),
    ];
    for (index, (title, open)) in scenarios.into_iter().enumerate() {
        let number = index + 1;
        let at = START + index as i64 * DAY;
        let (id, mut record) = work(number, title, at);
        let mut rights = single(&id);
        match number {
            1 => record.iswc = Some(iswc_for(900_000_001)),
            2 => {
                record.isrcs = vec!["QZSB12500002".to_owned()];
                record.creators.push(Creator { party_id: "SANDBOX-PTY-0002".to_owned(), role: CreatorRole::Lyricist });
                rights = split(&id);
            }
            3 => {
                record.work_type = WorkType::SoundRecording;
                record.isrcs = vec!["QZSB12500003".to_owned()];
                rights.push(right(
                    &id,
                    "R0",
                    RightType::RelatedRight,
                    "SANDBOX-PTY-0004",
                    HolderRole::Performer,
                    6_000,
                    far_future,
                ));
                rights.push(right(
                    &id,
                    "R1",
                    RightType::RelatedRight,
                    "SANDBOX-PTY-0005",
                    HolderRole::Producer,
                    4_000,
                    far_future,
                ));
            }
            11 => rights[0].protection_ends_on = expired,
            14 => rights[0].share_basis_points = 7_500,
            _ => {}
        }
        drafts.push(Draft::new(Topic::Works, &id, at, Payload::WorkRegistered(record)));
        drafts.push(Draft::new(Topic::Rights, &id, at + 60_000, Payload::RightsChain(rights, open)));
        let certificate = format!("SANDBOX-CERT-{number:04}");
        drafts.push(Draft::new(
            Topic::Certificates,
            &id,
            at + 120_000,
            Payload::CertificateIssued(
                certificate.clone(),
                certificate_sha256(&certificate, &id),
                Timestamp(at + 120_000),
            ),
        ));
        if number != 15 {
            drafts.push(Draft::new(Topic::Works, &id, at + 180_000, Payload::WorkPublished(Timestamp(at + 180_000))));
        }
        let dispute = format!("SANDBOX-DSP-{number:04}");
        let later = at + 3_600_000;
        let dispute_steps: &[Payload] = &match number {
            4 => vec![Payload::DisputeOpened(dispute.clone(), "OWNERSHIP")],
            5 => vec![
                Payload::DisputeOpened(dispute.clone(), "SHARE_SPLIT"),
                Payload::DisputeUpdated(dispute.clone(), "UNDER_REVIEW"),
            ],
            6 => vec![
                Payload::DisputeOpened(dispute.clone(), "ATTRIBUTION"),
                Payload::DisputeUpdated(dispute.clone(), "IN_MEDIATION"),
            ],
            7 => vec![
                Payload::DisputeOpened(dispute.clone(), "PLAGIARISM"),
                Payload::DisputeResolved(dispute.clone(), "UPHELD"),
            ],
            8 => vec![
                Payload::DisputeOpened(dispute.clone(), "OWNERSHIP"),
                Payload::DisputeResolved(dispute.clone(), "REJECTED"),
            ],
            9 => vec![
                Payload::DisputeOpened(dispute.clone(), "SHARE_SPLIT"),
                Payload::DisputeResolved(dispute.clone(), "SETTLED"),
            ],
            10 => vec![
                Payload::DisputeOpened(dispute.clone(), "OTHER"),
                Payload::DisputeResolved(dispute.clone(), "WITHDRAWN"),
            ],
            _ => Vec::new(),
        };
        for (step, payload) in dispute_steps.iter().enumerate() {
            drafts.push(Draft::new(Topic::Disputes, &id, later + step as i64 * 60_000, payload.clone()));
        }
        match number {
            12 => drafts.push(Draft::new(
                Topic::Works,
                &id,
                later,
                Payload::WorkWithdrawn("Withdrawn by the sandbox.".to_owned()),
            )),
            13 => drafts.push(Draft::new(
                Topic::Certificates,
                &id,
                later,
                Payload::CertificateRevoked(certificate, "Revoked in the sandbox.".to_owned()),
            )),
            _ => {}
        }
    }
    let renamed_at = START + 20 * DAY;
    drafts.push(Draft::new(
        Topic::Parties,
        "SANDBOX-PTY-0001",
        renamed_at,
        Payload::PartyRenamed("Ada Sandbox-Renamed".to_owned()),
    ));

    let statuses = [
        LicenseStatus::Pending,
        LicenseStatus::Active,
        LicenseStatus::Suspended,
        LicenseStatus::Expired,
        LicenseStatus::Terminated,
        LicenseStatus::Revoked,
    ];
    for kind in [LicenseKind::Blanket, LicenseKind::Individual] {
        for status in statuses {
            let status_name = serde_json::to_value(status)
                .ok()
                .and_then(|value| value.as_str().map(str::to_ascii_uppercase))
                .unwrap_or_default();
            let kind_name = if kind == LicenseKind::Blanket { "BLANKET" } else { "INDIVIDUAL" };
            let id = format!("SANDBOX-LIC-{kind_name}-{status_name}");
            let at = START + 25 * DAY;
            let grant = LicenseGrant {
                kind,
                licensee_party_id: "SANDBOX-PTY-0005".to_owned(),
                status: LicenseStatus::Pending,
                valid_from: Date::of(Timestamp(at)),
                valid_until: Date::from_ymd(2030, 12, 31),
                covered_work_ids: if kind == LicenseKind::Individual {
                    vec!["SANDBOX-LCC-0001".to_owned()]
                } else {
                    Vec::new()
                },
                repertoire: (kind == LicenseKind::Blanket).then(|| "Every sandbox work.".to_owned()),
                territory: "WORLD".to_owned(),
            };
            drafts.push(Draft::new(Topic::Licenses, &id, at, Payload::LicenseGranted(grant)));
            if status != LicenseStatus::Pending {
                let later = at + DAY;
                drafts.push(Draft::new(
                    Topic::Licenses,
                    &id,
                    later,
                    Payload::LicenseStatus(status, Date::of(Timestamp(later)), Some("Sandbox scenario.".to_owned())),
                ));
            }
        }
    }
    drafts
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use read_model::identifiers::{normalize_ipi, normalize_isni};

    use super::*;

    #[test]
    fn each_party_has_its_own_valid_ipi_and_some_a_valid_isni() {
        let profiles: Vec<PartyProfile> = sandbox_world()
            .into_iter()
            .filter_map(|draft| match draft.payload {
                Payload::PartyRegistered(profile, _) => Some(profile),
                _ => None,
            })
            .collect();
        let ipis: BTreeSet<&str> = profiles.iter().filter_map(|profile| profile.ipi.as_deref()).collect();
        assert_eq!(ipis.len(), profiles.len(), "one IPI per party: {ipis:?}");
        assert!(ipis.iter().all(|ipi| normalize_ipi(ipi).is_ok()), "{ipis:?}");
        let isnis: Vec<&str> = profiles.iter().filter_map(|profile| profile.isni.as_deref()).collect();
        assert!(!isnis.is_empty() && isnis.len() < profiles.len(), "some parties have an ISNI: {isnis:?}");
        assert!(isnis.iter().all(|isni| normalize_isni(isni).is_ok()), "{isnis:?}");
    }

    #[test]
    fn file_hashes_are_the_sha256_of_the_content_they_name() {
        // `printf 'SANDBOX-LCC-0001: Morning River\n' | sha256sum`
        assert_eq!(
            file_sha256("SANDBOX-LCC-0001", "Morning River"),
            "1e7d6c8bce1082954d75df6e5d4668cdfa00515477b38f5c4b6e22926839322a"
        );
        let hashes: BTreeSet<String> = sandbox_world()
            .into_iter()
            .filter_map(|draft| match draft.payload {
                Payload::WorkRegistered(record) => Some(record.file_sha256),
                _ => None,
            })
            .collect();
        assert_eq!(hashes.len(), SANDBOX_WORKS, "each work has a file of its own");
    }
}
