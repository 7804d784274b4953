//! Notifications through files, the projector and a real SQLite store: a
//! change of each kind notifies exactly the answers whose content it
//! changes, with the tags computed from the stored documents, and a replay
//! of what was already projected notifies no one.

mod support;

use projector::contract::Topic;
use projector::generate::drafts::{DAY, Draft, Payload};
use read_model::answer_tags;
use read_model::calendar::{Date, Timestamp};
use read_model::change_feed::FeedPosition;
use read_model::documents::{LicenseStatus, RightType};
use read_model::notifications::{Answer, Notification, NotificationQuery, NotificationsRead, Subject};
use read_model::{Audience, DocumentKind, DocumentReads, ModelVersion};
use support::{Projection, T0, blanket_grant, party, published, right, rights, work};

/// The notifications recorded after `after` (from the oldest when `None`), and the position after them.
async fn notifications_after(
    projection: &Projection,
    after: Option<&FeedPosition>,
) -> (Vec<Notification>, FeedPosition) {
    let after = after.map(|after| (ModelVersion(1), after.clone()));
    let query = NotificationQuery { audience: Audience::Production, after, limit: 1_000 };
    match projection.store.notifications(&query).await.expect("read") {
        NotificationsRead::Page(page) => {
            let items = page
                .items
                .iter()
                .map(|item| Notification::decode(&item.position.lcc_id, &item.body).expect("a notification"));
            (items.collect(), page.next)
        }
        gone => panic!("the feed is gone: {gone:?}"),
    }
}

/// The tag of a stored JSON answer, as the API serves it.
async fn stored_tag(projection: &Projection, kind: DocumentKind, id: &str) -> String {
    let body = projection.store.document(kind, id).await.expect("read").expect("a document");
    answer_tags::stored_json(Audience::Production, &body)
}

/// A notification as a step expects it: subject, id, changed answers, withdrawn.
type Expected<'a> = (Subject, &'a str, Vec<Answer>, bool);

