//! Clients generated from the OpenAPI document the service serves, as a
//! developer would generate them, calling every operation of the real
//! service with a sandbox key each registers itself:
//! - TypeScript: `openapi-typescript` types for `openapi-fetch`, checked by
//!   `tsc --strict` before the calls run (tests/clients/typescript/);
//! - Python: `openapi-python-client` (tests/clients/python/).
//!
//! Each client prints the operations it called; the test requires every
//! operation the document describes. The generators and the compiler are
//! installed by `scripts/test.sh` (npm and pip, pinned); where one is missing
//! the test fails.

use std::path::Path;
use std::process::{Command, Output};

use end_to_end_tests::{BASE_PATH, RunningService, require_external_tool, workspace_root};

/// Runs a step of a client's generation or calls; it must succeed.
fn run(step: &str, command: &mut Command) -> String {
    let Output { status, stdout, stderr } = command.output().unwrap_or_else(|error| panic!("{step}: {error}"));
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    assert!(status.success(), "{step} failed ({status}):\n{stdout}{}", String::from_utf8_lossy(&stderr));
    stdout
}

/// The operation ids the served document describes, sorted.
fn operation_ids(document: &str) -> Vec<String> {
    let document: serde_json::Value = serde_json::from_str(document).expect("the document parses");
    let mut ids: Vec<String> = document["paths"]
        .as_object()
        .expect("paths")
        .values()
        .flat_map(|path| path.as_object().expect("a path item").values())
        .filter_map(|operation| operation["operationId"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

/// The operations a client's last line names as called, sorted.
fn called_operations(output: &str, client: &str) -> Vec<String> {
    let line = output.lines().last().unwrap_or_default();
    let prefix = format!("{client} client: ");
    let named = line.strip_prefix(&prefix).and_then(|rest| rest.split_once("operations called: "));
    let (_, operations) = named.unwrap_or_else(|| panic!("the {client} client did not name its calls:\n{output}"));
    let mut operations: Vec<String> = operations.split_whitespace().map(str::to_owned).collect();
    operations.sort();
    operations
}

/// Generates the TypeScript types from `document`, type-checks the calls
/// against them and runs them; returns what the calls printed.
fn typescript_client(document: &Path, base_url: &str, directory: &Path) -> String {
    let sources = workspace_root().join("tests/clients/typescript");
    for file in ["package.json", "tsconfig.json", "call_every_operation.ts"] {
        std::fs::copy(sources.join(file), directory.join(file)).expect("copy the client's sources");
    }
    std::os::unix::fs::symlink(sources.join("node_modules"), directory.join("node_modules"))
        .expect("link the packages");
    let node = |step: &str, arguments: &[&str]| run(step, Command::new("node").current_dir(directory).args(arguments));
    let schema = directory.join("schema.d.ts");
    node(
        "openapi-typescript",
        &["node_modules/.bin/openapi-typescript", &document.to_string_lossy(), "-o", &schema.to_string_lossy()],
    );
    node("tsc --strict", &["node_modules/.bin/tsc", "-p", "."]);
    node("the TypeScript client's calls", &["out/call_every_operation.js", base_url])
}

/// Generates the Python client from `document` and runs its calls; returns what they printed.
fn python_client(document: &Path, base_url: &str, directory: &Path) -> String {
    let sources = workspace_root().join("tests/clients/python");
    run(
        "openapi-python-client",
        Command::new("openapi-python-client")
            .arg("generate")
            .arg("--path")
            .arg(document)
            .arg("--output-path")
            .arg(directory.join("generated_client"))
            .args(["--meta", "none", "--config"])
            .arg(sources.join("generator.yaml")),
    );
    run(
        "the Python client's calls",
        Command::new("python3").arg(sources.join("call_every_operation.py")).arg(directory).arg(base_url),
    )
}

#[test]
fn clients_generated_from_the_served_document_call_every_operation_with_a_sandbox_key() {
    require_external_tool("node");
    require_external_tool("openapi-python-client");
    let service = RunningService::start(&[], |_| {});
    let (status, _, document) = service.request("GET", "/openapi.json", &[], "");
    assert_eq!(status, 200);
    let directory = tempfile::tempdir().expect("tempdir");
    let document_path = directory.path().join("openapi.json");
    std::fs::write(&document_path, &document).expect("write the document");
    let operations = operation_ids(&document);
    let base_url = format!("{}{BASE_PATH}", service.origin());

    let typescript = directory.path().join("typescript");
    std::fs::create_dir(&typescript).expect("a directory for the TypeScript client");
    let output = typescript_client(&document_path, &base_url, &typescript);
    eprint!("{output}");
    assert_eq!(called_operations(&output, "typescript"), operations, "the TypeScript client called every operation");

    let python = directory.path().join("python");
    std::fs::create_dir(&python).expect("a directory for the Python client");
    let output = python_client(&document_path, &base_url, &python);
    eprint!("{output}");
    assert_eq!(called_operations(&output, "python"), operations, "the Python client called every operation");
}
