//! `--check`: the copy compared with the registry's export, page by page of
//! `/bulk/works`, row by row and byte for byte. Works that change while the
//! pages are read may show as differences; a second check after the next
//! run tells those from a copy gone wrong.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::copy::Copy;
use crate::registry::Registry;

/// Rows asked per page: the export's largest page.
const PAGE_LIMIT: u32 = 1_000;
/// Works named per kind of difference in the report.
const NAMED: usize = 10;

/// What the check found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub rows: u64,
    /// Served, absent from the copy.
    pub missing: Vec<String>,
    /// In the copy, not served.
    pub extra: Vec<String>,
    /// In both, with other bytes.
    pub differing: Vec<String>,
}

impl CheckReport {
    pub fn is_equal(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty() && self.differing.is_empty()
    }

    /// The report as the summary line carries it: counts, and the first works of each kind.
    pub fn to_json(&self) -> serde_json::Value {
        let named = |ids: &[String]| ids.iter().take(NAMED).cloned().collect::<Vec<_>>();
        serde_json::json!({
            "rows": self.rows,
            "equal": self.is_equal(),
            "missing": self.missing.len(),
            "extra": self.extra.len(),
            "differing": self.differing.len(),
            "firstMissing": named(&self.missing),
            "firstExtra": named(&self.extra),
            "firstDiffering": named(&self.differing),
        })
    }
}

#[derive(Debug, Deserialize)]
struct BulkPage {
    total: u64,
    items: Vec<Box<RawValue>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RowKey {
    lcc_id: String,
}

/// Compares every row of the copy with every row the registry serves.
pub fn compare(registry: &Registry, copy: &Copy) -> anyhow::Result<CheckReport> {
    let mut copied: BTreeMap<String, String> = BTreeMap::new();
    copy.rows(|lcc_id, row| {
        copied.insert(lcc_id.to_owned(), row.to_owned());
        Ok(())
    })?;
    let mut report = CheckReport { rows: copied.len() as u64, ..CheckReport::default() };
    let mut served = 0u64;
    for page in 1.. {
        let page: BulkPage = registry.json(&format!("/bulk/works?page={page}&limit={PAGE_LIMIT}"))?;
        let count = page.items.len() as u64;
        for item in page.items {
            let key: RowKey = serde_json::from_str(item.get())?;
            match copied.remove(&key.lcc_id) {
                None => report.missing.push(key.lcc_id),
                Some(row) if row != item.get() => report.differing.push(key.lcc_id),
                Some(_) => {}
            }
        }
        served += count;
        if count == 0 || served >= page.total {
            break;
        }
    }
    report.extra = copied.into_keys().collect();
    Ok(report)
}
