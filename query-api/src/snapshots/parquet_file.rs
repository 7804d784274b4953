//! A Parquet file of bulk rows with a typed schema (not one JSON column), so
//! that DuckDB, pandas and Polars read it directly: strings, a `DATE`, a
//! `TIMESTAMP(MILLIS, UTC)`, a boolean, and lists in the standard three-level
//! layout. Rows are buffered and written a row group at a time, so memory is
//! bounded by [`ROWS_PER_GROUP`], never by the file.
//!
//! It reads rows as the export serves them (JSON) and must not know where
//! the file goes or how it is named.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use read_model::calendar::{Date, Timestamp};
use serde::Deserialize;

/// Rows per row group: what the writer holds in memory at most.
pub const ROWS_PER_GROUP: usize = 16_384;

/// The file's schema, one column per field of `BulkRow`, in its order.
pub const SCHEMA: &str = "message bulk_row {
  required binary lccId (STRING);
  required binary title (STRING);
  optional binary iswc (STRING);
  required group isrcs (LIST) {
    repeated group list {
      required binary element (STRING);
    }
  }
  required binary workType (STRING);
  optional binary language (STRING);
  optional int32 createdOn (DATE);
  required int64 publishedAt (TIMESTAMP(MILLIS,true));
  required group creators (LIST) {
    repeated group list {
      required group element {
        optional binary name (STRING);
        required binary role (STRING);
      }
    }
  }
  required boolean openForLicensing;
}";

/// A bulk row as the file stores it. Unknown fields are refused, so a field
/// added to `BulkRow` without a column here fails the snapshot loudly
/// instead of vanishing from the file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Row {
    lcc_id: String,
    title: String,
    iswc: Option<String>,
    isrcs: Vec<String>,
    work_type: String,
    language: Option<String>,
    created_on: Option<Date>,
    published_at: Timestamp,
    creators: Vec<Creator>,
    open_for_licensing: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Creator {
    name: Option<String>,
    role: String,
}

/// Why a Parquet file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ParquetFileError {
    #[error("a bulk row does not fit the Parquet schema: {0}")]
    Row(#[from] serde_json::Error),
    #[error("the Parquet writer failed: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// Writes bulk rows into one Parquet file.
pub struct ParquetRows<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    pending: Vec<Row>,
}

impl<W: Write + Send> std::fmt::Debug for ParquetRows<W> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("ParquetRows").field("pending", &self.pending.len()).finish_non_exhaustive()
    }
}

impl<W: Write + Send> ParquetRows<W> {
    pub fn new(sink: W) -> Result<ParquetRows<W>, ParquetFileError> {
        let schema = Arc::new(parse_message_type(SCHEMA)?);
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by("lcc rights-service snapshot".to_owned())
            .build();
        let writer = SerializedFileWriter::new(sink, schema, Arc::new(properties))?;
        Ok(ParquetRows { writer, pending: Vec::with_capacity(ROWS_PER_GROUP) })
    }

    /// Adds one row, given as the export serves it.
    pub fn push(&mut self, row_json: &[u8]) -> Result<(), ParquetFileError> {
        self.pending.push(serde_json::from_slice(row_json)?);
        if self.pending.len() == ROWS_PER_GROUP {
            self.write_group()?;
        }
        Ok(())
    }

    /// Writes what is buffered and the footer, and returns the sink.
    pub fn finish(mut self) -> Result<W, ParquetFileError> {
        if !self.pending.is_empty() {
            self.write_group()?;
        }
        Ok(self.writer.into_inner()?)
    }

