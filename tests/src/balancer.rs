//! The shipped balancer configuration (`ops/nginx/api.conf`) in a real
//! nginx in front of real `query-api serve` replicas, for the tests that
//! check what a client sees through it.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::{BASE_PATH, binary, http, spawn_listening, workspace_root};

/// A `query-api serve` replica on loopback ports.
#[derive(Debug)]
pub struct Replica {
    child: Child,
    pub public: String,
    pub admin: String,
}

impl Replica {
    /// A replica serving `data`, limiting every key and address to `limit` requests a minute.
    pub fn start(data: &Path, limit: usize) -> Replica {
        let mut command = Command::new(binary("query-api"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .args(["--snapshot-interval-minutes", "0", "--trust-x-forwarded-for"])
            .args(["--default-rate-limit", &limit.to_string()])
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
    pub fn answered(&self) -> u64 {
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
#[derive(Debug)]
pub struct Balancer {
    child: Child,
    pub address: String,
}

impl Balancer {
    pub fn start(directory: &Path, replicas: [&str; 2]) -> Balancer {
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
    pub fn get(&self, path: &str, key: Option<&str>) -> (u16, Option<usize>) {
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
