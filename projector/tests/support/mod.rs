//! Shared helpers for the projector's integration tests: write hand-made
//! event drafts as files, project them in-process into a fresh SQLite store,
//! and read documents back.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use projector::contract::{Contract, Topic};
use projector::dead_letter::DeadLetterFile;
use projector::events::{Creator, RightRecord, WorkRecord};
use projector::generate::drafts::{DAY, Draft, Payload, PersonalData};
use projector::generate::{GenerateOptions, write_drafts};
use projector::runner::{NoObserver, RunOptions, RunTotals, run};
use projector::source::SourcedEvent;
use projector::source::file::FileSource;
use read_model::calendar::{Date, Timestamp};
use read_model::documents::{CreatorRole, HolderRole, PartyKind, RightType, WorkType};
use read_model::{DocumentKind, DocumentReads, ModelVersion, ModelVersions, SqliteStore, Store};
use serde::de::DeserializeOwned;

/// 2024-01-01T00:00:00Z.
pub const T0: i64 = 1_704_067_200_000;

/// A store with one active version, in a temporary directory.
pub struct Projection {
    pub directory: tempfile::TempDir,
    pub store: SqliteStore,
}

impl Projection {
    pub async fn new() -> Projection {
        let directory = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(directory.path().join("store")).expect("open store");
        store.migrate().await.expect("migrate");
        store.create_model_version(ModelVersion(1)).await.expect("create");
        store.activate_model_version(ModelVersion(1)).await.expect("activate");
        Projection { directory, store }
    }

    /// Writes `drafts` as files into a new events directory named `name`.
    pub fn write(&self, name: &str, drafts: Vec<Draft>, events_per_segment: usize) -> PathBuf {
        let events = self.directory.path().join(name);
        let options = GenerateOptions { works: 0, seed: 3, events_per_segment, sandbox: false };
        write_drafts(drafts, 0, &options, &events).expect("write drafts");
        events
    }

    /// Projects every file of `events` with batches of `batch_size` events.
    pub async fn project(&self, events: &Path, batch_size: usize) -> RunTotals {
        let source = FileSource::new(events, Arc::new(Contract::load().expect("contract")));
        let letters = DeadLetterFile::open(&self.dead_letter_path(events)).expect("dead letters");
        let store: Arc<dyn Store> = Arc::new(self.store.clone());
        let options = RunOptions {
            batch_size,
            linger: Duration::from_millis(100),
            exit_when_caught_up: true,
            ..RunOptions::default()
        };
        let feed = source.start(batch_size, Duration::from_millis(10)).expect("reader");
        run(store, ModelVersion(1), feed, Box::new(letters), Arc::new(NoObserver), options, std::future::pending())
            .await
            .expect("run")
    }

    pub fn dead_letter_path(&self, events: &Path) -> PathBuf {
        let name = events.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        self.directory.path().join(format!("{name}.dead-letters.jsonl"))
    }

    pub async fn document<T: DeserializeOwned>(&self, kind: DocumentKind, id: &str) -> Option<T> {
        let body = self.store.document(kind, id).await.expect("read")?;
        Some(serde_json::from_slice(&body).expect("document decodes"))
    }

    /// Every document body of every kind, as text, for absence checks.
    pub async fn all_text(&self, ids: &[&str]) -> String {
        let mut text = String::new();
        for id in ids {
            for kind in DocumentKind::ALL {
                if let Some(body) = self.store.document(kind, id).await.expect("read") {
                    text.push_str(&String::from_utf8_lossy(&body));
                }
            }
        }
        text
    }
}

/// Every event of the files in `events`, in file-name order, and the source's id.
pub fn read_events(events: &Path) -> (Vec<SourcedEvent>, String) {
    let source = FileSource::new(events, Arc::new(Contract::load().expect("contract")));
    let mut read = Vec::new();
    for name in source.files().expect("files") {
        source.read_file(&name, 0, &mut |event| {
            read.push(event);
            true
        });
    }
    (read, source.source_id().to_owned())
}

pub fn personal(id: &str) -> PersonalData {
    PersonalData {
        email: format!("{id}@personal.invalid"),
        phone: "+99 711111111".into(),
        postal_address: format!("PRIVATE-{id}"),
        birth_date: Date::from_ymd(1940, 1, 2),
        national_id: format!("NID-{id}"),
    }
}

pub fn party(id: &str, name: &str, at: i64) -> Draft {
    let kind = if id.contains("ORG") { PartyKind::Organisation } else { PartyKind::Person };
    let profile = projector::events::PartyProfile { name: name.into(), kind, ipi: None, isni: None };
    Draft::new(Topic::Parties, id, at, Payload::PartyRegistered(profile, personal(id)))
}

pub fn work(id: &str, creator: &str, at: i64) -> Draft {
    let record = WorkRecord {
        title: format!("Title of {id}"),
        alternative_titles: Vec::new(),
        iswc: None,
        isrcs: Vec::new(),
        creators: vec![Creator { party_id: creator.into(), role: CreatorRole::Composer }],
        language: Some("en".into()),
        work_type: WorkType::MusicalWork,
        created_on: Date::from_ymd(2001, 2, 3),
        description: None,
        subjects: Vec::new(),
        publisher_party_id: None,
        related_work_ids: Vec::new(),
        file_sha256: "ab".repeat(32),
        file_format: None,
        earliest_recorded_at: Timestamp(at - DAY),
    };
    Draft::new(Topic::Works, id, at, Payload::WorkRegistered(record))
}

pub fn right(work: &str, suffix: &str, holder: &str, share: u32, right_type: RightType) -> RightRecord {
    RightRecord {
        right_id: format!("{work}-{suffix}"),
        right_type,
        holder_party_id: holder.into(),
        role: HolderRole::Author,
        share_basis_points: share,
        acquired_from_party_id: None,
        territory: "WORLD".into(),
        valid_from: Date::from_ymd(2001, 2, 3).expect("date"),
        valid_until: None,
        protection_ends_on: Date::from_ymd(2090, 12, 31).expect("date"),
    }
}

pub fn rights(work: &str, at: i64, rights: Vec<RightRecord>, open: bool) -> Draft {
    Draft::new(Topic::Rights, work, at, Payload::RightsChain(rights, open))
}

pub fn published(work: &str, at: i64) -> Draft {
    Draft::new(Topic::Works, work, at, Payload::WorkPublished(Timestamp(at)))
}

/// An active blanket license to `licensee` for everything, from 2024.
pub fn blanket_grant(licensee: &str) -> projector::events::LicenseGrant {
    projector::events::LicenseGrant {
        kind: read_model::documents::LicenseKind::Blanket,
        licensee_party_id: licensee.into(),
        status: read_model::documents::LicenseStatus::Active,
        valid_from: Date::from_ymd(2024, 1, 1).expect("date"),
        valid_until: None,
        covered_work_ids: Vec::new(),
        repertoire: Some("Everything.".into()),
        territory: "WORLD".into(),
    }
}
