//! Rendering a batch's dirty documents into its write, or, when rendering
//! is deferred, writing only what follows from its state changes; either
//! way with the read set. It reads the states rendering needs and nothing
//! else, and it must not apply events. A batch of many works renders them
//! on two threads ([`render_works`]), then adds them to the write in order.

use std::collections::BTreeSet;

use read_model::answer_tags::ProvenanceVersions;
use read_model::documents::{DocumentKind, WorkStatus};
use read_model::notifications::{Answer, Subject};
use read_model::{
    DocumentWrite, IdentifierWrite, KeyedWrite, ModelVersion, PartyReferenceWrite, PartyReferrer, ProjectionWrites,
    StoreError, WriteBatch, WriteVersion,
};
use serde::Serialize;

use super::aggregates::{Aggregates, Overlay, WORK_TOPICS, state_of};
use super::documents_to_render::Stale;
use super::index_changes::WorkIndexChanges;
use super::notifying::{self, NotifiedStates, RenderedTags};
use super::read_set_builder::ReadSetBuilder;
use super::{Dirty, Rendering};
use crate::contract::Topic;
use crate::projection::render::{PartyDirectory, WorkInputs, render_license, render_work};
use crate::projection::state::AggregateState;

/// Renders the dirty documents into `write`, or when rendering is deferred
/// writes only what follows from the state changes (index entries, party
/// references, bulk-row removals); either way with the read set that lets
/// the store check the batch against other projectors' writes. A deferred
/// batch names the documents it leaves to render as rendered, since they
/// will be rendered from states read after it commits.
pub(super) async fn render_dirty(
    store: &dyn ProjectionWrites,
    version: ModelVersion,
    overlay: &Overlay<'_>,
    aggregates: &mut Aggregates,
    dirty: &Dirty,
    rendering: Rendering,
    write: &mut WriteBatch,
) -> Result<(), StoreError> {
    let documents = &dirty.documents;
    let render = rendering == Rendering::InBatch;
    // Rendering reads every input of a document. Index changes follow from
    // a work's works and rights states alone, so a deferred batch reads those
    // two only of the works whose works or rights state it changed, and the
    // other inputs only of the works whose index changes need a write version.
    let topics_first: &[Topic] = if render { &WORK_TOPICS } else { &[Topic::Works, Topic::Rights] };
    let index_may_change = |id: &str| {
        render || topics_first.iter().any(|topic| aggregates.entry(*topic, id).is_some_and(|entry| entry.changed()))
    };
    let first = documents
        .works
        .keys()
        .filter(|id| index_may_change(id))
        .flat_map(|id| topics_first.iter().map(|topic| (*topic, id.clone())))
        .chain(documents.licenses.iter().map(|id| (Topic::Licenses, id.clone())))
        .collect();
    aggregates.load(store, version, overlay, first).await?;
    let work_changes: Vec<(&String, Stale, WorkIndexChanges)> = documents
        .works
        .iter()
        .map(|(id, stale)| (id, if render { *stale } else { Stale::NONE }, WorkIndexChanges::of(aggregates, id)))
        .collect();
    // Without rendering, the other inputs would only supply the write
    // versions of index changes, which a serial backend ignores.
    let versions_needed = store.orders_writes_by_version();
    let mut further = BTreeSet::new();
    for (id, _, changes) in &work_changes {
        if render || (versions_needed && !changes.is_empty()) {
            further.extend([Topic::Disputes, Topic::Certificates].map(|topic| (topic, (*id).clone())));
            further.extend(changes.named_after.iter().map(|party| (Topic::Parties, party.clone())));
        }
    }
    for id in &documents.licenses {
        if let Some(license) = state_of!(aggregates, state, Topic::Licenses, id, License) {
            let before = state_of!(aggregates, before, Topic::Licenses, id, License);
            let licensee_changed = before.map(|before| &before.licensee_party_id) != Some(&license.licensee_party_id);
            if render || (versions_needed && licensee_changed) {
                further.insert((Topic::Parties, license.licensee_party_id.clone()));
            }
        }
    }
    aggregates.load(store, version, overlay, further).await?;
    let mut notified = if render {
        NotifiedStates::load(store, version, overlay, documents.works.keys(), documents.licenses.iter()).await?
    } else {
        NotifiedStates::default()
    };

    let parties = if render { aggregates.parties() } else { PartyDirectory::default() };
    let rendered = render_works(aggregates, &parties, &work_changes);
    let mut read_set = ReadSetBuilder::default();
    for ((id, stale, changes), rendered) in work_changes.into_iter().zip(rendered) {
        write_work(aggregates, &parties, id, stale, changes, rendered, write, &mut read_set, &mut notified);
    }
    for id in &documents.licenses {
        write_license(aggregates, &parties, id, render, write, &mut read_set, &mut notified);
    }
    write.read_set = read_set.finish(aggregates, dirty.changed_parties.clone());
    Ok(())
}

