//! The programs as an operator and a user run them: the single-machine
//! service started and restarted, and production keys issued and revoked
//! through the operator's command.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::{BASE_PATH, TestStore, binary, http, spawn_listening, workspace_root};

/// The single-machine service (`rights-service`) as a user starts it, on
/// ports it picks itself and reports, with a data directory of its own,
/// once the bundled sandbox fixtures are projected and served. It is killed
/// when dropped.
#[derive(Debug)]
pub struct RunningService {
    pub address: String,
    pub admin: String,
    pub data: tempfile::TempDir,
    child: Child,
}

impl RunningService {
    /// Starts the service with extra environment variables; `before_start`
    /// runs on the empty data directory first (to issue production keys).
    pub fn start(environment: &[(&str, &str)], before_start: impl FnOnce(&Path)) -> RunningService {
        let data = tempfile::tempdir().expect("tempdir");
        before_start(data.path());
        RunningService::start_in(data, environment)
    }

    /// Stops the service with SIGTERM and starts it again on the same data
    /// directory, as a user who stops and reruns `cargo run --release`.
    pub fn restart(mut self, environment: &[(&str, &str)]) -> RunningService {
        let status = self.terminate();
        assert!(status.success(), "SIGTERM stops the service cleanly: {status:?}");
        let data = std::mem::replace(&mut self.data, tempfile::tempdir().expect("tempdir"));
        RunningService::start_in(data, environment)
    }

    fn start_in(data: tempfile::TempDir, environment: &[(&str, &str)]) -> RunningService {
        let mut command = Command::new(binary("rights-service"));
        command
            .current_dir(workspace_root())
            .arg("--data-dir")
            .arg(data.path())
            .args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .envs(environment.iter().copied())
            .env("RUST_LOG", "warn");
        let (child, mut listening) = spawn_listening(&mut command);
        let address = listening.remove("public").expect("a public listener");
        let admin = listening.remove("admin").expect("an admin listener");
        let service = RunningService { address, admin, data, child };
        service.wait_until_the_fixtures_are_served();
        service
    }

    fn wait_until_the_fixtures_are_served(&self) {
        let started = Instant::now();
        for attempt in 0_u32.. {
            assert!(started.elapsed() < Duration::from_secs(60), "the service did not serve the fixtures");
            // Behind a trusted proxy each attempt counts as a client of its
            // own, so that the waiting spends no test's quota.
            let forwarded = format!("203.0.{}.{}", attempt >> 8 & 255, attempt & 255);
            let headers = [("x-forwarded-for", forwarded.as_str())];
            let (status, _, body) = http(&self.address, "GET", &format!("{BASE_PATH}/sandbox/fixtures"), &headers, "");
            let parsed: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            if status == 200 && parsed["count"].as_u64() == Some(28) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `http://ADDRESS` of the public listener.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A request to the public listener, under the base path.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        http(&self.address, method, &format!("{BASE_PATH}{path}"), headers, body)
    }

    /// A new sandbox key from `POST /sandbox/register`.
    pub fn register_sandbox_key(&self) -> String {
        register_sandbox_key(&self.address)
    }

    /// The process id, to read its resource use.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.terminate()
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        let killed = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().expect("kill");
        assert!(killed.success());
        self.child.wait().expect("exit")
    }
}

impl Drop for RunningService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every scope of the specification.
pub const ALL_SCOPES: [&str; 6] =
    ["rights:read", "rights:verify", "licenses:read", "metadata:read", "bulk:read", "evidence:read"];

/// Every notification of the key's audience, oldest first, from the pull
/// feed at `address` (a replica or a balancer).
pub fn every_notification(address: &str, key: &str) -> Vec<serde_json::Value> {
    let mut items = Vec::new();
    let mut since = String::new();
    loop {
        let path = format!("{BASE_PATH}/notifications?limit=1000{since}");
        let (status, _, body) = http(address, "GET", &path, &[("x-api-key", key)], "");
        assert_eq!(status, 200, "{body}");
        let page: serde_json::Value = serde_json::from_str(&body).expect("a page");
        items.extend(page["items"].as_array().expect("items").iter().cloned());
        if page["caughtUp"] == true {
            return items;
        }
        since = format!("&since={}", page["next"].as_str().expect("next"));
    }
}