#[tokio::test]
async fn each_change_notifies_exactly_the_answers_it_changes_and_a_replay_none() {
    let projection = Projection::new().await;
    let mut history = vec![
        party("PTY-1", "Ada Adler", T0),
        party("PTY-2", "Bruno Berg", T0),
        party("PTY-ORG-1", "Broadcasting Ltd", T0),
        work("LCC-1", "PTY-1", T0 + 1),
        rights("LCC-1", T0 + 2, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
        published("LCC-1", T0 + 3),
        Draft::new(Topic::Licenses, "LIC-1", T0 + 4, Payload::LicenseGranted(blanket_grant("PTY-ORG-1"))),
    ];
    let events = projection.write("step-0", history.clone(), 1);
    projection.project(&events, 2).await;
    let (first, mut cursor) = notifications_after(&projection, None).await;
    let subjects: Vec<(Subject, &str)> = first.iter().map(|item| (item.subject, item.id.as_str())).collect();
    assert!(subjects.contains(&(Subject::Work, "LCC-1")) && subjects.contains(&(Subject::License, "LIC-1")));
    let newest_work = first.iter().rev().find(|item| item.id == "LCC-1").expect("the work");
    assert_eq!(newest_work.tags.rights, Some(stored_tag(&projection, DocumentKind::RightsProfile, "LCC-1").await));
    assert_eq!(newest_work.tags.metadata, Some(stored_tag(&projection, DocumentKind::Metadata, "LCC-1").await));
    let license = first.iter().rev().find(|item| item.id == "LIC-1").expect("the license");
    assert_eq!(license.tags.license_status, Some(stored_tag(&projection, DocumentKind::LicenseStatus, "LIC-1").await));
    let mut last_version = newest_work.version;

    let work_answers = Answer::OF_A_WORK.to_vec();
    let own_record = vec![Answer::Verification, Answer::Provenance, Answer::Evidence];
    let steps: Vec<(&str, Draft, Vec<Expected<'_>>)> = vec![
        (
            "a new holder",
            rights("LCC-1", T0 + DAY, vec![right("LCC-1", "A0", "PTY-2", 10_000, RightType::AuthorsRight)], true),
            // The shares still add up to 100% with one holder, so the checks state the same.
            vec![(
                Subject::Work,
                "LCC-1",
                vec![Answer::Rights, Answer::Metadata, Answer::Provenance, Answer::Evidence],
                false,
            )],
        ),
        (
            "a split",
            rights(
                "LCC-1",
                T0 + 2 * DAY,
                vec![
                    right("LCC-1", "A0", "PTY-2", 6_000, RightType::AuthorsRight),
                    right("LCC-1", "A1", "PTY-1", 3_000, RightType::AuthorsRight),
                ],
                true,
            ),
            vec![(Subject::Work, "LCC-1", work_answers.clone(), false)],
        ),
        (
            "a dispute",
            Draft::new(Topic::Disputes, "LCC-1", T0 + 3 * DAY, Payload::DisputeOpened("D1".into(), "OWNERSHIP")),
            vec![(Subject::Work, "LCC-1", own_record.clone(), false)],
        ),
        (
            "a certificate",
            Draft::new(
                Topic::Certificates,
                "LCC-1",
                T0 + 4 * DAY,
                Payload::CertificateIssued("C-1".into(), "cd".repeat(32), Timestamp(T0 + 4 * DAY)),
            ),
            vec![(Subject::Work, "LCC-1", own_record.clone(), false)],
        ),
        (
            "a license status",
            Draft::new(
                Topic::Licenses,
                "LIC-1",
                T0 + 5 * DAY,
                Payload::LicenseStatus(LicenseStatus::Suspended, Date::from_ymd(2024, 6, 1).expect("date"), None),
            ),
            vec![(Subject::License, "LIC-1", vec![Answer::LicenseStatus], false)],
        ),
        (
            "a holder's new public name",
            Draft::new(Topic::Parties, "PTY-2", T0 + 6 * DAY, Payload::PartyRenamed("Bruno Neu".into())),
            vec![(Subject::Work, "LCC-1", vec![Answer::Rights, Answer::Metadata, Answer::Evidence], false)],
        ),
        (
            "a party's personal data, which no answer shows",
            Draft::new(Topic::Parties, "PTY-2", T0 + 7 * DAY, Payload::PartyPersonalData(support::personal("PTY-2x"))),
            vec![],
        ),
        (
            "a withdrawal",
            Draft::new(
                Topic::Works,
                "LCC-1",
                T0 + 8 * DAY,
                Payload::WorkWithdrawn("Withdrawn by the registrant.".into()),
            ),
            // Dublin Core states no status, so the metadata stays as it was.
            vec![(
                Subject::Work,
                "LCC-1",
                vec![Answer::Rights, Answer::Verification, Answer::Provenance, Answer::Evidence],
                true,
            )],
        ),
    ];
    for (index, (change, draft, expected)) in steps.into_iter().enumerate() {
        history.push(draft);
        // The whole history again: every earlier event is a duplicate, so
        // only the new one can change an answer.
        let events = projection.write(&format!("step-{}", index + 1), history.clone(), 1);
        projection.project(&events, 3).await;
        let (notified, next) = notifications_after(&projection, Some(&cursor)).await;
        let described: Vec<Expected<'_>> = notified
            .iter()
            .map(|item| (item.subject, item.id.as_str(), item.changed.clone(), item.withdrawn))
            .collect();
        assert_eq!(described, expected, "{change}");
        for item in notified.iter().filter(|item| item.subject == Subject::Work) {
            assert!(item.version > last_version, "{change}: versions grow per id");
            last_version = item.version;
            let rights = stored_tag(&projection, DocumentKind::RightsProfile, "LCC-1").await;
            assert_eq!(item.tags.rights, Some(rights), "{change}: the tag of the stored profile");
            assert_eq!(item.tags.get(Answer::Verification).map(|tag| tag.starts_with("W/")), Some(true));
        }
        cursor = next;
    }

    let events = projection.write("replay", history, 1);
    projection.project(&events, 5).await;
    let (replayed, _) = notifications_after(&projection, Some(&cursor)).await;
    assert!(replayed.is_empty(), "an unchanged replay notifies no one: {replayed:?}");
}