/// Works a batch renders on two threads from this many: below it, the
/// second thread's start costs more than the half it would take.
const RENDERED_ON_TWO_THREADS_FROM: usize = 256;

/// A work's documents as rendered, before they join the batch's write.
struct RenderedDocuments {
    /// Each document kind's body, in the order they are written.
    documents: Vec<(DocumentKind, Vec<u8>)>,
    bulk_row: Option<Vec<u8>>,
    fixture: Option<Vec<u8>>,
    tags: RenderedTags,
    withdrawn: bool,
}

/// Renders the documents of `work_changes`, in their order: a large batch's
/// second half on a second thread while this one renders the first.
/// Rendering only reads the states, so the halves need nothing of each
/// other; what they render joins the write afterwards, in order
/// ([`write_work`]), so the write is the one a single thread makes.
fn render_works(
    aggregates: &Aggregates,
    parties: &PartyDirectory<'_>,
    work_changes: &[(&String, Stale, WorkIndexChanges)],
) -> Vec<Option<RenderedDocuments>> {
    let render = |works: &[(&String, Stale, WorkIndexChanges)]| -> Vec<Option<RenderedDocuments>> {
        works.iter().map(|(id, stale, _)| render_documents_of(aggregates, parties, id, *stale)).collect()
    };
    let rendering = work_changes.iter().filter(|(_, stale, _)| *stale != Stale::NONE).count();
    if rendering < RENDERED_ON_TWO_THREADS_FROM {
        return render(work_changes);
    }
    let (first, second) = work_changes.split_at(work_changes.len() / 2);
    std::thread::scope(|scope| {
        // Without a second thread (none can start now), one renders both halves.
        let Ok(helper) = std::thread::Builder::new().name("render".into()).spawn_scoped(scope, || render(second))
        else {
            return render(work_changes);
        };
        let mut rendered = render(first);
        match helper.join() {
            Ok(second) => rendered.extend(second),
            Err(panic) => std::panic::resume_unwind(panic),
        }
        rendered
    })
}

/// Renders the parts of a work's documents that `stale` names, with their
/// tags; `None` when it names none, or the work is not registered yet
/// (rights, disputes and certificates that arrive earlier wait in their
/// states).
fn render_documents_of(
    aggregates: &Aggregates,
    parties: &PartyDirectory<'_>,
    id: &str,
    stale: Stale,
) -> Option<RenderedDocuments> {
    if stale == Stale::NONE {
        return None;
    }
    let work = state_of!(aggregates, state, Topic::Works, id, Work)?;
    let rendered = render_work(WorkInputs {
        lcc_id: id,
        work,
        rights: state_of!(aggregates, state, Topic::Rights, id, Rights),
        disputes: state_of!(aggregates, state, Topic::Disputes, id, Disputes),
        certificate: state_of!(aggregates, state, Topic::Certificates, id, Certificate),
        parties,
    });
    let mut tags = RenderedTags::default();
    let mut documents = Vec::with_capacity(4);
    if stale.rights_profile {
        let body = to_body(&rendered.rights_profile);
        tags.stored_json(Answer::Rights, id, &body);
        documents.push((DocumentKind::RightsProfile, body));
    }
    if stale.verification {
        let body = to_body(&rendered.verification);
        tags.verification(id, &body, rendered.verification.protection_ends_on);
        documents.push((DocumentKind::Verification, body));
    }
    if stale.metadata {
        let body = to_body(&rendered.metadata);
        tags.stored_json(Answer::Metadata, id, &body);
        documents.push((DocumentKind::Metadata, body));
    }
    let provenance =
        ProvenanceVersions(WORK_TOPICS.map(|topic| aggregates.entry(topic, id).map_or(0, |entry| entry.version)));
    if stale.evidence {
        let body = to_body(&rendered.evidence);
        tags.evidence(id, &body, rendered.evidence.protection_ends_on, provenance);
        documents.push((DocumentKind::Evidence, body));
    }
    tags.provenance(id, provenance);
    Some(RenderedDocuments {
        documents,
        bulk_row: rendered.bulk_row.filter(|_| stale.bulk).map(|row| to_body(&row)),
        fixture: rendered.fixture.map(|fixture| to_body(&fixture)),
        tags,
        withdrawn: rendered.verification.status == WorkStatus::Withdrawn,
    })
}

