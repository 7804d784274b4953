//! The projection rules, end to end through files, the projector and a real
//! SQLite store: merges across topics in any arrival order, party renames,
//! indexes, bulk membership, disputes, licenses, idempotence and parking,
//! and rendering documents again for a backend that reported them stale.

mod support;

use projector::contract::Topic;
use projector::events::{LicenseGrant, WorkAmendment};
use projector::generate::drafts::{DAY, Draft, Payload};
use std::sync::Arc;

use projector::projection::batch::{DocumentsToRender, Rendering, project_batch, render_documents};
use read_model::calendar::{Date, Timestamp};
use read_model::documents::{
    BulkRow, DisputeStatus, DublinCoreRecord, EvidenceInputs, LicenseKind, LicenseStatus, LicenseStatusDocument,
    RightType, RightsProfile, VerificationInputs, WorkStatus,
};
use read_model::{
    Audience, DocumentKind, DocumentReads, IdentifierKind, ModelVersion, PartyReferrer, ProjectionWrites,
};
use support::{Projection, T0, blanket_grant, party, published, read_events, right, rights, work};

#[tokio::test]
async fn rights_recorded_before_their_work_appear_once_the_work_arrives() {
    let projection = Projection::new().await;
    let drafts = vec![
        rights("LCC-1", T0, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
        party("PTY-1", "Ada Adler", T0 + 1),
        work("LCC-1", "PTY-1", T0 + 2),
    ];
    // One event per segment and per batch: every event is its own transaction.
    let events = projection.write("events", drafts, 1);
    let totals = projection.project(&events, 1).await;
    assert_eq!((totals.applied, totals.parked), (3, 0));
    let profile: RightsProfile = projection.document(DocumentKind::RightsProfile, "LCC-1").await.expect("profile");
    assert_eq!(profile.holders.len(), 1);
    assert_eq!(profile.holders[0].holder.name.as_deref(), Some("Ada Adler"));
    assert!(profile.open_for_licensing);
    assert_eq!(profile.status, WorkStatus::Registered);
    assert!(profile.shares[0].complete);
}

#[tokio::test]
async fn a_party_registered_after_its_works_fills_in_its_name_everywhere() {
    let projection = Projection::new().await;
    let drafts =
        vec![work("LCC-1", "PTY-9", T0), published("LCC-1", T0 + 1), party("PTY-9", "Late Lorenz", T0 + 10 * DAY)];
    let events = projection.write("events", drafts, 1);
    projection.project(&events, 1).await;
    let metadata: DublinCoreRecord = projection.document(DocumentKind::Metadata, "LCC-1").await.expect("metadata");
    assert_eq!(metadata.creator, ["Late Lorenz"]);
    let page = projection.store.bulk_page(Audience::Production, 0, 10).await.expect("page");
    let row: BulkRow = serde_json::from_slice(&page.rows[0]).expect("row");
    assert_eq!(row.creators[0].name.as_deref(), Some("Late Lorenz"));
}

#[tokio::test]
async fn a_party_rename_reaches_every_document_that_names_the_party() {
    let projection = Projection::new().await;
    let grant = blanket_grant("PTY-ORG-1");
    let drafts = vec![
        party("PTY-1", "Old Name", T0),
        party("PTY-ORG-1", "Old Name", T0),
        work("LCC-1", "PTY-1", T0 + 1),
        published("LCC-1", T0 + 2),
        work("LCC-2", "PTY-2", T0 + 3),
        rights("LCC-2", T0 + 4, vec![right("LCC-2", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], false),
        Draft::new(Topic::Licenses, "LIC-1", T0 + 5, Payload::LicenseGranted(grant)),
        Draft::new(Topic::Parties, "PTY-1", T0 + 100 * DAY, Payload::PartyRenamed("New Name".into())),
        Draft::new(Topic::Parties, "PTY-ORG-1", T0 + 100 * DAY, Payload::PartyRenamed("New Org".into())),
    ];
    // The renames arrive in a later batch, so they must be found through the stored references.
    let events = projection.write("events", drafts, 7);
    projection.project(&events, 7).await;
    let text = projection.all_text(&["LCC-1", "LCC-2", "LIC-1"]).await;
    assert!(!text.contains("Old Name"), "a document still names the old name: {text}");
    let profile: RightsProfile = projection.document(DocumentKind::RightsProfile, "LCC-2").await.expect("profile");
    assert_eq!(profile.holders[0].holder.name.as_deref(), Some("New Name"));
    let metadata: DublinCoreRecord = projection.document(DocumentKind::Metadata, "LCC-1").await.expect("metadata");
    assert_eq!(metadata.creator, ["New Name"]);
    let license: LicenseStatusDocument =
        projection.document(DocumentKind::LicenseStatus, "LIC-1").await.expect("license");
    assert_eq!(license.licensee.name.as_deref(), Some("New Org"));
    let page = projection.store.bulk_page(Audience::Production, 0, 10).await.expect("page");
    assert!(String::from_utf8_lossy(&page.rows[0]).contains("New Name"));
}

#[tokio::test]
async fn an_amendment_moves_the_work_between_identifier_index_entries() {
    let projection = Projection::new().await;
    let mut registered = work("LCC-1", "PTY-1", T0);
    if let Payload::WorkRegistered(record) = &mut registered.payload {
        record.iswc = Some("T-034.524.680-1".into());
        record.isrcs = vec!["US-S1Z-99-00001".into()];
    }
    let amendment = WorkAmendment { iswc: Some("T0000000010".into()), ..WorkAmendment::default() };
    let drafts = vec![registered, Draft::new(Topic::Works, "LCC-1", T0 + DAY, Payload::WorkAmended(amendment))];
    let events = projection.write("events", drafts, 1);
    projection.project(&events, 1).await;
    let find = |kind, code: &'static str| {
        let store = projection.store.clone();
        async move { store.works_by_identifier(kind, code, Audience::Production).await.expect("index") }
    };
    assert!(find(IdentifierKind::Iswc, "T0345246801").await.is_empty(), "the old ISWC must leave the index");
    assert_eq!(find(IdentifierKind::Iswc, "T0000000010").await, ["LCC-1"]);
    assert_eq!(find(IdentifierKind::Isrc, "USS1Z9900001").await, ["LCC-1"]);
    let profile: RightsProfile = projection.document(DocumentKind::RightsProfile, "LCC-1").await.expect("profile");
    assert_eq!(profile.iswc.as_deref(), Some("T-000.000.001-0"));
}

#[tokio::test]
async fn withdrawal_removes_a_work_from_the_bulk_export_but_keeps_its_record() {
    let projection = Projection::new().await;
    let drafts = vec![
        work("LCC-1", "PTY-1", T0),
        published("LCC-1", T0 + 1),
        work("LCC-2", "PTY-1", T0 + 2),
        published("LCC-2", T0 + 3),
        work("LCC-3", "PTY-1", T0 + 4),
        Draft::new(Topic::Works, "LCC-1", T0 + DAY, Payload::WorkWithdrawn("Asked by the holders.".into())),
    ];
    let events = projection.write("events", drafts, 3);
    projection.project(&events, 3).await;
    let page = projection.store.bulk_page(Audience::Production, 0, 10).await.expect("page");
    assert_eq!(page.total, 1, "only LCC-2 is published and not withdrawn");
    let row: BulkRow = serde_json::from_slice(&page.rows[0]).expect("row");
    assert_eq!(row.lcc_id, "LCC-2");
    let profile: RightsProfile =
        projection.document(DocumentKind::RightsProfile, "LCC-1").await.expect("still readable");
    assert_eq!(profile.status, WorkStatus::Withdrawn);
}

#[tokio::test]
async fn the_dispute_status_prefers_open_disputes_over_resolved_ones() {
    let projection = Projection::new().await;
    let drafts = vec![
        work("LCC-1", "PTY-1", T0),
        Draft::new(Topic::Disputes, "LCC-1", T0 + 1, Payload::DisputeOpened("D1".into(), "OWNERSHIP")),
        Draft::new(Topic::Disputes, "LCC-1", T0 + 2, Payload::DisputeResolved("D1".into(), "UPHELD")),
        Draft::new(Topic::Disputes, "LCC-1", T0 + 3, Payload::DisputeOpened("D2".into(), "PLAGIARISM")),
        Draft::new(Topic::Disputes, "LCC-1", T0 + 4, Payload::DisputeUpdated("D2".into(), "IN_MEDIATION")),
    ];
    let events = projection.write("events", drafts, 10);
    projection.project(&events, 10).await;
    let verification: VerificationInputs = projection.document(DocumentKind::Verification, "LCC-1").await.expect("doc");
    assert_eq!(verification.dispute_status, DisputeStatus::InMediation);
    let evidence: EvidenceInputs = projection.document(DocumentKind::Evidence, "LCC-1").await.expect("doc");
    let statuses: Vec<DisputeStatus> = evidence.disputes.iter().map(|dispute| dispute.status).collect();
    assert_eq!(statuses, [DisputeStatus::ResolvedUpheld, DisputeStatus::InMediation]);
}

#[tokio::test]
async fn license_status_follows_grant_changes_and_renewals() {
    let projection = Projection::new().await;
    let grant = LicenseGrant {
        kind: LicenseKind::Individual,
        licensee_party_id: "PTY-ORG-1".into(),
        status: LicenseStatus::Pending,
        valid_from: Date::from_ymd(2024, 1, 1).expect("date"),
        valid_until: Date::from_ymd(2025, 1, 1),
        covered_work_ids: vec!["LCC-1".into()],
        repertoire: None,
        territory: "FR".into(),
    };
    let suspended = Date::from_ymd(2024, 6, 1).expect("date");
    let drafts = vec![
        Draft::new(Topic::Licenses, "LIC-1", T0, Payload::LicenseGranted(grant)),
        Draft::new(
            Topic::Licenses,
            "LIC-1",
            T0 + DAY,
            Payload::LicenseStatus(LicenseStatus::Suspended, suspended, Some("Unpaid.".into())),
        ),
        Draft::new(Topic::Licenses, "LIC-1", T0 + 2 * DAY, Payload::LicenseRenewed(Date::from_ymd(2026, 1, 1))),
    ];
    let events = projection.write("events", drafts, 10);
    projection.project(&events, 10).await;
    let license: LicenseStatusDocument = projection.document(DocumentKind::LicenseStatus, "LIC-1").await.expect("doc");
    assert_eq!((license.kind, license.status), (LicenseKind::Individual, LicenseStatus::Suspended));
    assert_eq!(license.status_effective_from, suspended);
    assert_eq!(license.status_reason.as_deref(), Some("Unpaid."));
    assert_eq!(license.valid_until, Date::from_ymd(2026, 1, 1));
    assert_eq!(license.covered_work_ids, ["LCC-1"]);
    assert_eq!(license.updated_at, Timestamp(T0 + 2 * DAY));
    let body = projection.store.document(DocumentKind::LicenseStatus, "LIC-1").await.expect("read").expect("doc");
    assert!(
        String::from_utf8_lossy(&body).contains("\"kind\":\"Individual\""),
        "the kind is spelled as the specification spells it"
    );
}

#[tokio::test]
async fn replaying_a_stream_from_another_source_skips_every_event_and_changes_nothing() {
    let projection = Projection::new().await;
    let drafts = vec![party("PTY-1", "Ada", T0), work("LCC-1", "PTY-1", T0 + 1), published("LCC-1", T0 + 2)];
    let first = projection.write("first", drafts.clone(), 10);
    let second = projection.write("second", drafts, 10);
    projection.project(&first, 10).await;
    let before = projection.all_text(&["LCC-1"]).await;
    let totals = projection.project(&second, 10).await;
    assert_eq!((totals.applied, totals.skipped_as_duplicates), (0, 3));
    assert_eq!(projection.all_text(&["LCC-1"]).await, before);
    assert_eq!(projection.store.provenance("LCC-1").await.expect("provenance").len(), 2);
}

#[tokio::test]
async fn events_that_need_a_missing_state_are_parked_and_the_stream_goes_on() {
    let projection = Projection::new().await;
    let drafts = vec![
        Draft::new(Topic::Works, "LCC-404", T0, Payload::WorkPublished(Timestamp(T0))),
        Draft::new(Topic::Certificates, "LCC-1", T0 + 1, Payload::CertificateRevoked("C-9".into(), "No.".into())),
        work("LCC-1", "PTY-1", T0 + 2),
    ];
    let events = projection.write("events", drafts, 10);
    let totals = projection.project(&events, 10).await;
    assert_eq!((totals.applied, totals.parked), (1, 2));
    let letters =
        projector::dead_letter::DeadLetterFile::read_all(&projection.dead_letter_path(&events)).expect("letters");
    let reasons: Vec<&str> = letters.iter().map(|letter| letter.reason.as_str()).collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons.iter().any(|reason| reason.contains("never registered")), "{reasons:?}");
    assert!(reasons.iter().any(|reason| reason.contains("not the work's current certificate")), "{reasons:?}");
    assert!(projection.store.document(DocumentKind::RightsProfile, "LCC-1").await.expect("read").is_some());
}

