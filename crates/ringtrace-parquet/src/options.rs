//! What a Parquet export can be asked for: the host its rows name, the
//! size of its row groups, its compression.

use crate::error::ParquetError;
use std::fmt;
use std::str::FromStr;

/// The longest host name a table carries, in bytes (a DNS name's limit).
pub const MAX_HOST_BYTES: usize = 255;

/// The rows of a row group when none is asked for.
pub const DEFAULT_ROW_GROUP_ROWS: usize = 65_536;

/// How the tables' pages are compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Zstandard (level 1): what DuckDB, ClickHouse, Spark and pandas all
    /// read.
    #[default]
    Zstd,
    /// No compression.
    Uncompressed,
}

impl Compression {
    /// Every codec, as [`FromStr`] names them.
    pub const ALL: [Compression; 2] = [Compression::Zstd, Compression::Uncompressed];

    /// Its name: `zstd` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Uncompressed => "none",
        }
    }

    /// The Parquet writer's codec.
    pub(crate) fn codec(self) -> parquet::basic::Compression {
        match self {
            Compression::Zstd => {
                parquet::basic::Compression::ZSTD(parquet::basic::ZstdLevel::default())
            }
            Compression::Uncompressed => parquet::basic::Compression::UNCOMPRESSED,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = ParquetError;

    /// `zstd` or `none` (any case).
    ///
    /// ```
    /// use ringtrace_parquet::Compression;
    /// assert_eq!("ZSTD".parse::<Compression>()?, Compression::Zstd);
    /// assert!("lz4".parse::<Compression>().unwrap_err().to_string().contains("zstd, none"));
    /// # Ok::<(), ringtrace_parquet::ParquetError>(())
    /// ```
    fn from_str(s: &str) -> Result<Compression, ParquetError> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParquetError::Compression {
                given: s.to_owned(),
                valid: "zstd, none",
            })
    }
}

/// How [`write_parquet`](crate::write_parquet) writes the tables.
///
/// ```
/// use ringtrace_parquet::{Compression, ParquetOptions};
/// let options = ParquetOptions::default()
///     .host("db-7")
///     .row_group_rows(10_000)
///     .compression(Compression::Uncompressed);
/// assert_eq!(options.host.as_deref(), Some("db-7"));
/// assert_eq!(ParquetOptions::default().row_group_rows, 65_536);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParquetOptions {
    /// The `host` column of every row; `None`: this machine's host name
    /// (`/proc/sys/kernel/hostname`, else `localhost`). One given must be
    /// 1 to [`MAX_HOST_BYTES`] bytes.
    pub host: Option<String>,
    /// Rows buffered per table before they are written as one row group:
    /// at least 1, [`DEFAULT_ROW_GROUP_ROWS`] by default. Memory grows
    /// with it, not with the trace.
    pub row_group_rows: usize,
    /// The pages' compression.
    pub compression: Compression,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            host: None,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            compression: Compression::default(),
        }
    }
}

impl ParquetOptions {
    /// The same options with `host` in every row's `host` column.
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// The same options with row groups of `rows` rows.
    pub fn row_group_rows(mut self, rows: usize) -> Self {
        self.row_group_rows = rows;
        self
    }

    /// The same options with `compression`.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// The host the rows name: the one given, checked, or this
    /// machine's.
    pub(crate) fn resolved_host(&self) -> Result<String, ParquetError> {
        let Some(given) = &self.host else {
            return Ok(this_host());
        };
        let why = if given.is_empty() {
            Some("it is empty")
        } else if given.len() > MAX_HOST_BYTES {
            Some("it is longer than 255 bytes")
        } else {
            None
        };
        match why {
            Some(why) => Err(ParquetError::Host {
                given: given.chars().take(80).collect(),
                why,
            }),
            None => Ok(given.clone()),
        }
    }

    /// Checks what [`write_parquet`](crate::write_parquet) needs before it
    /// touches the disk; the host the rows name.
    pub(crate) fn checked(&self) -> Result<String, ParquetError> {
        if self.row_group_rows == 0 {
            return Err(ParquetError::RowGroupRows {
                given: self.row_group_rows,
            });
        }
        self.resolved_host()
    }
}

/// This machine's host name, trimmed; `localhost` when it cannot be read
/// or is empty.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty() && h.len() <= MAX_HOST_BYTES)
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_one_to_255_bytes_and_defaults_to_this_machines() {
        let ok = ParquetOptions::default().host("h".repeat(255));
        assert_eq!(ok.resolved_host().unwrap().len(), 255);
        let long = ParquetOptions::default().host("h".repeat(256));
        let err = long.resolved_host().unwrap_err().to_string();
        assert!(err.contains("longer than 255 bytes"), "{err}");
        let empty = ParquetOptions::default().host("");
        let err = empty.resolved_host().unwrap_err().to_string();
        assert!(
            err.contains("empty") && err.contains("1 to 255 bytes"),
            "{err}"
        );
        assert!(!ParquetOptions::default()
            .resolved_host()
            .unwrap()
            .is_empty());
    }

    #[test]
    fn zero_rows_a_group_is_refused() {
        let err = ParquetOptions::default().row_group_rows(0).checked();
        assert!(matches!(err, Err(ParquetError::RowGroupRows { given: 0 })));
    }
}
