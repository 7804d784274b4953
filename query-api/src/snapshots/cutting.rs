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
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;
use read_model::calendar::Timestamp;
use read_model::change_feed::FeedCursor;
use read_model::{Audience, Body, BulkKey, DocumentReads, ModelVersion};
use tokio::sync::mpsc;

use super::errors::{SnapshotError, io_error};
use super::hashing_writer::HashingWriter;
use super::library::SnapshotLibrary;
use super::manifest::{Manifest, ManifestFile, NDJSON_GZ, PARQUET};
use super::parquet_file::ParquetRows;
use crate::signing::Signer;

/// Rows read from the store at a time.
const ROWS_PER_READ: u32 = 2_000;

/// The default bound of a file, in rows.
pub const DEFAULT_ROWS_PER_FILE: u64 = 250_000;

/// The identifier of a snapshot cut at `instant` from `version`: its time,
/// compact, so that identifiers sort by age.
pub fn snapshot_id(instant: Timestamp, version: ModelVersion) -> String {
    let compact: String = instant.to_string().chars().filter(|character| !matches!(character, '-' | ':')).collect();
    format!("{compact}-v{}", version.0)
}

/// Cuts a snapshot of `audience` into `library` and returns its manifest,
/// signed by `signer`.
pub async fn cut_snapshot(
    store: &dyn DocumentReads,
    library: &SnapshotLibrary,
    signer: &Signer,
    audience: Audience,
    rows_per_file: u64,
) -> Result<Manifest, SnapshotError> {
    let bounds = store.change_feed_bounds(audience).await?;
    let cursor = FeedCursor { model_version: bounds.model_version, audience, position: bounds.continue_from() };
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
    let mut manifest = Manifest {
        snapshot_id,
        created_at: created_at.to_string(),
        model_version: bounds.model_version.0,
        audience: audience.code().to_owned(),
        changes_cursor: cursor.encode(),
        row_count: files.iter().filter(|file| file.format == PARQUET).map(|file| file.rows).sum(),
        files,
        signature: None,
    };
    manifest.signature = Some(signer.sign(audience, &manifest)?);
    library.publish(audience, &partial, &manifest)?;
    Ok(manifest)
}

/// Streams the audience's rows into numbered files of both formats. The
/// store is read on this task while one blocking thread per format
/// compresses and encodes the previous chunks, so the three overlap.
async fn write_files(
    store: &dyn DocumentReads,
    audience: Audience,
    directory: &Path,
    rows_per_file: u64,
) -> Result<Vec<ManifestFile>, SnapshotError> {
    let (ndjson, ndjson_rows) = start_writer::<NdjsonFile>(directory, rows_per_file);
    let (parquet, parquet_rows) = start_writer::<ParquetFile>(directory, rows_per_file);
    let mut after: Option<BulkKey> = None;
    let read = loop {
        let rows = match store.bulk_rows_after(audience, after.as_ref(), ROWS_PER_READ).await {
            Ok(rows) => rows,
            Err(error) => break Err(error),
        };
        let Some((last, _)) = rows.last() else { break Ok(()) };
        after = Some(last.clone());
        let bodies: Chunk = Arc::new(rows.into_iter().map(|(_, body)| body).collect());
        // A writer that stopped has failed; its error is reported below.
        if ndjson_rows.send(Arc::clone(&bodies)).await.is_err() || parquet_rows.send(bodies).await.is_err() {
            break Ok(());
        }
    };
    drop((ndjson_rows, parquet_rows));
    let joined = |result: Result<Result<Vec<ManifestFile>, SnapshotError>, tokio::task::JoinError>| {
        result.map_err(|error| SnapshotError::Task(error.to_string()))?
    };
    let (ndjson, parquet) = (joined(ndjson.await)?, joined(parquet.await)?);
    read?;
    // In the manifest, each file beside its twin of the other format.
    Ok(ndjson.into_iter().zip(parquet).flat_map(|(ndjson, parquet)| [ndjson, parquet]).collect())
}

type Sink = HashingWriter<BufWriter<File>>;

/// Rows read from the store, shared by the writers of both formats.
type Chunk = Arc<Vec<Body>>;

/// A format's writer thread, which returns the entries of the files it wrote.
type WriterTask = tokio::task::JoinHandle<Result<Vec<ManifestFile>, SnapshotError>>;

