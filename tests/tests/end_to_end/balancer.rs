//! The shipped balancer configuration (`ops/nginx/api.conf`) in a real nginx
//! in front of two real `query-api serve` replicas: a client keeps one
//! limit across the replicas, its `X-RateLimit-Remaining` counts down
//! truthfully, keyless clients are limited per address, and when a replica
//! dies its clients are answered by the other, as the README says.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use end_to_end_tests::{
    BASE_PATH, binary, generate_and_project, http, issue_production_key, spawn_listening, workspace_root,
};

/// The requests per minute of every key and of keyless clients here.
const LIMIT: usize = 60;

struct Replica {
    child: Child,
    public: String,
    admin: String,
}

impl Replica {
    fn start(data: &Path) -> Replica {
        let mut command = Command::new(binary("query-api"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .args(["--snapshot-interval-minutes", "0", "--trust-x-forwarded-for"])
            .args(["--default-rate-limit", &LIMIT.to_string()])
            .arg("--data-dir")
            .arg(data)
            .env("RUST_LOG", "warn");
        let (child, mut listening) = spawn_listening(&mut command);
        Replica {
            child,
            public: listening.remove("public").expect("public"),
            admin: listening.remove("admin").expect("admin"),
        }
    }

    /// Requests this replica has answered.
    fn answered(&self) -> u64 {
        let (_, _, metrics) = http(&self.admin, "GET", "/metrics", &[], "");
        metrics
            .lines()
            .filter(|line| line.starts_with("lcc_http_requests_total{"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx with the shipped configuration, its upstreams and listener moved
/// to this test's loopback ports.
struct Balancer {
    child: Child,
    address: String,
}

impl Balancer {
    fn start(directory: &Path, replicas: [&str; 2]) -> Balancer {
        let nginx = ["/usr/sbin/nginx", "nginx"]
            .into_iter()
            .find(|program| Command::new(program).arg("-v").output().is_ok())
            .expect("nginx is installed (scripts/install-test-tools.sh installs it)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
        let shipped = std::fs::read_to_string(workspace_root().join("ops/nginx/api.conf")).expect("api.conf");
        assert!(shipped.contains("server query-api-1:8080 ") && shipped.contains("listen 8080;"), "{shipped}");
        let configuration = shipped
            .replace("query-api-1:8080", replicas[0])
            .replace("query-api-2:8080", replicas[1])
            .replace("listen 8080;", &format!("listen 127.0.0.1:{port};"));
        std::fs::write(directory.join("api.conf"), configuration).expect("api.conf");
        let prefix = directory.display();
        let main = format!(
            "daemon off;\nworker_processes 1;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {prefix}/body;\n  proxy_temp_path {prefix}/proxy;\n\
             fastcgi_temp_path {prefix}/fastcgi;\n  uwsgi_temp_path {prefix}/uwsgi;\n  scgi_temp_path {prefix}/scgi;\n\
             include {prefix}/api.conf;\n}}\n"
        );
        std::fs::write(directory.join("nginx.conf"), main).expect("nginx.conf");
        let child = Command::new(nginx)
            .arg("-p")
            .arg(directory)
            .arg("-e")
            .arg(directory.join("error.log"))
            .arg("-c")
            .arg(directory.join("nginx.conf"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nginx starts");
        let address = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen: {:?}",
                std::fs::read_to_string(directory.join("error.log"))
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Balancer { child, address }
    }

    /// (status, X-RateLimit-Remaining) of a GET through the balancer.
    fn get(&self, path: &str, key: Option<&str>) -> (u16, Option<usize>) {
        let headers: Vec<(&str, &str)> = key.map(|key| ("x-api-key", key)).into_iter().collect();
        let (status, headers, _) = http(&self.address, "GET", &format!("{BASE_PATH}{path}"), &headers, "");
        let remaining =
            headers.iter().find(|(name, _)| name == "x-ratelimit-remaining").and_then(|(_, value)| value.parse().ok());
        (status, remaining)
    }
}

impl Drop for Balancer {
    /// SIGTERM, so that the master stops its worker too (SIGKILL would orphan it).
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

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
    let replicas = [Replica::start(&data), Replica::start(&data)];
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