    fn write_group(&mut self) -> Result<(), ParquetFileError> {
        let rows = std::mem::take(&mut self.pending);
        let mut group = self.writer.next_row_group()?;
        let mut column = 0;
        while let Some(mut writer) = group.next_column()? {
            match column {
                0 => write_required_strings(writer.typed::<ByteArrayType>(), rows.iter().map(|row| &row.lcc_id))?,
                1 => write_required_strings(writer.typed::<ByteArrayType>(), rows.iter().map(|row| &row.title))?,
                2 => write_optional_strings(writer.typed::<ByteArrayType>(), rows.iter().map(|row| row.iswc.as_ref()))?,
                3 => {
                    let lists = rows.iter().map(|row| row.isrcs.iter().map(Some).collect::<Vec<_>>());
                    write_list_strings(writer.typed::<ByteArrayType>(), lists, 1)?;
                }
                4 => write_required_strings(writer.typed::<ByteArrayType>(), rows.iter().map(|row| &row.work_type))?,
                5 => write_optional_strings(
                    writer.typed::<ByteArrayType>(),
                    rows.iter().map(|row| row.language.as_ref()),
                )?,
                6 => {
                    let values: Vec<i32> = rows.iter().filter_map(|row| row.created_on.map(|date| date.0)).collect();
                    let levels: Vec<i16> = rows.iter().map(|row| i16::from(row.created_on.is_some())).collect();
                    writer.typed::<Int32Type>().write_batch(&values, Some(&levels), None)?;
                }
                7 => {
                    let values: Vec<i64> = rows.iter().map(|row| row.published_at.0).collect();
                    writer.typed::<Int64Type>().write_batch(&values, None, None)?;
                }
                8 => {
                    let lists =
                        rows.iter().map(|row| row.creators.iter().map(|creator| creator.name.as_ref()).collect());
                    write_list_strings(writer.typed::<ByteArrayType>(), lists, 2)?;
                }
                9 => {
                    let lists = rows.iter().map(|row| row.creators.iter().map(|creator| Some(&creator.role)).collect());
                    write_list_strings(writer.typed::<ByteArrayType>(), lists, 1)?;
                }
                _ => {
                    let values: Vec<bool> = rows.iter().map(|row| row.open_for_licensing).collect();
                    writer.typed::<BoolType>().write_batch(&values, None, None)?;
                }
            }
            writer.close()?;
            column += 1;
        }
        group.close()?;
        Ok(())
    }
}

type StringColumn<'a> = parquet::column::writer::ColumnWriterImpl<'a, ByteArrayType>;

fn bytes(text: &str) -> ByteArray {
    ByteArray::from(text.as_bytes().to_vec())
}

fn write_required_strings<'r>(
    column: &mut StringColumn<'_>,
    values: impl Iterator<Item = &'r String>,
) -> Result<(), ParquetFileError> {
    let values: Vec<ByteArray> = values.map(|text| bytes(text)).collect();
    column.write_batch(&values, None, None)?;
    Ok(())
}

fn write_optional_strings<'r>(
    column: &mut StringColumn<'_>,
    values: impl Iterator<Item = Option<&'r String>>,
) -> Result<(), ParquetFileError> {
    let mut present = Vec::new();
    let mut levels = Vec::new();
    for value in values {
        levels.push(i16::from(value.is_some()));
        present.extend(value.map(|text| bytes(text)));
    }
    column.write_batch(&present, Some(&levels), None)?;
    Ok(())
}

