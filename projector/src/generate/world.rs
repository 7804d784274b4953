//! A generated registry: parties, works, rights chains, certificates,
//! disputes and licenses, as a list of event drafts on a timeline.
//!
//! The shape follows what a real registry produces: most works are published,
//! a few are amended or withdrawn; rights chains have splits, transfers and
//! related rights; some parties are renamed long after the works that name
//! them; some rights arrive before their work. A small share of deliberately
//! malformed events is mixed in. Personal data is generated with distinctive
//! markers so that tests can search the store for any trace of it.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{CreatorRole, HolderRole, RightType, WorkType};

use super::drafts::{DAY, Draft, Payload, TERRITORIES, TIMELINE_DAYS, TIMELINE_START};
use super::identities::{ipi_from, iswc_for, party, personal_data};
use super::licenses::generate_license;
use super::malformed::mix_in_malformed_events;
use super::random::Random;
use crate::contract::Topic;
use crate::events::{Creator, RightRecord, WorkAmendment, WorkRecord};

const TITLE_WORDS: &[&str] = &[
    "Morning", "River", "Silver", "Echoes", "Northern", "Light", "Quiet", "Storm", "Garden", "Midnight", "Paper",
    "Horizon", "Velvet", "Ashes", "Lanterns", "Tide",
];
const SUBJECTS: &[&str] = &["jazz", "folk", "classical", "pop", "poetry", "documentary", "photography", "electronic"];
const LANGUAGES: &[&str] = &["en", "fr", "de", "es", "it", "pl", "sv"];
const ISRC_COUNTRIES: &[&str] = &["US", "GB", "FR", "DE", "SE", "PL"];

/// Generates the production world: about 5.4 events per work.
pub fn production_world(works: usize, random: &mut Random) -> Vec<Draft> {
    let mut drafts = Vec::new();
    let party_count = works / 3 + 20;
    let organisation_count = party_count / 5 + 2;
    // Parties 0..organisation_count are organisations (publishers, licensees).
    let party_id = |index: usize| format!("PTY-{index:07}");
    let mut party_registered_at = Vec::with_capacity(party_count);
    let mut parties = random.fork(1);
    for index in 0..party_count {
        let organisation = index < organisation_count;
        let (profile, personal) = party(&mut parties, index, organisation);
        // Most parties register before the works that name them; some long after.
        let at = if parties.chance(5) {
            TIMELINE_START + parties.range(TIMELINE_DAYS / 2, TIMELINE_DAYS) * DAY
        } else {
            TIMELINE_START - parties.range(1, 400) * DAY
        };
        party_registered_at.push(at);
        let id = party_id(index);
        drafts.push(Draft::new(Topic::Parties, &id, at, Payload::PartyRegistered(profile, personal)));
        let mut later = at;
        if parties.chance(5) {
            later += parties.range(1, 600) * DAY;
            let (renamed, _) = party(&mut parties, index, organisation);
            drafts.push(Draft::new(Topic::Parties, &id, later, Payload::PartyRenamed(renamed.name)));
        }
        if parties.chance(3) {
            later += parties.range(1, 300) * DAY;
            drafts.push(Draft::new(
                Topic::Parties,
                &id,
                later,
                Payload::PartyIdentifiers(Some(ipi_from(&parties.digits(11))), None),
            ));
        }
        if parties.chance(5) {
            later += parties.range(1, 300) * DAY;
            let personal = personal_data(&mut parties, index + party_count);
            drafts.push(Draft::new(Topic::Parties, &id, later, Payload::PartyPersonalData(personal)));
        }
    }

    let mut work_random = random.fork(2);
    let mut work_times = Vec::with_capacity(works);
    for index in 0..works {
        let id = format!("LCC-{index:010}");
        let at =
            TIMELINE_START + (index as i64 * TIMELINE_DAYS * DAY) / works.max(1) as i64 + work_random.range(0, DAY);
        work_times.push(at);
        let person =
            |random: &mut Random| party_id(random.range(organisation_count as i64, party_count as i64) as usize);
        let organisation = |random: &mut Random| party_id(random.range(0, organisation_count as i64) as usize);
        generate_work(
            &mut work_random,
            &mut drafts,
            WorkSeed { index, id: &id, at, person: &person, organisation: &organisation },
        );
    }

    let mut licenses = random.fork(3);
    for index in 0..works / 4 {
        let id = format!("LIC-{index:08}");
        let licensee = party_id(licenses.range(0, organisation_count as i64) as usize);
        let latest_work = licenses.range(0, works.max(1) as i64) as usize;
        let at = work_times.get(latest_work).copied().unwrap_or(TIMELINE_START) + licenses.range(1, 60) * DAY;
        let individual = licenses.chance(70);
        let covered = if individual {
            (0..licenses.range(1, 4))
                .map(|_| format!("LCC-{:010}", licenses.range(0, latest_work as i64 + 1)))
                .collect()
        } else {
            Vec::new()
        };
        generate_license(&mut licenses, &mut drafts, &id, at, licensee, covered);
    }
    mix_in_malformed_events(random, &mut drafts, works);
    drafts
}

