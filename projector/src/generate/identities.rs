//! Who is in a generated registry: parties with public profiles and
//! personal data (marked so that tests can search the store for any trace
//! of it), and the international identifiers of works.

use read_model::calendar::Date;
use read_model::documents::PartyKind;
use read_model::identifiers::{ipi_check_number, isni_check_character, iswc_check_digit};

use super::drafts::PersonalData;
use super::random::Random;
use crate::events::PartyProfile;

const FIRST_NAMES: &[&str] = &[
    "Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kaori", "Luca", "Mira",
    "Nils", "Olga", "Pavel",
];
const LAST_NAMES: &[&str] = &[
    "Adler",
    "Bianchi",
    "Costa",
    "Dahl",
    "Eriksen",
    "Fontaine",
    "Garcia",
    "Horvat",
    "Ivanova",
    "Jansen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
];
const ORGANISATION_WORDS: &[&str] =
    &["Aurora", "Blue Reed", "Cedar", "Delta", "Ember", "Fjord", "Granite", "Harbor", "Iris", "Juniper"];
const ORGANISATION_KINDS: &[&str] = &["Music Publishing", "Records", "Editions", "Media", "Rights Agency"];
/// Generates a person's or an organisation's public profile and personal data.
pub fn party(random: &mut Random, index: usize, organisation: bool) -> (PartyProfile, PersonalData) {
    let name = if organisation {
        format!("{} {}", random.pick(ORGANISATION_WORDS), random.pick(ORGANISATION_KINDS))
    } else {
        format!("{} {}", random.pick(FIRST_NAMES), random.pick(LAST_NAMES))
    };
    let profile = PartyProfile {
        name,
        kind: if organisation { PartyKind::Organisation } else { PartyKind::Person },
        ipi: random.chance(60).then(|| ipi_from(&random.digits(11))),
        isni: random.chance(30).then(|| isni_from(&random.digits(16))),
    };
    (profile, personal_data(random, index))
}

/// Personal values carry the markers `personal.invalid`, `PRIVATE-` and
/// `NID-`, and birth dates fall in 1930–1959, before any other generated date.
pub fn personal_data(random: &mut Random, index: usize) -> PersonalData {
    PersonalData {
        email: format!("person{index}.{}@personal.invalid", random.hex(6)),
        phone: format!("+99 7{}", random.digits(8)),
        postal_address: format!("{} PRIVATE-{} Lane, Townsville", random.range(1, 200), random.alphanumeric(6)),
        birth_date: Date::from_ymd(
            random.range(1930, 1960) as i32,
            random.range(1, 13) as u32,
            random.range(1, 29) as u32,
        ),
        national_id: format!("NID-{}", random.alphanumeric(10)),
    }
}

/// A valid ISWC for a serial number.
pub fn iswc_for(serial: u64) -> String {
    let nine = format!("{:09}", serial % 1_000_000_000);
    let digits: Vec<u32> = nine.bytes().map(|byte| u32::from(byte - b'0')).collect();
    format!("T{nine}{}", iswc_check_digit(&digits))
}

/// A valid IPI name number whose first nine digits are those of `digits`.
pub fn ipi_from(digits: &str) -> String {
    let base = &digits[..9];
    format!("{base}{:02}", ipi_check_number(&digit_values(base)))
}

/// A valid ISNI whose first fifteen digits are those of `digits`.
pub fn isni_from(digits: &str) -> String {
    let base = &digits[..15];
    format!("{base}{}", isni_check_character(&digit_values(base)))
}

fn digit_values(digits: &str) -> Vec<u32> {
    digits.bytes().map(|byte| u32::from(byte - b'0')).collect()
}

#[cfg(test)]
mod tests {
    use read_model::identifiers::{normalize_ipi, normalize_isni};

    use super::*;

    #[test]
    fn generated_identifiers_carry_valid_check_characters() {
        let mut random = Random::new(5);
        for _ in 0..500 {
            assert!(normalize_ipi(&ipi_from(&random.digits(11))).is_ok());
            assert!(normalize_isni(&isni_from(&random.digits(16))).is_ok());
        }
    }
}
