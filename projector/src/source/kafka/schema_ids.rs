//! Where the writer schemas of Confluent-framed values are found by id: a
//! schema registry's REST API (`GET {url}/schemas/ids/{id}`) or a local
//! JSON map of ids to schema files.
//!
//! It only fetches schema text; `wire` parses, caches and resolves it. A
//! lookup that can never succeed (no such id, not Avro) is told apart from
//! one that may succeed later (the registry does not answer), which the
//! caller retries instead of parking the event.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where Confluent schema ids are looked up.
#[derive(Debug, Clone)]
pub enum SchemaIds {
    /// None configured: Confluent-framed values are parked.
    Unavailable,
    /// A schema registry's base URL (`GET {url}/schemas/ids/{id}`).
    Registry(String),
    /// A JSON file mapping ids to schema files (paths relative to the map).
    LocalMap(PathBuf),
}

/// A registry that cannot answer now, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

/// [`SchemaIds`] with the HTTP client a registry needs.
#[derive(Debug)]
pub struct SchemaIdLookup {
    ids: SchemaIds,
    http: Option<ureq::Agent>,
}

impl SchemaIdLookup {
    pub fn new(ids: SchemaIds) -> SchemaIdLookup {
        let http = matches!(ids, SchemaIds::Registry(_)).then(|| {
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(10)))
                .http_status_as_error(false)
                .build()
                .new_agent()
        });
        SchemaIdLookup { ids, http }
    }

    /// The schema text of `id`: `Ok(Err(reason))` when it can never be
    /// found, `Err` when the registry cannot answer now.
    pub fn schema_text(&self, id: u32) -> Result<Result<String, String>, Unavailable> {
        match &self.ids {
            SchemaIds::Unavailable => Ok(Err(format!("schema id {id}: no schema registry or id map is configured"))),
            SchemaIds::LocalMap(path) => Ok(local_map_schema(path, id)),
            SchemaIds::Registry(url) => {
                let agent = self.http.as_ref().ok_or_else(|| Unavailable("no HTTP client".into()))?;
                registry_schema(agent, url, id)
            }
        }
    }
}

/// The schema text of `id` in a local id map: `{"ID": "schema file", ...}`.
fn local_map_schema(path: &Path, id: u32) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read the schema id map: {error}"))?;
    let map: HashMap<String, String> = serde_json::from_str(&text)
        .map_err(|error| format!("the schema id map is not a JSON object of strings: {error}"))?;
    let file = map.get(&id.to_string()).ok_or_else(|| format!("schema id {id} is not in the local id map"))?;
    let file = path.parent().unwrap_or(Path::new(".")).join(file);
    std::fs::read_to_string(&file).map_err(|error| format!("schema id {id}: cannot read {}: {error}", file.display()))
}

/// Fetches the schema text of `id`: `Ok(Err(..))` when the registry says it
/// does not exist or is not Avro, `Err(Unavailable)` when it cannot answer.
fn registry_schema(agent: &ureq::Agent, url: &str, id: u32) -> Result<Result<String, String>, Unavailable> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct SchemaById {
        schema: String,
        schema_type: Option<String>,
    }
    let address = format!("{}/schemas/ids/{id}", url.trim_end_matches('/'));
    let unavailable = |reason: String| Unavailable(format!("{address}: {reason}"));
    let mut response = agent.get(&address).call().map_err(|error| unavailable(error.to_string()))?;
    let status = response.status().as_u16();
    if status == 404 {
        return Ok(Err(format!("schema id {id} is not in the schema registry")));
    }
    if status != 200 {
        return Err(unavailable(format!("status {status}")));
    }
    let text =
        response.body_mut().read_to_string().map_err(|error| unavailable(format!("unreadable answer: {error}")))?;
    let body: SchemaById =
        serde_json::from_str(&text).map_err(|error| unavailable(format!("unexpected answer: {error}")))?;
    if body.schema_type.as_deref().is_some_and(|kind| kind != "AVRO") {
        return Ok(Err(format!("schema id {id} is not an Avro schema")));
    }
    Ok(Ok(body.schema))
}
