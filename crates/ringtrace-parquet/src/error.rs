//! Why a Parquet export failed: each error names the value or the path
//! and the cause.

use std::path::PathBuf;
use thiserror::Error;

/// Why [`write_parquet`](crate::write_parquet) failed. Nothing is left
/// behind: the tables are written in a temporary directory, removed on
/// failure.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ParquetError {
    /// The host name given is not one a table can carry.
    #[error("host `{given}` cannot be used: {why}; a host is 1 to 255 bytes of UTF-8")]
    Host {
        /// The host given (its first 80 characters).
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A row-group size of zero rows.
    #[error("row_group_rows {given} cannot be used: a row group holds at least 1 row")]
    RowGroupRows {
        /// The size given.
        given: usize,
    },
    /// A compression name that is none of the codecs this export writes.
    #[error("unknown compression `{given}`; valid: {valid}")]
    Compression {
        /// The name given.
        given: String,
        /// The names there are.
        valid: &'static str,
    },
    /// The output directory is refused: it would replace something that
    /// is not a previous Parquet export.
    #[error("refusing to write the Parquet export to {}: {why}", path.display())]
    Refused {
        /// The output directory asked for.
        path: PathBuf,
        /// Why, in words.
        why: String,
    },
    /// A file system operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`create`, `rename`, ...).
        op: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The Parquet writer failed.
    #[error("cannot write the Parquet table {}: {source}", path.display())]
    Parquet {
        /// The table's file (where it goes once complete).
        path: PathBuf,
        /// The writer's error.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A table's rows did not fit its schema (a bug of this crate).
    #[error("the Parquet table {table} does not fit its schema: {why}")]
    Schema {
        /// The table.
        table: &'static str,
        /// What did not fit.
        why: String,
    },
}

impl ParquetError {
    /// A file system error on `path` while doing `op`.
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: std::io::Error) -> Self {
        ParquetError::Io {
            path: path.into(),
            op,
            source,
        }
    }
}