/// Writes a work's index changes and the documents rendered of it (none
/// when rendering is deferred), with the notification of the answers they
/// change.
#[allow(clippy::too_many_arguments)]
fn write_work(
    aggregates: &Aggregates,
    parties: &PartyDirectory<'_>,
    id: &str,
    stale: Stale,
    changes: WorkIndexChanges,
    rendered: Option<RenderedDocuments>,
    write: &mut WriteBatch,
    read_set: &mut ReadSetBuilder,
    notified: &mut NotifiedStates,
) {
    let render = stale != Stale::NONE;
    let document = PartyReferrer::Work(id.to_owned());
    if !render {
        // It is rendered later, from states read after this batch commits.
        read_set.document(document, aggregates, []);
        if changes.is_empty() {
            return;
        }
    } else {
        let inputs = WORK_TOPICS.map(|topic| (topic, id));
        let named_inputs = changes.named_after.iter().map(|party| (Topic::Parties, party.as_str()));
        read_set.document(document, aggregates, inputs.into_iter().chain(named_inputs));
    }
    let version = aggregates.work_write_version(id, &changes.named_after);
    for (party_id, present) in changes.references {
        let referrer = PartyReferrer::Work(id.to_owned());
        write.party_references.push(PartyReferenceWrite { party_id, referrer, present, version });
    }
    for ((kind, code), present) in changes.identifiers {
        write.identifiers.push(IdentifierWrite { kind, code, lcc_id: id.to_owned(), present, version });
    }
    let keyed = |body: Option<Vec<u8>>| KeyedWrite { key: id.to_owned(), body, version };
    if changes.removes_bulk_row {
        write.bulk_rows.push(keyed(None));
    }
    let Some(rendered) = rendered else { return };
    for (kind, body) in rendered.documents {
        write.documents.push(DocumentWrite { kind, key: id.to_owned(), body: Some(body), version });
    }
    if let Some(row) = rendered.bulk_row {
        write.bulk_rows.push(keyed(Some(row)));
    }
    if let Some(fixture) = rendered.fixture {
        write.fixtures.push(keyed(Some(fixture)));
    }
    let named = notifying::ipis(&changes.named_after, parties);
    notified.record(Subject::Work, id, version.0, rendered.withdrawn, rendered.tags, named, write);
}

/// Writes a license's party reference changes and, when `render`, its
/// documents and the notification of a changed status.
fn write_license(
    aggregates: &Aggregates,
    parties: &PartyDirectory<'_>,
    id: &str,
    render: bool,
    write: &mut WriteBatch,
    read_set: &mut ReadSetBuilder,
    notified: &mut NotifiedStates,
) {
    let Some(license) = state_of!(aggregates, state, Topic::Licenses, id, License) else {
        return;
    };
    let inputs = [(Topic::Licenses, id), (Topic::Parties, license.licensee_party_id.as_str())];
    // A deferred document is rendered later, from states read after this batch commits.
    let inputs = if render { &inputs[..] } else { &[] };
    read_set.document(PartyReferrer::License(id.to_owned()), aggregates, inputs.iter().copied());
    let version = WriteVersion::of_inputs(
        aggregates.version_sum([(Topic::Licenses, id)]),
        aggregates.version_sum([(Topic::Parties, license.licensee_party_id.as_str())]),
    );
    let before = state_of!(aggregates, before, Topic::Licenses, id, License).map(|before| &before.licensee_party_id);
    if before != Some(&license.licensee_party_id) {
        let reference = |party_id: &String, present| PartyReferenceWrite {
            party_id: party_id.clone(),
            referrer: PartyReferrer::License(id.to_owned()),
            present,
            version,
        };
        if let Some(previous) = before {
            write.party_references.push(reference(previous, false));
        }
        write.party_references.push(reference(&license.licensee_party_id, true));
    }
    if !render {
        return;
    }
    let (document, fixture) = render_license(id, license, parties);
    let body = to_body(&document);
    let mut tags = RenderedTags::default();
    tags.stored_json(Answer::LicenseStatus, id, &body);
    write.documents.push(DocumentWrite {
        kind: DocumentKind::LicenseStatus,
        key: id.to_owned(),
        body: Some(body),
        version,
    });
    if let Some(fixture) = fixture {
        write.fixtures.push(KeyedWrite { key: id.to_owned(), body: Some(to_body(&fixture)), version });
    }
    let licensee = notifying::ipis([&license.licensee_party_id], parties);
    notified.record(Subject::License, id, version.0, false, tags, licensee, write);
}

pub(super) fn to_body(document: &impl Serialize) -> Vec<u8> {
    crate::projection::exact_bytes::json(document)
}
