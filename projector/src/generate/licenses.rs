//! Licenses of a generated registry: blanket or individual grants to a
//! licensee, and the status changes and renewals that follow some of them.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{LicenseKind, LicenseStatus};

use super::drafts::{DAY, Draft, Payload, TERRITORIES};
use super::random::Random;
use crate::contract::Topic;
use crate::events::LicenseGrant;

/// A license granted at `at` to `licensee`: individual when it covers
/// works, blanket otherwise; some later change status or are renewed.
pub fn generate_license(
    random: &mut Random,
    drafts: &mut Vec<Draft>,
    id: &str,
    at: i64,
    licensee: String,
    covered: Vec<String>,
) {
    let kind = if covered.is_empty() { LicenseKind::Blanket } else { LicenseKind::Individual };
    let valid_from = Date::of(Timestamp(at));
    let grant = LicenseGrant {
        kind,
        licensee_party_id: licensee,
        status: if random.chance(20) { LicenseStatus::Pending } else { LicenseStatus::Active },
        valid_from,
        valid_until: random.chance(60).then(|| Date(valid_from.0 + random.range(365, 5 * 365) as i32)),
        repertoire: (kind == LicenseKind::Blanket)
            .then(|| "All works administered by the licensor in the territory.".to_owned()),
        covered_work_ids: covered,
        territory: (*random.pick(TERRITORIES)).to_owned(),
    };
    drafts.push(Draft::new(Topic::Licenses, id, at, Payload::LicenseGranted(grant)));
    if random.chance(40) {
        let status = *random.pick(&[
            LicenseStatus::Active,
            LicenseStatus::Suspended,
            LicenseStatus::Expired,
            LicenseStatus::Terminated,
            LicenseStatus::Revoked,
        ]);
        let later = at + random.range(10, 400) * DAY;
        drafts.push(Draft::new(
            Topic::Licenses,
            id,
            later,
            Payload::LicenseStatus(status, Date::of(Timestamp(later)), Some("Changed by the licensor.".to_owned())),
        ));
    }
    if let Some(renewed) = random.later_by_chance(10, at, 400, 800) {
        let renewal = Payload::LicenseRenewed(Some(Date(valid_from.0 + 10 * 365)));
        drafts.push(Draft::new(Topic::Licenses, id, renewed, renewal));
    }
}
