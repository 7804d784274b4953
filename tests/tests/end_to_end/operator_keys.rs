//! Production keys managed by the operator command while the service runs:
//! a key issued now is accepted on its first request, and a revoked key is
//! refused within a second, without a restart.

use std::time::{Duration, Instant};

use end_to_end_tests::{RunningService, issue_production_key_with_id, revoke_production_key};

#[test]
fn a_key_issued_while_the_service_runs_works_at_once_and_a_revoked_one_is_refused_within_a_second() {
    let service = RunningService::start(&[], |_| {});
    let (key, key_id) = issue_production_key_with_id(service.data.path(), &["rights:read"], 600);
    let issued = Instant::now();
    let (status, headers, body) = service.request("GET", "/rights/LCC-0000000001", &[("x-api-key", &key)], "");
    let first_answer = issued.elapsed();
    // The store holds only sandbox works, so the production id is unknown: 404, not 401.
    assert_eq!(status, 404, "the first request with the new key is authenticated: {body}");
    assert!(headers.iter().any(|(name, value)| name == "x-ratelimit-limit" && value == "600"), "{headers:?}");
    eprintln!("the new key was accepted {first_answer:?} after the command returned");

    revoke_production_key(service.data.path(), &key_id);
    let revoked = Instant::now();
    loop {
        let (status, _, body) = service.request("GET", "/rights/LCC-0000000001", &[("x-api-key", &key)], "");
        if status == 401 {
            assert!(body.contains("invalid_api_key"), "{body}");
            break;
        }
        assert!(revoked.elapsed() < Duration::from_secs(1), "the revoked key was still accepted: {status}");
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("the revoked key was refused {:?} after the command returned", revoked.elapsed());
}