/// One snapshot file being written, in one format.
trait FormatFile: Sized + Send + 'static {
    const FORMAT: &'static str;
    fn create(sink: Sink) -> Result<Self, SnapshotError>;
    fn push(&mut self, body: &[u8]) -> Result<(), SnapshotError>;
    /// Writes what the format holds back and returns the sink.
    fn finish(self) -> Result<Sink, SnapshotError>;
}

/// NDJSON, gzip-compressed: each row exactly as the export serves it, one per line.
struct NdjsonFile(GzEncoder<Sink>);

impl FormatFile for NdjsonFile {
    const FORMAT: &'static str = NDJSON_GZ;

    fn create(sink: Sink) -> Result<NdjsonFile, SnapshotError> {
        Ok(NdjsonFile(GzEncoder::new(sink, Compression::default())))
    }

    fn push(&mut self, body: &[u8]) -> Result<(), SnapshotError> {
        let write = self.0.write_all(body).and_then(|()| self.0.write_all(b"\n"));
        write.map_err(|source| SnapshotError::Io { path: PathBuf::from(NDJSON_GZ), source })
    }

    fn finish(self) -> Result<Sink, SnapshotError> {
        self.0.finish().map_err(|source| SnapshotError::Io { path: PathBuf::from(NDJSON_GZ), source })
    }
}

/// Parquet with the typed schema of `parquet_file`.
struct ParquetFile(ParquetRows<Sink>);

impl FormatFile for ParquetFile {
    const FORMAT: &'static str = PARQUET;

    fn create(sink: Sink) -> Result<ParquetFile, SnapshotError> {
        Ok(ParquetFile(ParquetRows::new(sink)?))
    }

    fn push(&mut self, body: &[u8]) -> Result<(), SnapshotError> {
        Ok(self.0.push(body)?)
    }

    fn finish(self) -> Result<Sink, SnapshotError> {
        Ok(self.0.finish()?)
    }
}

/// The name of file `number` of a format.
fn file_name(number: u32, format: &str) -> String {
    format!("works-{number:05}.{format}")
}

/// Starts the thread that writes one format's files from the chunks sent
/// to it, a new file every `rows_per_file` rows; it returns their entries.
fn start_writer<F: FormatFile>(directory: &Path, rows_per_file: u64) -> (WriterTask, mpsc::Sender<Chunk>) {
    let (sender, mut chunks) = mpsc::channel::<Chunk>(2);
    let directory = directory.to_owned();
    let task = tokio::task::spawn_blocking(move || {
        let mut entries = Vec::new();
        let mut file: (F, u64) = (F::create(create_sink(&directory, 0, F::FORMAT)?)?, 0);
        while let Some(chunk) = chunks.blocking_recv() {
            for body in chunk.iter() {
                if file.1 == rows_per_file {
                    let number = u32::try_from(entries.len() + 1).unwrap_or(u32::MAX);
                    let next = (F::create(create_sink(&directory, number, F::FORMAT)?)?, 0);
                    let (full, rows) = std::mem::replace(&mut file, next);
                    entries.push(close(&directory, entries.len(), full, rows)?);
                }
                file.0.push(body)?;
                file.1 += 1;
            }
        }
        let (last, rows) = file;
        entries.push(close(&directory, entries.len(), last, rows)?);
        Ok(entries)
    });
    (task, sender)
}

fn create_sink(directory: &Path, number: u32, format: &str) -> Result<Sink, SnapshotError> {
    let path = directory.join(file_name(number, format));
    File::create(&path).map(|file| HashingWriter::new(BufWriter::new(file))).map_err(io_error(&path))
}

/// Finishes file `number`, syncs it to disk and describes it.
fn close<F: FormatFile>(directory: &Path, number: usize, file: F, rows: u64) -> Result<ManifestFile, SnapshotError> {
    let name = file_name(u32::try_from(number).unwrap_or(u32::MAX), F::FORMAT);
    let path = directory.join(&name);
    let (buffered, bytes, sha256) = file.finish()?.finish();
    let written = buffered.into_inner().map_err(|error| io_error(&path)(error.into_error()))?;
    written.sync_all().map_err(io_error(&path))?;
    Ok(ManifestFile { name, format: F::FORMAT.to_owned(), bytes, rows, sha256 })
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