struct WorkSeed<'a> {
    index: usize,
    id: &'a str,
    at: i64,
    person: &'a dyn Fn(&mut Random) -> String,
    organisation: &'a dyn Fn(&mut Random) -> String,
}

fn generate_work(random: &mut Random, drafts: &mut Vec<Draft>, seed: WorkSeed<'_>) {
    let WorkSeed { index, id, at, person, organisation } = seed;
    let work_type = *random.pick(&[
        WorkType::MusicalWork,
        WorkType::MusicalWork,
        WorkType::SoundRecording,
        WorkType::SoundRecording,
        WorkType::LiteraryWork,
        WorkType::AudiovisualWork,
        WorkType::VisualWork,
        WorkType::Software,
    ]);
    let musical = matches!(work_type, WorkType::MusicalWork | WorkType::SoundRecording);
    let creator_count = random.range(1, 4) as usize;
    let creators: Vec<Creator> = (0..creator_count)
        .map(|position| Creator {
            party_id: person(random),
            role: if position == 0 {
                if musical { CreatorRole::Composer } else { CreatorRole::Author }
            } else {
                *random.pick(&[
                    CreatorRole::Lyricist,
                    CreatorRole::Arranger,
                    CreatorRole::Performer,
                    CreatorRole::Author,
                ])
            },
        })
        .collect();
    let publisher = random.chance(40).then(|| organisation(random));
    let created_on =
        Date::from_ymd(random.range(1960, 2023) as i32, random.range(1, 13) as u32, random.range(1, 29) as u32);
    let isrcs: Vec<String> = if musical && random.chance(50) {
        (0..random.range(1, 4))
            .map(|serial| {
                format!(
                    "{}{}{:02}{:05}",
                    random.pick(ISRC_COUNTRIES),
                    random.alphanumeric(3),
                    random.range(0, 100),
                    (index * 3 + serial as usize) % 100_000
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let record = WorkRecord {
        title: format!("{} {}", random.pick(TITLE_WORDS), random.pick(TITLE_WORDS)),
        alternative_titles: if random.chance(15) {
            vec![format!("{} (Reprise)", random.pick(TITLE_WORDS))]
        } else {
            Vec::new()
        },
        iswc: (musical && random.chance(60)).then(|| iswc_for(index as u64 + 1)),
        isrcs,
        creators: creators.clone(),
        language: random.chance(80).then(|| (*random.pick(LANGUAGES)).to_owned()),
        work_type,
        created_on,
        description: random.chance(70).then(|| {
            format!("A {} piece about {}.", random.pick(SUBJECTS), random.pick(TITLE_WORDS).to_ascii_lowercase())
        }),
        subjects: (0..random.range(0, 3)).map(|_| (*random.pick(SUBJECTS)).to_owned()).collect(),
        publisher_party_id: publisher.clone(),
        related_work_ids: if index > 0 && random.chance(10) {
            vec![format!("LCC-{:010}", random.range(0, index as i64))]
        } else {
            Vec::new()
        },
        file_sha256: random.hex(64),
        file_format: Some(
            match work_type {
                WorkType::MusicalWork | WorkType::SoundRecording => "audio/flac",
                WorkType::LiteraryWork => "application/pdf",
                WorkType::AudiovisualWork => "video/mp4",
                WorkType::VisualWork => "image/tiff",
                WorkType::Software | WorkType::Other => "application/zip",
            }
            .to_owned(),
        ),
        earliest_recorded_at: Timestamp(at - random.range(0, 30) * DAY),
    };
    drafts.push(Draft::new(Topic::Works, id, at, Payload::WorkRegistered(record)));
    if random.chance(20) {
        let amendment = WorkAmendment {
            title: random.chance(50).then(|| format!("{} {}", random.pick(TITLE_WORDS), random.pick(TITLE_WORDS))),
            description: Some("Amended description.".to_owned()),
            subjects: Some(vec![(*random.pick(SUBJECTS)).to_owned()]),
            ..WorkAmendment::default()
        };
        drafts.push(Draft::new(Topic::Works, id, at + random.range(1, 400) * DAY, Payload::WorkAmended(amendment)));
    }
    if random.chance(85) {
        let published = at + random.range(0, 30) * DAY + 3_600_000;
        drafts.push(Draft::new(Topic::Works, id, published, Payload::WorkPublished(Timestamp(published))));
        if random.chance(3) {
            let reason = "Withdrawn at the request of the rights holders.".to_owned();
            drafts.push(Draft::new(
                Topic::Works,
                id,
                published + random.range(30, 300) * DAY,
                Payload::WorkWithdrawn(reason),
            ));
        }
    }

    // Rights: sometimes recorded a little before the work itself arrives.
    let rights_at = at + random.range(-2 * 3_600_000, 2 * DAY);
    let valid_from = Date::of(Timestamp(at));
    let protection = if random.chance(2) {
        Date::from_ymd(random.range(1990, 2020) as i32, 1, 1)
    } else {
        Date::from_ymd(random.range(2095, 2140) as i32, 12, 31)
    }
    .unwrap_or(valid_from);
    let mut rights = Vec::new();
    let holders: Vec<String> =
        creators.iter().map(|creator| creator.party_id.clone()).chain(publisher.clone()).collect();
    let complete = random.chance(90);
    let total: u32 = if complete { 10_000 } else { 7_500 };
    let shares = split(random, total, holders.len());
    for (position, (holder, share)) in holders.iter().zip(shares).enumerate() {
        rights.push(RightRecord {
            right_id: format!("{id}-A{position}"),
            right_type: RightType::AuthorsRight,
            holder_party_id: holder.clone(),
            role: if Some(holder) == publisher.as_ref() { HolderRole::Publisher } else { HolderRole::Author },
            share_basis_points: share,
            acquired_from_party_id: None,
            territory: (*random.pick(TERRITORIES)).to_owned(),
            valid_from,
            valid_until: None,
            protection_ends_on: protection,
        });
    }
    if musical && random.chance(40) {
        let performers = random.range(1, 3) as usize;
        let related_holders: Vec<String> = (0..performers).map(|_| person(random)).collect();
        for (position, (holder, share)) in related_holders.iter().zip(split(random, 10_000, performers)).enumerate() {
            rights.push(RightRecord {
                right_id: format!("{id}-R{position}"),
                right_type: RightType::RelatedRight,
                holder_party_id: holder.clone(),
                role: if position == 0 { HolderRole::Performer } else { HolderRole::Producer },
                share_basis_points: share,
                acquired_from_party_id: None,
                territory: "WORLD".to_owned(),
                valid_from,
                valid_until: None,
                protection_ends_on: Date::from_ymd(random.range(2070, 2100) as i32, 12, 31).unwrap_or(valid_from),
            });
        }
    }
    let open = random.chance(70);
    drafts.push(Draft::new(Topic::Rights, id, rights_at, Payload::RightsChain(rights.clone(), open)));
    if random.chance(15) {
        // A transfer: the first holder's share passes to an organisation.
        let mut transferred = rights.clone();
        let buyer = organisation(random);
        if let Some(first) = transferred.first_mut() {
            first.acquired_from_party_id = Some(first.holder_party_id.clone());
            first.holder_party_id = buyer;
            first.role = HolderRole::Publisher;
        }
        drafts.push(Draft::new(
            Topic::Rights,
            id,
            at + random.range(100, 500) * DAY,
            Payload::RightsChain(transferred, open),
        ));
    }
    if random.chance(10) {
        drafts.push(Draft::new(Topic::Rights, id, at + random.range(500, 700) * DAY, Payload::Availability(!open)));
    }

    if random.chance(90) {
        let issued = at + random.range(3_600_000, 3 * DAY);
        let certificate = format!("CERT-{index:010}");
        drafts.push(Draft::new(
            Topic::Certificates,
            id,
            issued,
            Payload::CertificateIssued(certificate.clone(), random.hex(64), Timestamp(issued)),
        ));
        if let Some(revoked) = random.later_by_chance(3, issued, 30, 300) {
            let revocation = Payload::CertificateRevoked(certificate, "Issued in error.".to_owned());
            drafts.push(Draft::new(Topic::Certificates, id, revoked, revocation));
            if let Some(reissued) = random.later_by_chance(50, revoked, 1, 30) {
                let reissue =
                    Payload::CertificateIssued(format!("CERT-{index:010}-2"), random.hex(64), Timestamp(reissued));
                drafts.push(Draft::new(Topic::Certificates, id, reissued, reissue));
            }
        }
    }

    if random.chance(8) {
        let dispute = format!("DSP-{index:010}");
        let opened = at + random.range(30, 700) * DAY;
        let grounds = *random.pick(&["OWNERSHIP", "SHARE_SPLIT", "ATTRIBUTION", "PLAGIARISM", "OTHER"]);
        drafts.push(Draft::new(Topic::Disputes, id, opened, Payload::DisputeOpened(dispute.clone(), grounds)));
        let mut last = opened;
        if random.chance(70) {
            last += random.range(5, 60) * DAY;
            let progress = *random.pick(&["UNDER_REVIEW", "IN_MEDIATION"]);
            drafts.push(Draft::new(Topic::Disputes, id, last, Payload::DisputeUpdated(dispute.clone(), progress)));
        }
        if random.chance(60) {
            last += random.range(30, 200) * DAY;
            let outcome = *random.pick(&["UPHELD", "REJECTED", "SETTLED", "WITHDRAWN"]);
            drafts.push(Draft::new(Topic::Disputes, id, last, Payload::DisputeResolved(dispute, outcome)));
        }
    }
}

/// Splits `total` basis points into `parts` positive shares.
fn split(random: &mut Random, total: u32, parts: usize) -> Vec<u32> {
    if parts == 0 {
        return Vec::new();
    }
    let weights: Vec<u32> = (0..parts).map(|_| random.range(1, 5) as u32).collect();
    let weight_sum: u32 = weights.iter().sum();
    let mut shares: Vec<u32> = weights.iter().map(|weight| total * weight / weight_sum).collect();
    let assigned: u32 = shares.iter().sum();
    shares[0] += total - assigned;
    shares
}
