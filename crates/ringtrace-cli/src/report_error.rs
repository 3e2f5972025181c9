//! What can go wrong around a report before and after it measures: the
//! arguments checked up front, and the files it writes.

use std::path::PathBuf;
use thiserror::Error;

/// An `--update-hz` too slow for the report's clock rows: no update would
/// reach a row, so its tear figures would be empty.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "--update-hz {given} is too slow for the report's clock rows ({row_ms} ms each): \
     no update would reach them; give at least {least}"
)]
#[non_exhaustive]
pub struct UpdateHzError {
    /// The rate given, in updates per second.
    pub given: u32,
    /// How long each clock row's writer runs, in ms.
    pub row_ms: u64,
    /// The least rate that brings one update into a row.
    pub least: u64,
}

/// Why `--keep-trace DIR` cannot hold the report's trace.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum KeepTraceError {
    /// `DIR` exists and is not a directory.
    #[error(
        "--keep-trace {} is a file, not a directory; give a directory (it is created if missing)",
        .dir.display()
    )]
    NotADirectory {
        /// The path given.
        dir: PathBuf,
    },
    /// `DIR` is missing and cannot be created.
    #[error("--keep-trace {}: cannot create it: {source}", .dir.display())]
    Create {
        /// The path given.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `DIR` cannot be looked at.
    #[error("--keep-trace {}: {source}; give a directory this user can read", .dir.display())]
    Inspect {
        /// The path given.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `DIR/hammer.ring` is already there; a report never overwrites it.
    #[error(
        "--keep-trace: {} already exists; remove it or give another directory",
        .path.display()
    )]
    Exists {
        /// The trace file that is in the way.
        path: PathBuf,
    },
}

/// Why a report's JSON or plot was not written. The file in place before
/// is left as it was.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The report did not serialize.
    #[error("cannot encode the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The plot could not be drawn.
    #[error("cannot draw {}: {reason}", .path.display())]
    Draw {
        /// The plot's file.
        path: PathBuf,
        /// What the plotting library said.
        reason: String,
    },
    /// The file could not be written or renamed into place.
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
