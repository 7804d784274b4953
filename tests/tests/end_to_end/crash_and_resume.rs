//! The projector killed with SIGKILL at random points, then restarted, ends
//! with the same store as one clean run: no event lost, none applied twice,
//! batch by batch and in a sorted catch-up.

use std::time::Duration;

use end_to_end_tests::{
    assert_same_documents, dump_documents, parked_events, project, project_with_environment, projector_command,
    sigkill_at_random_points, sigkill_once_committed, spawn_listening,
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
    // Rendering deferred 400 documents at a time: kills land both while
    // documents and checkpoints wait and after they were written.
    sigkill_at_random_points(8, 2026, (150, 700), || {
        projector_command(&events, &crashed, 250)
            .env("LCC_RENDER_DEFERRAL_MAX_DOCUMENTS", "400")
            .env("LCC_SORTED_CATCH_UP", "false")
            .spawn()
            .expect("projector starts")
    });
    let final_summary = project_with_environment(&events, &crashed, 250, &[("LCC_SORTED_CATCH_UP", "false")]);
    assert!(final_summary.events < clean_summary.events, "the restart must resume, not start over");

    assert_same_documents(&dump_documents(&clean), &dump_documents(&crashed));
    assert_eq!(parked_events(&crashed), manifest.malformed_events, "each malformed event is parked exactly once");
}

/// A sorted catch-up writes no checkpoint before its last batch, so a kill
/// before it leaves a store with states and documents but no checkpoints,
/// and the restart takes in everything again: what was applied is skipped,
/// nothing is applied or parked twice. The killed runs spill runs of 2,000
/// events, so they merge from files; the files a kill leaves are removed
/// by the next run.
#[test]
fn sigkill_during_a_sorted_catch_up_then_restart_gives_the_clean_store() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 4_000, seed: 13, events_per_segment: 2_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");

    let clean = directory.path().join("clean");
    let clean_summary = project_with_environment(&events, &clean, 250, &[("LCC_SORTED_CATCH_UP", "false")]);

    // Each run is killed once it has committed one to six sorted batches
    // and up to 300 ms more, so every kill leaves states and documents
    // written without a checkpoint, however slow the machine.
    let crashed = directory.path().join("crashed");
    let mut random = Random::new(2027);
    for _ in 0..6 {
        let mut command = projector_command(&events, &crashed, 250);
        let (mut child, mut listening) = spawn_listening(command.env("LCC_CATCH_UP_RUN_EVENTS", "2000"));
        let admin = listening.remove("admin").expect("an admin listener");
        let batches = random.range(1, 7) as u64;
        sigkill_once_committed(&mut child, &admin, batches, Duration::from_millis(random.range(0, 300) as u64));
    }
    let spill = crashed.join("catch-up-spill");
    let left = std::fs::read_dir(&spill).expect("the spill directory").count();
    assert_eq!(left, 2, "the last killed run left its spill directory and lock file");
    let final_summary = project(&events, &crashed, 250);
    assert_eq!(std::fs::read_dir(&spill).expect("the spill directory").count(), 0, "the restart removed them");
    eprintln!("the run after the kills: {final_summary:?}");
    assert!(
        final_summary.skipped_as_duplicates > 0 || final_summary.events < clean_summary.events,
        "the kills left something written: {final_summary:?}"
    );

    assert_same_documents(&dump_documents(&clean), &dump_documents(&crashed));
    assert_eq!(parked_events(&crashed), manifest.malformed_events, "each malformed event is parked exactly once");
}
