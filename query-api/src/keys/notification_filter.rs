//! What a production key's notifications are limited to, set by the
//! operator when issuing it: every notification of its audience (no
//! filter), those of a list of works, or those of the works and licenses
//! that name given parties, by IPI name number.
//!
//! The filter is stored beside the key as text (`works:ID,ID`,
//! `parties:IPI,IPI`) and matched against what each notification names (its
//! id, and the IPIs of the parties the work or license names). This module
//! must not read the store.

use std::collections::BTreeSet;
use std::fmt;

use read_model::notifications::{Notification, Subject};

/// The notifications one key may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationFilter {
    /// Notifications of these works only (no license's).
    Works(BTreeSet<String>),
    /// Notifications of works and licenses naming a party with one of these IPIs.
    Parties(BTreeSet<String>),
}

impl NotificationFilter {
    /// The filter of a stored text, or why it is not one.
    pub fn parse(text: &str) -> Result<NotificationFilter, String> {
        let (kind, list) = text.split_once(':').ok_or_else(|| format!("{text:?} is not works:… or parties:…"))?;
        let entries: BTreeSet<String> =
            list.split(',').map(str::trim).filter(|entry| !entry.is_empty()).map(str::to_owned).collect();
        if entries.is_empty() {
            return Err(format!("{text:?} names nothing"));
        }
        match kind.trim() {
            "works" => Ok(NotificationFilter::Works(entries)),
            "parties" => {
                if let Some(bad) = entries.iter().find(|ipi| !is_ipi(ipi)) {
                    return Err(format!("{bad:?} is not an IPI name number (11 digits)"));
                }
                Ok(NotificationFilter::Parties(entries))
            }
            other => Err(format!("{other:?} is not works or parties")),
        }
    }

    /// Whether a key with this filter reads `notification`.
    pub fn admits(&self, notification: &Notification) -> bool {
        match self {
            NotificationFilter::Works(works) => {
                notification.subject == Subject::Work && works.contains(&notification.id)
            }
            NotificationFilter::Parties(ipis) => notification.parties.iter().any(|ipi| ipis.contains(ipi)),
        }
    }
}

impl fmt::Display for NotificationFilter {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, entries) = match self {
            NotificationFilter::Works(works) => ("works", works),
            NotificationFilter::Parties(ipis) => ("parties", ipis),
        };
        write!(formatter, "{kind}:{}", entries.iter().map(String::as_str).collect::<Vec<_>>().join(","))
    }
}

/// An IPI name number: eleven digits.
fn is_ipi(text: &str) -> bool {
    text.len() == 11 && text.bytes().all(|byte| byte.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use read_model::notifications::AnswerTags;

    use super::*;

    fn notification(subject: Subject, id: &str, parties: &[&str]) -> Notification {
        Notification {
            subject,
            id: id.to_owned(),
            version: 1,
            withdrawn: false,
            changed: Vec::new(),
            tags: AnswerTags::default(),
            parties: parties.iter().map(|party| (*party).to_owned()).collect(),
        }
    }

    #[test]
    fn filters_read_back_as_written_and_refuse_anything_else() {
        let works = NotificationFilter::parse("works: LCC-2, LCC-1").expect("works");
        assert_eq!(works.to_string(), "works:LCC-1,LCC-2");
        assert_eq!(NotificationFilter::parse(&works.to_string()), Ok(works));
        let parties = NotificationFilter::parse("parties:00014107338").expect("parties");
        assert_eq!(NotificationFilter::parse(&parties.to_string()), Ok(parties));
        for bad in ["", "works:", "works", "labels:A", "parties:123", "parties:0001410733x"] {
            assert!(NotificationFilter::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_filter_admits_its_works_or_what_names_its_parties() {
        let works = NotificationFilter::parse("works:LCC-1").expect("works");
        assert!(works.admits(&notification(Subject::Work, "LCC-1", &[])));
        assert!(!works.admits(&notification(Subject::Work, "LCC-2", &[])));
        assert!(!works.admits(&notification(Subject::License, "LCC-1", &[])), "a license is no work");
        let parties = NotificationFilter::parse("parties:00014107338").expect("parties");
        assert!(parties.admits(&notification(Subject::Work, "LCC-9", &["00014107338", "00099999999"])));
        assert!(parties.admits(&notification(Subject::License, "LIC-1", &["00014107338"])));
        assert!(!parties.admits(&notification(Subject::Work, "LCC-9", &["00099999999"])));
    }
}
