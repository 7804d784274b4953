//! A page on another origin calls the API from real Chromium: the browser
//! sends its preflight, then the keyed request, and the page's script reads
//! the body, `X-RateLimit-Remaining` and `ETag`, which CORS must expose.

use end_to_end_tests::{BASE_PATH, RunningService, headless_chromium, require_external_tool};
use std::io::{Read, Write};
use std::net::TcpListener;

/// Serves `page` to every request on a port of its own: another origin
/// than the API's. Returns the page's URL.
fn serve_page(page: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/page.html", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                page.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(page.as_bytes());
        }
    });
    url
}

#[test]
fn a_page_on_another_origin_reads_a_keyed_answer_with_its_limit_and_tag() {
    require_external_tool("chromium");
    let service = RunningService::start(&[], |_| {});
    let key = service.register_sandbox_key();
    let api = format!("{}{BASE_PATH}/rights/SANDBOX-LCC-0003", service.origin());
    let page = format!(
        r#"<!doctype html><html><body data-state="loading"><script>
fetch("{api}", {{ headers: {{ "x-api-key": "{key}" }} }})
  .then(async (answer) => {{
    const body = await answer.json();
    document.body.dataset.status = String(answer.status);
    document.body.dataset.remaining = answer.headers.get("x-ratelimit-remaining");
    document.body.dataset.etag = answer.headers.get("etag");
    document.body.dataset.lcc = body.lccId;
    document.body.dataset.state = "done";
  }})
  .catch((error) => {{ document.body.dataset.state = "failed: " + error; }});
</script></body></html>"#
    );
    let url = serve_page(page);
    let profile = tempfile::tempdir().expect("profile");
    let output = headless_chromium(profile.path()).arg("--dump-dom").arg(&url).output().expect("chromium runs");
    assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(dom.contains(r#"data-state="done""#), "the page could not read the answer:\n{dom}");
    assert!(dom.contains(r#"data-status="200""#), "{dom}");
    assert!(dom.contains(r#"data-lcc="SANDBOX-LCC-0003""#), "the body was read:\n{dom}");
    assert!(dom.contains(r#"data-remaining="59""#), "X-RateLimit-Remaining was readable:\n{dom}");
    let etag = dom.split(r#"data-etag="&quot;"#).nth(1).map(|rest| &rest[..32.min(rest.len())]).unwrap_or_default();
    assert!(etag.len() == 32 && etag.chars().all(|digit| digit.is_ascii_hexdigit()), "ETag was readable:\n{dom}");
}
