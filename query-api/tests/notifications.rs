//! The notification feed over the sandbox fixtures as the projector
//! recorded them: each subject's newest notification names the tags its
//! answers are served with, audiences stay apart, and cursors are checked.

mod support;

use std::collections::BTreeMap;

use axum::http::{StatusCode, header};
use query_api::keys::Scope;
use serde_json::Value;
use support::Service;

fn tag_of(response: &axum::response::Response) -> String {
    response.headers()[header::ETAG].to_str().expect("tag").to_owned()
}

#[tokio::test]
async fn each_subjects_newest_notification_names_the_tags_its_answers_are_served_with() {
    let service = Service::start().await;
    let key = service.sandbox_key();
    let items = service.every_notification(&key, 7).await;
    let mut newest: BTreeMap<String, Value> = BTreeMap::new();
    for item in &items {
        let id = item["id"].as_str().expect("id").to_owned();
        if let Some(earlier) = newest.get(&id) {
            assert!(item["version"].as_u64() > earlier["version"].as_u64(), "versions grow per id: {item}");
        }
        newest.insert(id, item.clone());
    }
    let works = newest.values().filter(|item| item["subject"] == "work").count();
    let licenses = newest.values().filter(|item| item["subject"] == "license").count();
    assert_eq!((works, licenses), (16, 12), "every sandbox work and license is notified");
    let withdrawn: Vec<&str> =
        items.iter().filter(|item| item["withdrawn"] == true).map(|item| item["id"].as_str().expect("id")).collect();
    assert_eq!(withdrawn, ["SANDBOX-LCC-0012"], "the withdrawn fixture, once");
    for (id, item) in &newest {
        let answers: &[(&str, String)] = if item["subject"] == "work" {
            &[
                ("rights", format!("/rights/{id}")),
                ("verification", format!("/rights/{id}/verify")),
                ("metadata", format!("/rights/{id}/metadata")),
                ("provenance", format!("/rights/{id}/provenance")),
                ("evidence", format!("/rights/{id}/evidence")),
            ]
        } else {
            &[("licenseStatus", format!("/licenses/{id}/status"))]
        };
        assert_eq!(item["tags"].as_object().expect("tags").len(), answers.len(), "{item}");
        for (answer, path) in answers {
            let (status, body, response) = service.get(path, Some(&key)).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            assert_eq!(item["tags"][answer], tag_of(&response), "{id}: {answer}");
        }
    }
}

#[tokio::test]
async fn audiences_stay_apart_and_cursors_are_checked() {
    let service = Service::start().await;
    let sandbox = service.sandbox_key();
    let production = service.issue_key(&[Scope::NotificationsRead], 1_000).await;
    let (status, page, _) = service.get("/notifications", Some(&production)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let production_ids: Vec<&str> =
        page["items"].as_array().expect("items").iter().map(|item| item["id"].as_str().expect("id")).collect();
    assert!(!production_ids.is_empty(), "the production works are notified");
    assert!(production_ids.iter().all(|id| !id.starts_with("SANDBOX-")), "a production key sees no sandbox one");

    let (_, sandbox_page, _) = service.get("/notifications?limit=1", Some(&sandbox)).await;
    let sandbox_cursor = sandbox_page["next"].as_str().expect("next");
    let (status, problem, _) = service.get(&format!("/notifications?since={sandbox_cursor}"), Some(&production)).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::BAD_REQUEST, Some("cursor_of_another_audience")));
    let (_, changes, _) = service.get("/bulk/changes?limit=1", Some(&sandbox)).await;
    let change_cursor = changes["next"].as_str().expect("a change feed cursor");
    for bad in [change_cursor, "n1.!!", "n2.MQ"] {
        let (status, problem, _) = service.get(&format!("/notifications?since={bad}"), Some(&sandbox)).await;
        assert_eq!((status, problem["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_cursor")), "{bad}");
    }
    for bad in ["0", "1001", "x"] {
        let (status, _, _) = service.get(&format!("/notifications?limit={bad}"), Some(&sandbox)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "limit={bad}");
    }
    let without_scope = service.issue_key(&[Scope::RightsRead], 1_000).await;
    let (status, problem, _) = service.get("/notifications", Some(&without_scope)).await;
    assert_eq!((status, problem["code"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")));
}

#[tokio::test]
async fn a_key_limited_by_the_operator_reads_the_notifications_of_its_works_or_parties_only() {
    use query_api::keys::notification_filter::NotificationFilter;
    let service = Service::start().await;
    let everything = service.every_notification(&service.full_key, 7).await;
    let issue = async |filter: &str| {
        let filter = NotificationFilter::parse(filter).expect("a filter");
        let scopes = [Scope::NotificationsRead].into_iter().collect();
        let issued = service.app.production_keys.issue_filtered("Filtered Ltd", scopes, 100_000, Some(&filter)).await;
        issued.expect("issue").0
    };
    let ids = |items: &[Value]| -> Vec<String> {
        items.iter().map(|item| item["cursor"].as_str().expect("cursor").to_owned()).collect()
    };

    let works_key = issue("works:LCC-0000000001,LCC-0000000002").await;
    let expected: Vec<Value> = everything
        .iter()
        .filter(|item| {
            item["subject"] == "work"
                && ["LCC-0000000001", "LCC-0000000002"].contains(&item["id"].as_str().expect("id"))
        })
        .cloned()
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(ids(&service.every_notification(&works_key, 7).await), ids(&expected));

    let ipi = everything
        .iter()
        .find_map(|item| item["parties"].as_array().and_then(|parties| parties.first()).and_then(Value::as_str))
        .expect("a notification names a party with an IPI")
        .to_owned();
    let parties_key = issue(&format!("parties:{ipi}")).await;
    let expected: Vec<Value> = everything
        .iter()
        .filter(|item| item["parties"].as_array().expect("parties").iter().any(|party| party == ipi.as_str()))
        .cloned()
        .collect();
    assert!(expected.len() < everything.len(), "the party is not named everywhere");
    assert_eq!(ids(&service.every_notification(&parties_key, 7).await), ids(&expected));
}
