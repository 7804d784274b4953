//! Cutting a snapshot: every published work's bulk row of one audience,
//! streamed from the store in export order into files of bounded size, in
//! two formats, at one position of the change feed.
//!
//! The position is read before the rows, so every change before it is in
//! the files; a change made while the rows are read may be too, which a
//! client applying the feed from the position makes harmless. The files are
//! written into a hidden directory and renamed into place with their
//! manifest, so a reader never sees a snapshot half cut. Memory is bounded
//! by one chunk of rows and one Parquet row group, whatever the catalogue.
//!
//! It must not decide when to cut or which snapshots to keep (`schedule`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use read_model::calendar::Timestamp;
use read_model::change_feed::{FeedCursor, FeedPosition};
use read_model::{Audience, BulkKey, DocumentReads, ModelVersion, StoreError};

use super::hashing_writer::HashingWriter;
use super::library::SnapshotLibrary;
use super::manifest::{Manifest, ManifestFile, NDJSON_GZ, PARQUET};
use super::parquet_file::{ParquetFileError, ParquetRows};

/// Rows read from the store at a time.
const ROWS_PER_READ: u32 = 2_000;

/// The default bound of a file, in rows.
pub const DEFAULT_ROWS_PER_FILE: u64 = 250_000;

/// Why a snapshot could not be cut.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("failed to write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Parquet(#[from] ParquetFileError),
    #[error("model version {was} was replaced by {now} while the snapshot was cut; it is cut again next time")]
    ModelVersionChanged { was: ModelVersion, now: ModelVersion },
    #[error("the file writer task failed: {0}")]
    Task(String),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io { path: path.to_owned(), source }
}

/// The identifier of a snapshot cut at `instant` from `version`: its time,
/// compact, so that identifiers sort by age.
pub fn snapshot_id(instant: Timestamp, version: ModelVersion) -> String {
    let compact: String = instant.to_string().chars().filter(|character| !matches!(character, '-' | ':')).collect();
    format!("{compact}-v{}", version.0)
}

/// Cuts a snapshot of `audience` into `library` and returns its manifest.
pub async fn cut_snapshot(
    store: &dyn DocumentReads,
    library: &SnapshotLibrary,
    audience: Audience,
    rows_per_file: u64,
) -> Result<Manifest, SnapshotError> {
    let bounds = store.change_feed_bounds(audience).await?;
    let position = bounds.newest.clone().unwrap_or(FeedPosition { sequence: bounds.horizon, lcc_id: String::new() });
    let cursor = FeedCursor { model_version: bounds.model_version, audience, position };
    let created_at = Timestamp::now();
    let snapshot_id = snapshot_id(created_at, bounds.model_version);
    let partial = library.partial_directory(audience, &snapshot_id);
    std::fs::create_dir_all(&partial).map_err(io_error(&partial))?;
    let result = write_files(store, audience, &partial, rows_per_file.max(1)).await;
    let files = match result {
        Ok(files) => files,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(error);
        }
    };
    let now = store.change_feed_bounds(audience).await?.model_version;
    if now != bounds.model_version {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(SnapshotError::ModelVersionChanged { was: bounds.model_version, now });
    }
    let manifest = Manifest {
        snapshot_id,
        created_at: created_at.to_string(),
        model_version: bounds.model_version.0,
        audience: audience.code().to_owned(),
        changes_cursor: cursor.encode(),
        row_count: files.iter().filter(|file| file.format == PARQUET).map(|file| file.rows).sum(),
        files,
    };
    library.publish(audience, &partial, &manifest)?;
    Ok(manifest)
}

/// Streams the audience's rows into numbered file pairs.
async fn write_files(
    store: &dyn DocumentReads,
    audience: Audience,
    directory: &Path,
    rows_per_file: u64,
) -> Result<Vec<ManifestFile>, SnapshotError> {
    let mut files = Vec::new();
    let mut pair = FilePair::create(directory, 0)?;
    let mut after: Option<BulkKey> = None;
    loop {
        let rows = store.bulk_rows_after(audience, after.as_ref(), ROWS_PER_READ).await?;
        let Some((last, _)) = rows.last() else { break };
        after = Some(last.clone());
        // Compressing and encoding is CPU work: off the async workers.
        let (returned, finished) = tokio::task::spawn_blocking(move || {
            let mut pair = pair;
            let mut finished = Vec::new();
            for (_, body) in rows {
                if pair.rows == rows_per_file {
                    let next = FilePair::create(&pair.directory, pair.number + 1)?;
                    finished.extend(std::mem::replace(&mut pair, next).finish()?);
                }
                pair.push(&body)?;
            }
            Ok::<_, SnapshotError>((pair, finished))
        })
        .await
        .map_err(|error| SnapshotError::Task(error.to_string()))??;
        pair = returned;
        files.extend(finished);
    }
    files.extend(
        tokio::task::spawn_blocking(move || pair.finish())
            .await
            .map_err(|error| SnapshotError::Task(error.to_string()))??,
    );
    Ok(files)
}

type Sink = HashingWriter<BufWriter<File>>;

/// One NDJSON file and one Parquet file holding the same rows.
struct FilePair {
    directory: PathBuf,
    number: u32,
    rows: u64,
    ndjson: GzEncoder<Sink>,
    parquet: ParquetRows<Sink>,
}

impl FilePair {
    fn name(number: u32, format: &str) -> String {
        format!("works-{number:05}.{format}")
    }

    fn create(directory: &Path, number: u32) -> Result<FilePair, SnapshotError> {
        let open = |format: &str| {
            let path = directory.join(FilePair::name(number, format));
            File::create(&path).map(|file| HashingWriter::new(BufWriter::new(file))).map_err(io_error(&path))
        };
        Ok(FilePair {
            directory: directory.to_owned(),
            number,
            rows: 0,
            ndjson: GzEncoder::new(open(NDJSON_GZ)?, Compression::default()),
            parquet: ParquetRows::new(open(PARQUET)?)?,
        })
    }

    fn push(&mut self, body: &[u8]) -> Result<(), SnapshotError> {
        let path = self.directory.join(FilePair::name(self.number, NDJSON_GZ));
        self.ndjson.write_all(body).and_then(|()| self.ndjson.write_all(b"\n")).map_err(io_error(&path))?;
        self.parquet.push(body)?;
        self.rows += 1;
        Ok(())
    }

    /// Closes both files (synced to disk) and describes them.
    fn finish(self) -> Result<[ManifestFile; 2], SnapshotError> {
        let FilePair { directory, number, rows, ndjson, parquet } = self;
        let entry = |format: &str, sink: Sink| {
            let name = FilePair::name(number, format);
            let path = directory.join(&name);
            let (buffered, bytes, sha256) = sink.finish();
            let file = buffered.into_inner().map_err(|error| io_error(&path)(error.into_error()))?;
            file.sync_all().map_err(io_error(&path))?;
            Ok::<_, SnapshotError>(ManifestFile { name, format: format.to_owned(), bytes, rows, sha256 })
        };
        let ndjson_path = directory.join(FilePair::name(number, NDJSON_GZ));
        let ndjson = entry(NDJSON_GZ, ndjson.finish().map_err(io_error(&ndjson_path))?)?;
        let parquet = entry(PARQUET, parquet.finish()?)?;
        Ok([ndjson, parquet])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_ids_sort_by_age_and_name_the_model_version() {
        let id = snapshot_id(Timestamp(1_764_012_190_512), ModelVersion(3));
        assert_eq!(id, "20251124T192310.512Z-v3");
        assert!(snapshot_id(Timestamp(1_764_012_190_513), ModelVersion(1)) > id);
    }
}