/// Issues a production key through the operator command, on the store `data`.
pub fn issue_production_key(data: &(impl TestStore + ?Sized), scopes: &[&str], rate_limit: u32) -> String {
    issue_production_key_with_id(data, scopes, rate_limit).0
}

/// [`issue_production_key`], with the key's id (from what the command tells the operator).
pub fn issue_production_key_with_id(
    data: &(impl TestStore + ?Sized),
    scopes: &[&str],
    rate_limit: u32,
) -> (String, String) {
    let mut command = Command::new(binary("query-api"));
    command.arg("keys");
    data.add_store_flags(&mut command);
    let output = command
        .args(["issue", "--partner", "End-to-end tests", "--rate-limit", &rate_limit.to_string()])
        .args(["--scopes", &scopes.join(",")])
        .env("RUST_LOG", "warn")
        .output()
        .expect("query-api keys issue runs");
    let told = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{told}");
    let key = String::from_utf8(output.stdout).expect("utf-8").lines().next().expect("the key").trim().to_owned();
    let key_id = told
        .split_whitespace()
        .skip_while(|word| *word != "issued")
        .nth(1)
        .unwrap_or_else(|| panic!("no key id in {told:?}"))
        .to_owned();
    (key, key_id)
}

/// Revokes a production key through the operator command, on the store `data`.
pub fn revoke_production_key(data: &(impl TestStore + ?Sized), key_id: &str) {
    let mut command = Command::new(binary("query-api"));
    command.arg("keys");
    data.add_store_flags(&mut command);
    let output = command.args(["revoke", key_id]).env("RUST_LOG", "warn").output().expect("query-api keys revoke runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// The value of the first series on the `/metrics` of the admin listener `admin`
/// whose line starts with `series` (a name, or a name with its labels); 0
/// when there is none yet.
pub fn metric(admin: &str, series: &str) -> u64 {
    let (_, _, metrics) = http(admin, "GET", "/metrics", &[], "");
    let line = metrics.lines().find(|line| line.starts_with(series)).unwrap_or_default();
    line.rsplit(' ').next().and_then(|value| value.parse().ok()).unwrap_or(0)
}

/// Events the projector whose admin listener is `admin` has committed with
/// `outcome` (`applied`, `skipped_duplicate` or `parked`).
pub fn events_committed(admin: &str, outcome: &str) -> u64 {
    metric(admin, &format!("lcc_projector_events_total{{outcome=\"{outcome}\"}} "))
}

/// Events committed by the projector whose admin listener is `admin`, whatever their outcome.
pub fn committed_events(admin: &str) -> u64 {
    ["applied", "skipped_duplicate", "parked"].iter().map(|outcome| events_committed(admin, outcome)).sum()
}

/// Follows the change feed until a page says it is caught up: over the CQL
/// store, a change is listed (in the feed and by OAI-PMH) only once it has
/// settled, some seconds after its commit.
pub fn wait_until_the_feed_settles(address: &str, key: &str) {
    let (started, mut since) = (Instant::now(), String::new());
    loop {
        let path = format!("{BASE_PATH}/bulk/changes?limit=1000{since}");
        let (status, _, body) = http(address, "GET", &path, &[("x-api-key", key)], "");
        assert_eq!(status, 200, "{body}");
        let page: serde_json::Value = serde_json::from_str(&body).expect("a feed page");
        if page["caughtUp"] == true {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the feed did not settle");
        if page["items"].as_array().is_some_and(Vec::is_empty) {
            std::thread::sleep(Duration::from_millis(100));
        }
        since = format!("&since={}", page["next"].as_str().expect("a cursor"));
    }
}

/// A new sandbox key from `POST /sandbox/register` of the service at `address`.
pub fn register_sandbox_key(address: &str) -> String {
    let (status, _, body) = http(
        address,
        "POST",
        &format!("{BASE_PATH}/sandbox/register"),
        &[("content-type", "application/json")],
        r#"{"email":"me@example.org"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let registered: serde_json::Value = serde_json::from_str(&body).expect("json");
    registered["apiKey"].as_str().expect("key").to_owned()
}
