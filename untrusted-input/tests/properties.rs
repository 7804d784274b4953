//! The properties of every decoder of untrusted input, on stable: each
//! target's check over mutations of its seeds, for a short budget (CI runs
//! them every time; `scripts/fuzz.sh` runs the coverage-guided fuzzers for
//! minutes). arbtest prints the seed of a failure, so that it can be run
//! again with `.seed(…)` and become a regression test.

use untrusted_input::Target;
use untrusted_input::mutation::mutated;

/// Milliseconds each property runs for.
const BUDGET_MS: u64 = 2_000;

fn holds_over_mutated_seeds(target: Target) {
    let seeds = target.seeds();
    assert!(!seeds.is_empty(), "{} has seeds", target.name());
    for seed in &seeds {
        target.check(seed);
    }
    arbtest::arbtest(|random| {
        target.check(&mutated(&seeds, random)?);
        Ok(())
    })
    .budget_ms(BUDGET_MS);
}

#[test]
fn kafka_message_values_decode_or_park_with_a_reason() {
    holds_over_mutated_seeds(Target::AvroMessage);
}

#[test]
fn container_files_decode_or_park_with_a_reason_and_resume_alike() {
    holds_over_mutated_seeds(Target::AvroFile);
}

#[test]
fn feed_cursors_survive_encoding_and_the_rest_are_refused_as_invalid_cursors() {
    holds_over_mutated_seeds(Target::FeedCursor);
}

#[test]
fn notification_cursors_survive_encoding_and_the_rest_are_refused_as_invalid_cursors() {
    holds_over_mutated_seeds(Target::NotificationCursor);
}

#[test]
fn resumption_tokens_survive_encoding_and_the_rest_are_bad_resumption_tokens() {
    holds_over_mutated_seeds(Target::ResumptionToken);
}

#[test]
fn sandbox_keys_verify_only_as_issued() {
    holds_over_mutated_seeds(Target::SandboxKey);
}

#[test]
fn batch_lookups_are_answered_or_refused_with_a_problem() {
    holds_over_mutated_seeds(Target::BatchLookup);
}

#[test]
fn request_parameters_are_answered_or_refused_with_a_problem() {
    holds_over_mutated_seeds(Target::RequestParameters);
}

#[test]
fn every_target_is_named_by_its_fuzz_target_file() {
    let targets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/fuzz_targets");
    for target in Target::ALL {
        let file = targets.join(format!("{}.rs", target.name()));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let variant = format!("Target::{target:?}");
        assert!(text.contains(&variant), "{} checks {variant}", file.display());
    }
}
