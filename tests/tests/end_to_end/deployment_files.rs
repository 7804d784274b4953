//! The production-shaped deployment files are what their tools accept, and
//! they name only things that exist: `docker-compose config` on the compose
//! file, hadolint on the Dockerfile, `promtool check config` on the
//! Prometheus configuration, metrics and data sources the dashboard queries,
//! flags and environment variables the programs read, and CQL files the
//! ScyllaDB backend loads. No Docker engine runs here, so no image is built.

use std::path::Path;
use std::process::{Command, Output};

use end_to_end_tests::{binary, require_external_tool, workspace_root};

fn read(relative: &str) -> String {
    std::fs::read_to_string(workspace_root().join(relative)).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn docker_compose_accepts_the_compose_file_and_every_mounted_file_exists() {
    let compose = read("docker-compose.yml");
    for mounted in compose.split_whitespace().filter_map(|word| word.strip_prefix("- ./").or(word.strip_prefix("./"))) {
        let path = mounted.split(':').next().unwrap_or(mounted);
        assert!(workspace_root().join(path).exists(), "the compose file mounts {path}, which does not exist");
    }
    for service in ["kafka:", "kafka-topics:", "scylla:", "projector:", "query-api-1:", "query-api-2:", "prometheus:"] {
        assert!(compose.contains(&format!("\n  {service}\n")), "no service {service}");
    }
    require_external_tool("docker-compose");
    let output = Command::new("docker-compose")
        .args(["--file", "docker-compose.yml", "config", "--quiet"])
        .current_dir(workspace_root())
        .env("LCC_SANDBOX_KEY_SECRET", "checked-by-the-test")
        .output()
        .expect("docker-compose runs");
    assert_success("docker-compose config", &output);
}

#[test]
fn every_setting_the_compose_file_gives_a_program_is_one_it_reads() {
    let compose = read("docker-compose.yml");
    let help = |program: &str, subcommand: &str| {
        let output = Command::new(binary(program)).args([subcommand, "--help"]).output().expect("the program runs");
        assert_success(&format!("{program} {subcommand} --help"), &output);
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let known = format!("{}{}", help("projector", "run"), help("query-api", "serve"));
    let variables: Vec<&str> = compose
        .split(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
        .filter(|word| word.starts_with("LCC_"))
        .collect();
    assert!(variables.len() >= 8, "{variables:?}");
    for variable in variables {
        // A secret's help shows no value: `[env: NAME]` instead of `[env: NAME=value]`.
        let read = known.contains(&format!("[env: {variable}=")) || known.contains(&format!("[env: {variable}]"));
        assert!(read, "no program reads {variable}");
    }
    for flag in ["--source", "--admin-listen", "--listen"] {
        assert!(known.contains(flag), "no program takes {flag}");
    }
}

#[test]
fn hadolint_accepts_the_dockerfile_and_the_runtime_image_is_small_and_unprivileged() {
    let dockerfile = read("Dockerfile");
    let stages: Vec<&str> = dockerfile.lines().filter(|line| line.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 2, "a build stage and a runtime stage: {stages:?}");
    assert!(stages[1].contains("-slim"), "the runtime image is a slim one: {}", stages[1]);
    let runtime = dockerfile.split(stages[1]).nth(1).expect("runtime stage");
    assert!(runtime.contains("\nUSER 10001"), "the runtime stage runs as a non-root user");
    assert!(!runtime.contains("cargo"), "the runtime stage carries no toolchain");
    require_external_tool("hadolint");
    let output =
        Command::new("hadolint").arg("Dockerfile").current_dir(workspace_root()).output().expect("hadolint runs");
    assert_success("hadolint", &output);
}

#[test]
fn promtool_accepts_the_prometheus_configuration_with_its_alert_rules() {
    let configuration = read("ops/prometheus/prometheus.yml");
    for job in ["rights-projector", "rights-query-api"] {
        assert!(configuration.contains(&format!("job_name: {job}")), "no scrape job {job}");
    }
    assert!(read("ops/prometheus/alerts.yml").contains("job=\"rights-projector\""));
    require_external_tool("promtool");
    // The file names the rules by their path inside the container; check it beside a copy of them.
    let directory = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        directory.path().join("prometheus.yml"),
        configuration.replace("/etc/prometheus/alerts.yml", "alerts.yml"),
    )
    .expect("write");
    std::fs::copy(workspace_root().join("ops/prometheus/alerts.yml"), directory.path().join("alerts.yml"))
        .expect("copy");
    let output = Command::new("promtool")
        .args(["check", "config", "prometheus.yml"])
        .current_dir(directory.path())
        .output()
        .expect("promtool runs");
    assert_success("promtool check config", &output);
}

#[test]
fn the_dashboard_queries_only_metrics_the_programs_register_through_the_provisioned_source() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("ops/grafana/dashboards/rights-service.json")).expect("the dashboard is JSON");
    let registered = format!("{}{}", read("projector/src/metrics.rs"), read("query-api/src/metrics/mod.rs"));
    let datasources = read("ops/grafana/provisioning/datasources/prometheus.yml");
    let mut queried = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        if panel["type"] == "row" {
            continue;
        }
        let uid = panel["datasource"]["uid"].as_str().expect("a data source");
        assert!(datasources.contains(&format!("uid: {uid}")), "panel {} uses data source {uid}", panel["title"]);
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {} queries nothing", panel["title"]);
        for target in targets {
            let expression = target["expr"].as_str().expect("expr");
            for word in expression.split(|character: char| !(character.is_ascii_alphanumeric() || character == '_')) {
                if let Some(metric) = word.strip_prefix("lcc_") {
                    let family = metric.trim_end_matches("_bucket");
                    assert!(registered.contains(&format!("\"lcc_{family}\"")), "no program registers lcc_{family}");
                    queried.push(family.to_owned());
                }
            }
        }
    }
    for needed in [
        "http_requests_total",
        "http_request_duration_seconds",
        "http_rate_limited_total",
        "projector_partition_lag_messages",
        "projector_partition_lag_seconds",
        "projector_events_total",
    ] {
        assert!(queried.iter().any(|family| family == needed), "the dashboard does not show lcc_{needed}");
    }
}

#[test]
fn every_cql_file_is_one_the_scylla_backend_loads() {
    let directory = workspace_root().join("schemas/cql");
    let loaded = [read_model::scylla::schema::CATALOG_CQL, read_model::scylla::schema::MODEL_CQL];
    let mut files = 0;
    for entry in std::fs::read_dir(&directory).expect("schemas/cql") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(loaded.contains(&text.as_str()), "{} is not what the backend loads", path.display());
        files += 1;
    }
    assert_eq!(files, loaded.len(), "every DDL the backend loads is a file in {}", Path::new("schemas/cql").display());
}
