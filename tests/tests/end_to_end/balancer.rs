//! The shipped balancer configuration (`ops/nginx/api.conf`) in a real nginx
//! in front of two real `query-api serve` replicas: a client keeps one
//! limit across the replicas, its `X-RateLimit-Remaining` counts down
//! truthfully, keyless clients are limited per address, and when a replica
//! dies its clients are answered by the other, as the README says.

use std::time::Instant;

use end_to_end_tests::balancer::{Balancer, Replica};
use end_to_end_tests::{generate_and_project, issue_production_key};

/// The requests per minute of every key and of keyless clients here.
const LIMIT: usize = 60;

/// Sends `count` requests as fast as one client does; returns the statuses
/// and the remaining counts, and the seconds it took.
fn burst(balancer: &Balancer, path: &str, key: Option<&str>, count: usize) -> (Vec<u16>, Vec<usize>, f64) {
    let started = Instant::now();
    let (statuses, remaining): (Vec<u16>, Vec<Option<usize>>) = (0..count).map(|_| balancer.get(path, key)).unzip();
    (statuses, remaining.into_iter().flatten().collect(), started.elapsed().as_secs_f64())
}

/// What one limiter of `LIMIT` a minute (burst `LIMIT`, refilled continuously) admits in `seconds`.
fn admitted_by_one_limiter(seconds: f64) -> std::ops::RangeInclusive<usize> {
    LIMIT..=LIMIT + (seconds * LIMIT as f64 / 60.0).ceil() as usize
}

#[test]
fn behind_the_shipped_balancer_each_client_has_one_limit_across_two_replicas() {
    let directory = tempfile::tempdir().expect("tempdir");
    let projected = generate_and_project(directory.path(), 30, 36, 10_000);
    let data = projected.clean;
    let keys: Vec<String> = (0..16).map(|_| issue_production_key(&data, &["rights:read"], LIMIT as u32)).collect();
    let replicas = [Replica::start(&data, LIMIT), Replica::start(&data, LIMIT)];
    let balancer = Balancer::start(directory.path(), [replicas[0].public.as_str(), replicas[1].public.as_str()]);
    let work = "/rights/LCC-0000000001";

    // Every key: exactly one limiter's admissions, and a remaining count
    // that falls by one with every admitted request.
    let before = [replicas[0].answered(), replicas[1].answered()];
    for key in &keys {
        let (statuses, remaining, seconds) = burst(&balancer, work, Some(key), 2 * LIMIT + 30);
        let admitted = statuses.iter().filter(|status| **status == 200).count();
        assert!(statuses.iter().all(|status| matches!(status, 200 | 429)), "{statuses:?}");
        assert!(admitted_by_one_limiter(seconds).contains(&admitted), "{admitted} admitted in {seconds:.1} s");
        eprintln!("one key, {} requests in {seconds:.1} s: {admitted} admitted", statuses.len());
        let counted_down: Vec<usize> = remaining.iter().take(LIMIT).copied().collect();
        assert_eq!(counted_down, (0..LIMIT).rev().collect::<Vec<_>>(), "X-RateLimit-Remaining counts down once");
    }
    let served = [replicas[0].answered() - before[0], replicas[1].answered() - before[1]];
    assert!(served.iter().all(|count| *count > 0), "the keys are spread over both replicas: {served:?}");

    // A keyless client is limited per address, on one replica too.
    let (statuses, _, seconds) = burst(&balancer, "/openapi.json", None, 2 * LIMIT);
    let admitted = statuses.iter().filter(|status| **status == 200).count();
    assert!(admitted_by_one_limiter(seconds).contains(&admitted), "{admitted} keyless admitted in {seconds:.1} s");

    // A replica dies: its clients are answered by the other, which starts
    // them with a full quota (the documented cost of keeping limits per replica).
    let fresh = issue_production_key(&data, &["rights:read"], LIMIT as u32);
    let before = replicas[0].answered();
    assert_eq!(balancer.get(work, Some(&fresh)).0, 200);
    let home = usize::from(replicas[0].answered() == before);
    let (statuses, _, _) = burst(&balancer, work, Some(&fresh), LIMIT + 10);
    assert!(statuses.ends_with(&[429; 10]), "exhausted on its own replica: {statuses:?}");
    let [first, second] = replicas;
    let (dead, survivor) = if home == 0 { (first, second) } else { (second, first) };
    drop(dead);
    let (statuses, _, _) = burst(&balancer, work, Some(&fresh), LIMIT + 10);
    assert!(statuses.iter().all(|status| matches!(status, 200 | 429)), "no failed request: {statuses:?}");
    let admitted = statuses.iter().filter(|status| **status == 200).count();
    assert!(admitted >= LIMIT, "the survivor starts the moved client with a full quota: {admitted}");
    assert!(survivor.answered() > 0);
}
