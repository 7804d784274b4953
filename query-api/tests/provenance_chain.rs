//! A rebuild from the same events gives every work the same provenance
//! chain: the heads the evidence packages name are equal, work by work.

mod support;

use std::collections::BTreeMap;

use read_model::{ModelVersion, ModelVersions};
use support::Service;

async fn heads(service: &Service, sandbox_key: &str) -> BTreeMap<String, serde_json::Value> {
    let mut heads = BTreeMap::new();
    let (_, export, _) = service.get("/bulk/works?limit=1000", Some(&service.full_key)).await;
    let (_, sandbox_export, _) = service.get("/bulk/works?limit=1000", Some(sandbox_key)).await;
    for (rows, key) in [(&export, service.full_key.as_str()), (&sandbox_export, sandbox_key)] {
        for row in rows["items"].as_array().expect("items") {
            let lcc_id = row["lccId"].as_str().expect("id");
            let (status, evidence, _) = service.get(&format!("/rights/{lcc_id}/evidence"), Some(key)).await;
            assert_eq!(status, axum::http::StatusCode::OK, "{evidence}");
            heads.insert(lcc_id.to_owned(), evidence["provenanceChain"].clone());
        }
    }
    heads
}

#[tokio::test]
async fn a_rebuild_gives_every_work_the_same_provenance_chain() {
    let service = Service::start().await;
    let sandbox_key = service.sandbox_key();
    let before = heads(&service, &sandbox_key).await;
    assert!(before.len() > 200, "{}", before.len());
    assert!(before.values().all(|head| head["length"].as_u64().is_some_and(|length| length > 0)));
    service.rebuild_into(ModelVersion(2)).await;
    assert_eq!(service.store.active_model_version().await.expect("catalog"), Some(ModelVersion(2)));
    let after = heads(&service, &sandbox_key).await;
    assert_eq!(after, before, "the same events, the same chains");
}