#[tokio::test]
async fn provenance_lists_every_applied_change_of_the_work_in_order() {
    let projection = Projection::new().await;
    let drafts = vec![
        work("LCC-1", "PTY-1", T0),
        rights("LCC-1", T0 + 1, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], true),
        Draft::new(
            Topic::Certificates,
            "LCC-1",
            T0 + 2,
            Payload::CertificateIssued("C-1".into(), "cd".repeat(32), Timestamp(T0 + 2)),
        ),
        published("LCC-1", T0 + 3),
    ];
    let events = projection.write("events", drafts, 10);
    projection.project(&events, 10).await;
    let entries: Vec<read_model::documents::ProvenanceEntry> = projection
        .store
        .provenance("LCC-1")
        .await
        .expect("provenance")
        .iter()
        .map(|body| serde_json::from_slice(body).expect("entry"))
        .collect();
    let types: Vec<&str> = entries.iter().map(|entry| entry.event_type.as_str()).collect();
    assert_eq!(types, ["WorkRegistered", "RightsChainRecorded", "CertificateIssued", "WorkPublished"]);
    assert_eq!(entries[3].changed, ["status", "publishedAt"]);
    assert_eq!(entries[0].source_system, "registry-web");
}

#[tokio::test]
async fn rendering_documents_again_gives_what_projection_wrote_and_changes_no_state() {
    let projection = Projection::new().await;
    let drafts = vec![
        party("PTY-1", "A Name", T0),
        work("LCC-1", "PTY-1", T0 + 1),
        published("LCC-1", T0 + 2),
        rights("LCC-1", T0 + 3, vec![right("LCC-1", "A0", "PTY-1", 10_000, RightType::AuthorsRight)], false),
    ];
    let events = projection.write("events", drafts, 2);
    projection.project(&events, 2).await;

    let work = PartyReferrer::Work("LCC-1".into());
    let documents = DocumentsToRender::of(std::slice::from_ref(&work));
    let batch = render_documents(&projection.store, ModelVersion(1), documents).await.expect("render");
    for kind in
        [DocumentKind::RightsProfile, DocumentKind::Verification, DocumentKind::Metadata, DocumentKind::Evidence]
    {
        let rendered = batch.documents.iter().find(|write| write.kind == kind).expect("rendered");
        let stored = projection.store.document(kind, "LCC-1").await.expect("read");
        assert_eq!(rendered.body, stored, "{kind:?}");
    }
    assert_eq!(batch.bulk_rows.len(), 1, "a published work's bulk row is rendered too");
    assert!(batch.aggregates.is_empty() && batch.checkpoints.is_empty() && batch.party_references.is_empty());
    assert!(batch.identifiers.is_empty() && batch.provenance.is_empty());
    assert_eq!(batch.read_set.documents, [work]);
    let inputs: Vec<(&str, u64)> =
        batch.read_set.inputs.iter().map(|input| (input.key.topic.as_str(), input.version)).collect();
    assert!(inputs.contains(&("parties", 1)) && inputs.contains(&("works", 2)), "{inputs:?}");
}

