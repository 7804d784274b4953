//! The committed sandbox fixtures: reproducible from the generator, every id
//! prefixed `SANDBOX-`, projected by the same code as production data, and
//! covering every scenario a client must be able to try.

use std::collections::BTreeSet;

use end_to_end_tests::{project, workspace_root};
use projector::generate::{GenerateOptions, generate};
use read_model::documents::SandboxFixture;
use read_model::{Audience, DocumentReads, ModelVersions, SqliteStore};

const REQUIRED_SCENARIOS: &[&str] = &[
    "open_for_licensing",
    "closed_for_licensing",
    "single_holder",
    "split_rights",
    "related_rights",
    "dispute_none",
    "dispute_open",
    "dispute_under_review",
    "dispute_in_mediation",
    "dispute_resolved_upheld",
    "dispute_resolved_rejected",
    "dispute_settled",
    "dispute_withdrawn",
    "protection_expired",
    "found_by_iswc",
    "found_by_isrc",
    "work_withdrawn",
    "certificate_revoked",
    "incomplete_rights_chain",
    "license_blanket_pending",
    "license_blanket_active",
    "license_blanket_suspended",
    "license_blanket_expired",
    "license_blanket_terminated",
    "license_blanket_revoked",
    "license_individual_pending",
    "license_individual_active",
    "license_individual_suspended",
    "license_individual_expired",
    "license_individual_terminated",
    "license_individual_revoked",
];

#[test]
fn the_committed_fixture_files_are_exactly_what_the_generator_produces() {
    let committed = workspace_root().join("schemas/fixtures/sandbox");
    let fresh = tempfile::tempdir().expect("tempdir");
    let options = GenerateOptions { works: 0, seed: 277, events_per_segment: 20_000, sandbox: true };
    generate(&options, fresh.path()).expect("generate");
    let names = |directory: &std::path::Path| -> BTreeSet<String> {
        std::fs::read_dir(directory)
            .expect("list")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&committed), names(fresh.path()));
    // apache-avro writes header metadata in hash order, so files are compared by
    // what they hold: the writer schema and every record, in order.
    let contents = |path: std::path::PathBuf| {
        let bytes = std::fs::read(&path).expect("read");
        if !path.to_string_lossy().ends_with(".avro") {
            return (String::new(), vec![format!("{bytes:?}")]);
        }
        let reader = apache_avro::Reader::new(bytes.as_slice()).expect("container file");
        let schema = reader.writer_schema().canonical_form();
        (schema, reader.map(|value| format!("{:?}", value.expect("record"))).collect::<Vec<_>>())
    };
    for name in names(&committed) {
        assert!(
            contents(committed.join(&name)) == contents(fresh.path().join(&name)),
            "{name} differs from the generator's output: regenerate with `projector generate --sandbox --seed 277 --out schemas/fixtures/sandbox`"
        );
    }
}

#[tokio::test]
async fn the_projected_fixtures_cover_every_scenario_and_stay_in_the_sandbox() {
    let data = tempfile::tempdir().expect("tempdir");
    let summary = project(&workspace_root().join("schemas/fixtures/sandbox"), data.path(), 5_000);
    assert_eq!(summary.parked, 0);

    let store = SqliteStore::open(data.path()).expect("open");
    assert!(store.active_model_version().await.expect("catalog").is_some());
    let fixtures: Vec<SandboxFixture> = store
        .sandbox_fixtures()
        .await
        .expect("fixtures")
        .iter()
        .map(|body| serde_json::from_slice(body).expect("fixture"))
        .collect();
    assert!(fixtures.iter().all(|fixture| fixture.id.starts_with("SANDBOX-")));
    let covered: BTreeSet<&str> =
        fixtures.iter().flat_map(|fixture| fixture.scenarios.iter().map(String::as_str)).collect();
    let missing: Vec<&&str> = REQUIRED_SCENARIOS.iter().filter(|scenario| !covered.contains(**scenario)).collect();
    assert!(missing.is_empty(), "no fixture demonstrates {missing:?}");

    let production = store.bulk_page(Audience::Production, 0, 100).await.expect("page");
    assert_eq!(production.total, 0, "sandbox records never appear in the production export");
    let sandbox = store.bulk_page(Audience::Sandbox, 0, 100).await.expect("page");
    assert_eq!(sandbox.total, 14, "published, not withdrawn sandbox works");
    let iswc = fixtures.iter().find_map(|fixture| fixture.iswc.clone()).expect("a fixture with an ISWC");
    let normalized = read_model::identifiers::normalize_iswc(&iswc).expect("valid");
    let found = store
        .works_by_identifier(read_model::IdentifierKind::Iswc, &normalized, Audience::Sandbox)
        .await
        .expect("index");
    assert_eq!(found, ["SANDBOX-LCC-0001"]);
    let none = store
        .works_by_identifier(read_model::IdentifierKind::Iswc, &normalized, Audience::Production)
        .await
        .expect("index");
    assert!(none.is_empty());
}
