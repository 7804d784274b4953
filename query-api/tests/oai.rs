//! OAI-PMH through the router: keyless production harvesting, the key's
//! audience with a key, paging by resumption token, and the protocol's own
//! errors for what a harvester gets wrong.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use support::{BASE, Service, text};

async fn oai(service: &Service, query: &str, key: Option<&str>) -> String {
    let mut request = Request::get(format!("{BASE}/oai?{query}"));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = service.send(request.body(Body::empty()).expect("request")).await;
    assert_eq!(response.status(), StatusCode::OK, "OAI-PMH answers errors with 200 too");
    assert_eq!(response.headers()[header::CONTENT_TYPE], "text/xml; charset=utf-8");
    text(response).await
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    text.split(start).skip(1).filter_map(|part| part.split_once(end).map(|(inside, _)| inside)).collect()
}

fn error_code(answer: &str) -> Option<&str> {
    between(answer, "<error code=\"", "\"").into_iter().next()
}

#[tokio::test]
async fn a_keyless_harvest_lists_every_published_production_work_across_resumption_tokens() {
    let service = Service::start().await;
    let identify = oai(&service, "verb=Identify", None).await;
    for expected in [
        "<protocolVersion>2.0</protocolVersion>",
        "<deletedRecord>transient</deletedRecord>",
        "<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>",
        "<baseURL>https://api.example.org/api/v1/public/v1/oai</baseURL>",
        "<repositoryIdentifier>api.example.org</repositoryIdentifier>",
    ] {
        assert!(identify.contains(expected), "{expected} in {identify}");
    }

    // Withdrawn works are listed too, as deleted records, when a batch
    // rendered them published before their withdrawal: whether one did
    // depends on where the projection's batches were cut.
    let (mut identifiers, mut deleted) = (Vec::new(), Vec::new());
    let mut query = "verb=ListIdentifiers&metadataPrefix=oai_dc".to_owned();
    let mut pages = 0;
    loop {
        let answer = oai(&service, &query, None).await;
        pages += 1;
        assert_eq!(error_code(&answer), None, "{answer}");
        for header in between(&answer, "<header", "</header>") {
            let identifier = between(header, "<identifier>", "</identifier>").concat();
            if header.starts_with(" status=\"deleted\">") {
                deleted.push(identifier)
            } else {
                identifiers.push(identifier)
            }
        }
        match between(&answer, "<resumptionToken>", "</resumptionToken>").first() {
            Some(token) => query = format!("verb=ListIdentifiers&resumptionToken={}", urlencode(token)),
            None => {
                assert!(pages == 1 || answer.contains("<resumptionToken/>"), "the last page of a resumed list");
                break;
            }
        }
    }
    assert!(pages > 1, "300 works take more than one page of 200");
    let (_, export, _) = service.get("/bulk/works?limit=1000", Some(&service.full_key)).await;
    let mut expected: Vec<String> = export["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|row| format!("oai:api.example.org:{}", row["lccId"].as_str().expect("id")))
        .collect();
    expected.sort();
    identifiers.sort();
    assert_eq!(identifiers, expected, "every published production work, once");
    for identifier in &deleted {
        let id = identifier.rsplit(':').next().expect("id");
        let (status, work, _) = service.get(&format!("/rights/{id}"), Some(&service.full_key)).await;
        assert_eq!((status, work["status"].as_str()), (StatusCode::OK, Some("withdrawn")), "{identifier}");
    }

    let record = oai(&service, &format!("verb=GetRecord&metadataPrefix=oai_dc&identifier={}", expected[0]), None).await;
    assert!(record.contains("<oai_dc:dc") && record.contains("<dc:title>"), "{record}");
    let records = oai(&service, "verb=ListRecords&metadataPrefix=oai_dc", None).await;
    assert_eq!(between(&records, "<record>", "</record>").len(), 200);
    assert!(!between(&records, "<dc:identifier>", "</dc:identifier>").is_empty());
}

#[tokio::test]
async fn audiences_stay_apart_and_mistakes_get_the_protocols_errors() {
    let service = Service::start().await;
    let sandbox_record = "verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:api.example.org:SANDBOX-LCC-0003";
    assert_eq!(error_code(&oai(&service, sandbox_record, None).await), Some("idDoesNotExist"), "keyless is production");
    let sandbox_key = service.sandbox_key();
    let found = oai(&service, sandbox_record, Some(&sandbox_key)).await;
    assert_eq!(error_code(&found), None, "{found}");
    let production_record =
        format!("verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:api.example.org:{}", service.production_work());
    assert_eq!(error_code(&oai(&service, &production_record, Some(&sandbox_key)).await), Some("idDoesNotExist"));

    let sandbox_list = oai(&service, "verb=ListIdentifiers&metadataPrefix=oai_dc", Some(&sandbox_key)).await;
    assert_eq!(between(&sandbox_list, "<identifier>", "</identifier>").len(), 14);
    assert!(between(&sandbox_list, "<identifier>", "</identifier>").iter().all(|id| id.contains(":SANDBOX-")));

    let production_list = oai(&service, "verb=ListIdentifiers&metadataPrefix=oai_dc", None).await;
    let token = between(&production_list, "<resumptionToken>", "</resumptionToken>")[0].to_owned();
    let resumed = format!("verb=ListIdentifiers&resumptionToken={}", urlencode(&token));
    assert_eq!(error_code(&oai(&service, &resumed, Some(&sandbox_key)).await), Some("badResumptionToken"));

    for (query, code) in [
        ("", "badVerb"),
        ("verb=Harvest", "badVerb"),
        ("verb=Identify&from=2020-01-01", "badArgument"),
        ("verb=ListRecords&metadataPrefix=marc21", "cannotDisseminateFormat"),
        ("verb=ListRecords&metadataPrefix=oai_dc&from=2999-01-01", "noRecordsMatch"),
        ("verb=ListRecords&resumptionToken=not-a-token", "badResumptionToken"),
        ("verb=ListSets", "noSetHierarchy"),
        ("verb=GetRecord&metadataPrefix=oai_dc&identifier=LCC-0000000001", "idDoesNotExist"),
        ("verb=ListMetadataFormats&identifier=oai:api.example.org:LCC-none", "idDoesNotExist"),
    ] {
        let answer = oai(&service, query, None).await;
        assert_eq!(error_code(&answer), Some(code), "{query}: {answer}");
    }
    let formats = oai(&service, "verb=ListMetadataFormats", None).await;
    assert!(formats.contains("<metadataPrefix>oai_dc</metadataPrefix>"), "{formats}");

    let posted = service
        .send(
            Request::post(format!("{BASE}/oai"))
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from("verb=Identify"))
                .expect("request"),
        )
        .await;
    assert_eq!(posted.status(), StatusCode::OK);
    assert!(text(posted).await.contains("<Identify>"));
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => char::from(byte).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
