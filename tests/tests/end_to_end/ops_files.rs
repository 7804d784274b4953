//! The operations files are what Prometheus accepts: `promtool check rules`
//! on the alert rules, and every metric an alert names is one the projector
//! exports.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use end_to_end_tests::{require_external_tool, workspace_root};
use projector::metrics::ProjectorMetrics;
use projector::progress::PartitionBoard;
use projector::source::Partition;
use projector::source::kafka::consumer::ConsumerShared;

#[test]
fn promtool_accepts_the_alert_rules_and_they_name_exported_metrics() {
    let rules = workspace_root().join("ops/prometheus/alerts.yml");
    let text = std::fs::read_to_string(&rules).expect("rules file");
    // A consumer holding one partition with lag, so every partition series exists.
    let board = Arc::new(PartitionBoard::new(Duration::from_secs(60)));
    board.assigned(&[(Partition::new("works", 0), 0)]);
    board.high_watermark(&Partition::new("works", 0), 5);
    let consumer = ConsumerShared::new(board);
    let metrics = ProjectorMetrics::new(read_model::ModelVersion(1), false).expect("metrics").render(Some(&consumer));
    for name in [
        "lcc_projector_partition_lag_messages",
        "lcc_projector_partition_lag_seconds",
        "lcc_projector_partition_stalled",
        "lcc_projector_events_total",
        "lcc_projector_source_up",
    ] {
        assert!(text.contains(name), "the rules do not use {name}");
        assert!(metrics.contains(&format!("# TYPE {name}")), "the projector does not export {name}:\n{metrics}");
    }
    require_external_tool("promtool");
    let output = Command::new("promtool").arg("check").arg("rules").arg(&rules).output().expect("promtool runs");
    assert!(
        output.status.success(),
        "promtool rejected the rules:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
