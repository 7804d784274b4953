//! The projector killed with SIGKILL at random points, then restarted, ends
//! with the same store as one clean run: no event lost, none applied twice.

use std::time::Duration;

use end_to_end_tests::{
    assert_same_documents, dump_documents, parked_events, project, projector_command, sigkill_after,
};
use projector::generate::{GenerateOptions, Random, generate};

#[test]
fn sigkill_at_random_points_then_restart_gives_the_clean_store() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 4_000, seed: 11, events_per_segment: 2_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");

    let clean = directory.path().join("clean");
    let clean_summary = project(&events, &clean, 250);
    assert_eq!(clean_summary.events as usize, manifest.events);

    let crashed = directory.path().join("crashed");
    let mut random = Random::new(2026);
    let mut killed_mid_stream = 0;
    for attempt in 0..8 {
        // Rendering deferred 400 documents at a time: kills land both while
        // documents and checkpoints wait and after they were written.
        let mut child = projector_command(&events, &crashed, 250)
            .env("LCC_RENDER_DEFERRAL_MAX_DOCUMENTS", "400")
            .spawn()
            .expect("projector starts");
        let delay = Duration::from_millis(random.range(150, 700) as u64);
        if sigkill_after(&mut child, delay) {
            killed_mid_stream += 1;
            eprintln!("attempt {attempt}: killed after {delay:?}");
        }
    }
    assert!(killed_mid_stream >= 3, "only {killed_mid_stream} kills hit a running projector; the test proved little");
    let final_summary = project(&events, &crashed, 250);
    assert!(final_summary.events < clean_summary.events, "the restart must resume, not start over");

    assert_same_documents(&dump_documents(&clean), &dump_documents(&crashed));
    assert_eq!(parked_events(&crashed), manifest.malformed_events, "each malformed event is parked exactly once");
}