/// Writes one string leaf of a list column. Each row is its list's elements
/// (`None` for an element whose optional leaf is null); `present_level` is
/// the definition level of a present leaf (1 for a required leaf in a list,
/// 2 for an optional one). An empty list is one entry at level 0.
fn write_list_strings<'r>(
    column: &mut StringColumn<'_>,
    rows: impl Iterator<Item = Vec<Option<&'r String>>>,
    present_level: i16,
) -> Result<(), ParquetFileError> {
    let (mut values, mut definitions, mut repetitions) = (Vec::new(), Vec::new(), Vec::new());
    for elements in rows {
        if elements.is_empty() {
            definitions.push(0);
            repetitions.push(0);
        }
        for (index, element) in elements.into_iter().enumerate() {
            repetitions.push(i16::from(index > 0));
            match element {
                Some(text) => {
                    definitions.push(present_level);
                    values.push(bytes(text));
                }
                None => definitions.push(present_level - 1),
            }
        }
    }
    column.write_batch(&values, Some(&definitions), Some(&repetitions))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::{Field, ListAccessor, Row, RowAccessor};
    use read_model::documents::{BulkCreator, BulkRow, CreatorRole, WorkType};

    use super::{Date, ParquetFileError, ParquetRows, ROWS_PER_GROUP, Timestamp};

    fn row(index: usize) -> BulkRow {
        BulkRow {
            lcc_id: format!("LCC-{index:04}"),
            title: format!("Title {index}"),
            iswc: index.is_multiple_of(2).then(|| "T0345246801".to_owned()),
            isrcs: (0..index % 3).map(|number| format!("GBAYE690050{number}")).collect(),
            work_type: WorkType::MusicalWork,
            language: None,
            created_on: Date::from_ymd(2001, 2, 3),
            published_at: Timestamp(1_700_000_000_000 + index as i64),
            creators: (0..index % 4)
                .map(|number| BulkCreator {
                    name: (number != 1).then(|| format!("Name {number}")),
                    role: CreatorRole::Composer,
                })
                .collect(),
            open_for_licensing: index.is_multiple_of(5),
        }
    }

    #[test]
    fn every_field_of_a_bulk_row_has_its_column_and_every_row_reads_back() {
        let mut file = ParquetRows::new(Vec::new()).expect("writer");
        let rows: Vec<BulkRow> = (0..ROWS_PER_GROUP + 10).map(row).collect();
        for row in &rows {
            file.push(&serde_json::to_vec(row).expect("json")).expect("push");
        }
        let bytes = file.finish().expect("finish");
        let reader = SerializedFileReader::new(axum::body::Bytes::from(bytes)).expect("a Parquet file");
        assert_eq!(reader.metadata().num_row_groups(), 2);
        let read: Vec<Row> = reader.get_row_iter(None).expect("rows").map(|row| row.expect("row")).collect();
        assert_eq!(read.len(), rows.len());
        let fields: Vec<String> = reader
            .metadata()
            .file_metadata()
            .schema()
            .get_fields()
            .iter()
            .map(|field| field.name().to_owned())
            .collect();
        let text = serde_json::to_string(&rows[6]).expect("json");
        let mut keys: Vec<String> = serde_json::from_str::<serde_json::Value>(&text)
            .expect("json")
            .as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect();
        keys.sort_by_key(|key| text.find(&format!("\"{key}\":")));
        assert_eq!(fields, keys, "one column per field of BulkRow, in its order");
        let sixth = &read[6];
        assert_eq!(sixth.get_string(0).expect("lccId"), "LCC-0006");
        assert_eq!(sixth.get_string(2).expect("iswc"), "T0345246801");
        assert_eq!(sixth.get_list(3).expect("isrcs").len(), 0);
        assert_eq!(sixth.get_string(4).expect("workType"), "musical_work");
        let created_on = sixth.get_column_iter().nth(6).map(|(_, field)| field.clone());
        assert_eq!(created_on, Some(Field::Date(Date::from_ymd(2001, 2, 3).expect("date").0)));
        assert_eq!(sixth.get_timestamp_millis(7).expect("publishedAt"), 1_700_000_000_006);
        let creators = sixth.get_list(8).expect("creators");
        assert_eq!(creators.len(), 2);
        assert!(creators.get_group(1).expect("creator").get_string(0).is_err(), "a creator without a name");
        assert_eq!(creators.get_group(0).expect("creator").get_string(1).expect("role"), "composer");
        assert_eq!(read[7].get_list(3).expect("isrcs").get_string(0).expect("isrc"), "GBAYE6900500");
        assert!(read[5].get_bool(9).expect("openForLicensing"));
        assert_eq!(read[5].get_string(5).ok(), None, "no language");
    }

    #[test]
    fn a_row_with_a_field_the_schema_lacks_is_refused() {
        let mut file = ParquetRows::new(Vec::new()).expect("writer");
        let mut json = serde_json::to_value(row(1)).expect("json");
        json["addedLater"] = serde_json::json!(1);
        assert!(matches!(file.push(&serde_json::to_vec(&json).expect("json")), Err(ParquetFileError::Row(_))));
    }
}
