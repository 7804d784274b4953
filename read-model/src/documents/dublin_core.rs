//! Dublin Core metadata: the fifteen elements of the Dublin Core Metadata
//! Element Set, each a list because every element may repeat.

use serde::{Deserialize, Serialize};

/// Served by `GET /rights/{lccId}/metadata` (JSON, or `oai_dc` XML).
///
/// An element with nothing known is an empty list, so that every response has
/// the same fifteen keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DublinCoreRecord {
    pub lcc_id: String,
    pub title: Vec<String>,
    pub creator: Vec<String>,
    pub subject: Vec<String>,
    pub description: Vec<String>,
    pub publisher: Vec<String>,
    pub contributor: Vec<String>,
    pub date: Vec<String>,
    #[serde(rename = "type")]
    pub work_type: Vec<String>,
    pub format: Vec<String>,
    pub identifier: Vec<String>,
    pub source: Vec<String>,
    pub language: Vec<String>,
    pub relation: Vec<String>,
    pub coverage: Vec<String>,
    pub rights: Vec<String>,
}

impl DublinCoreRecord {
    /// The fifteen elements with their Dublin Core names, in the standard order.
    pub fn elements(&self) -> [(&'static str, &[String]); 15] {
        [
            ("title", &self.title),
            ("creator", &self.creator),
            ("subject", &self.subject),
            ("description", &self.description),
            ("publisher", &self.publisher),
            ("contributor", &self.contributor),
            ("date", &self.date),
            ("type", &self.work_type),
            ("format", &self.format),
            ("identifier", &self.identifier),
            ("source", &self.source),
            ("language", &self.language),
            ("relation", &self.relation),
            ("coverage", &self.coverage),
            ("rights", &self.rights),
        ]
    }
}