#[tokio::test]
async fn a_batch_of_many_works_renders_each_as_batches_of_a_few_do() {
    // Enough works in one batch for its rendering to be split over two
    // threads; batches of eight events render each work on one.
    let works: u32 = 400;
    let drafts: Vec<Draft> = (0..works)
        .flat_map(|index| {
            let (id, holder) = (format!("LCC-{index}"), format!("PTY-{index}"));
            let at = T0 + 4 * i64::from(index);
            let shares = vec![right(&id, "A0", &holder, 10_000, RightType::AuthorsRight)];
            [
                party(&holder, &format!("Holder {index}"), at),
                work(&id, &holder, at + 1),
                published(&id, at + 2),
                rights(&id, at + 3, shares, index % 2 == 0),
            ]
        })
        .collect();
    let in_one = Projection::new().await;
    let (events, source_id) = read_events(&in_one.write("events", drafts.clone(), 10_000));
    let version = ModelVersion(1);
    let outcome =
        project_batch(&in_one.store, version, &source_id, &events, None, Rendering::InBatch).await.expect("project");
    assert_eq!(outcome.applied, 4 * u64::from(works));
    let keys: Vec<&str> = outcome.write.documents.iter().map(|document| document.key.as_str()).collect();
    assert!(keys.is_sorted(), "the documents are written in the works' order");
    in_one.store.apply_batch(version, Arc::new(outcome.write)).await.expect("write");

    let in_a_few = Projection::new().await;
    let totals = in_a_few.project(&in_a_few.write("events", drafts, 10_000), 8).await;
    assert_eq!(totals.applied, 4 * u64::from(works));
    for index in 0..works {
        let id = format!("LCC-{index}");
        for kind in
            [DocumentKind::RightsProfile, DocumentKind::Verification, DocumentKind::Metadata, DocumentKind::Evidence]
        {
            let one = in_one.store.document(kind, &id).await.expect("read");
            let few = in_a_few.store.document(kind, &id).await.expect("read");
            assert!(one.is_some(), "{kind:?} of {id} is rendered");
            assert_eq!(one, few, "{kind:?} of {id}");
        }
    }
}
