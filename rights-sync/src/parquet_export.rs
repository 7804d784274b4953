//! `--format parquet`: the copy's rows as one Parquet file, written by the
//! code that writes the registry's snapshot files, so it has their columns.
//! The file is written beside its place and renamed over it, so a reader
//! never sees half of one.

use std::path::Path;

use query_api::snapshots::parquet_file::ParquetRows;

use crate::copy::Copy;

/// Writes every row of `copy` to `path`; returns the rows written.
pub fn write(copy: &Copy, path: &Path) -> anyhow::Result<u64> {
    let partial = path.with_extension("parquet.partial");
    let file = std::io::BufWriter::new(std::fs::File::create(&partial)?);
    let mut rows = ParquetRows::new(file)?;
    let count = copy.rows(|_, row| Ok(rows.push(row.as_bytes())?))?;
    let file = rows.finish()?.into_inner().map_err(|error| error.into_error())?;
    file.sync_all()?;
    std::fs::rename(&partial, path)?;
    tracing::info!(rows = count, file = %path.display(), "wrote the Parquet copy");
    Ok(count)
}
