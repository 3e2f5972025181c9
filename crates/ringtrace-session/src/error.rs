//! What can go wrong, each naming the path or value and what is valid.

use std::io;
use std::path::PathBuf;
use thiserror::Error;

/// An option out of its range.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `rotate_size` is 0 or too large.
    #[error("rotate_size {value} is out of range: a chunk rotates at 1 to {max} bytes")]
    RotateSize {
        /// The value given.
        value: u64,
        /// The largest accepted.
        max: u64,
    },
    /// `rotate_time` is zero.
    #[error(
        "rotate_time 0 is out of range: give a duration above zero, or None to rotate by size only"
    )]
    RotateTime,
    /// `max_size` is too small.
    #[error("max_size {value} is out of range: at least {min} bytes, or None to keep everything")]
    MaxSize {
        /// The value given.
        value: u64,
        /// The smallest accepted.
        min: u64,
    },
    /// A zstd level zstd does not have.
    #[error("zstd level {value} is out of range: {min} to {max}")]
    ZstdLevel {
        /// The level given.
        value: i32,
        /// The fastest level.
        min: i32,
        /// The smallest output.
        max: i32,
    },
    /// zstd asked for, but this build has no zstd.
    #[error("zstd compression asked for, but ringtrace-session was built without its `zstd` feature: use Compression::None")]
    ZstdNotBuilt,
}

/// A string that names no [`LossCause`](crate::LossCause).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{given:?} is not a loss cause: refused, overwritten, blocked too long or writer died")]
pub struct ParseLossCauseError {
    /// The string given.
    pub given: String,
}

/// A session directory that cannot be created.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CreateError {
    /// The options are out of range.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The directory holds a session already (its index or its lock).
    #[error("{} holds a session already (it has {what}): choose another directory, or remove it", dir.display())]
    ExistingSession {
        /// The directory.
        dir: PathBuf,
        /// What was found: `a session index`, `a session lock`.
        what: &'static str,
    },
    /// The directory holds other files.
    #[error("{} is not empty (it has {entry:?}): a session is written into a new or empty directory", dir.display())]
    NotEmpty {
        /// The directory.
        dir: PathBuf,
        /// One of its entries.
        entry: String,
    },
    /// The directory's parent does not exist.
    #[error("cannot create {}: its parent directory {} does not exist", dir.display(), parent.display())]
    MissingParent {
        /// The directory asked for.
        dir: PathBuf,
        /// Its parent.
        parent: PathBuf,
    },
    /// A path that must be a directory is something else.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// No permission to write there.
    #[error("cannot write in {}: {source}", path.display())]
    Unwritable {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Any other failure of the system, naming the path and the step.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The step: `create`, `lock`, `write`...
        op: &'static str,
        /// What the system said.
        source: io::Error,
    },
}

/// What could not be written, counted on since the first failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Unwritten {
    /// Pages not written.
    pub pages: u64,
    /// The events they held.
    pub events: u64,
    /// Loss entries not written.
    pub losses: u64,
    /// Events lost that the pages and loss entries not written counted
    /// (their pages' `lost`, their entries' counts); they are also in
    /// [`Counters`](crate::Counters)' `page_lost` and lost by cause.
    pub lost: u64,
    /// Metadata records not written.
    pub metadata_records: u64,
}

/// An append, a rotation or a finish that failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The file system is full (ENOSPC, or a quota: EDQUOT). What could not
    /// be written is counted, in the index too; what was written before
    /// reads back.
    #[error("no space left to write {}: not written so far in this process: {} pages ({} events), {} loss entries ({} events lost in all), {} metadata records", path.display(), unwritten.pages, unwritten.events, unwritten.losses, unwritten.lost, unwritten.metadata_records)]
    NoSpace {
        /// The file.
        path: PathBuf,
        /// What this process's writer could not write, so far.
        unwritten: Unwritten,
    },
    /// Any other failure of the system, naming the file and the step.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The step: `write`, `rename`, `sync`...
        op: &'static str,
        /// What the system said.
        source: io::Error,
    },
    /// A page that cannot be one of this ring's.
    #[error("a page of {len} bytes for CPU {cpu}: a page is a 32-byte header and at most the ring's page size, {page_size} bytes")]
    PageSize {
        /// The CPU.
        cpu: usize,
        /// Its length.
        len: usize,
        /// The ring's page size.
        page_size: usize,
    },
    /// A CPU the ring does not have.
    #[error("CPU {cpu} is not one of the ring's CPUs (0 to {})", cpus.saturating_sub(1))]
    NoSuchCpu {
        /// The CPU given.
        cpu: usize,
        /// The ring's CPUs.
        cpus: usize,
    },
    /// A metadata record too long for the annex's u32 length.
    #[error("a metadata record of {len} bytes: a record has at most 4294967295")]
    RecordTooLong {
        /// Its length.
        len: usize,
    },
    /// An empty metadata record (a record has at least one byte).
    #[error("an empty metadata record: a record has at least one byte")]
    EmptyRecord,
    /// A process already in the session (the same pid and start).
    #[error("process {name} is in the session already: a process is added once")]
    ProcessExists {
        /// Its directory's name, `<pid>-<start>`.
        name: String,
    },
    /// A ring header that cannot be a ring's.
    #[error("process {name}'s ring header is invalid: {why}")]
    InvalidHeader {
        /// Its directory's name, `<pid>-<start>`.
        name: String,
        /// What is wrong, and what is valid.
        why: String,
    },
    /// The process or the session was finished already.
    #[error("{what} was finished already")]
    Finished {
        /// `the process 1234-5678`, `the session`.
        what: String,
    },
}

/// A session directory that cannot be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OpenError {
    /// No index: not a session directory.
    #[error("{} is not a ringtrace session: it has no `session` index", dir.display())]
    NotASession {
        /// The directory.
        dir: PathBuf,
    },
    /// The index is of a version this build does not read.
    #[error("{} is a session index of version {found}; this build reads version {supported}", path.display())]
    Version {
        /// The index.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The index cannot be read.
    #[error("{} is corrupt: {field}: {why}", path.display())]
    CorruptIndex {
        /// The index.
        path: PathBuf,
        /// The field where it went wrong.
        field: &'static str,
        /// What is wrong.
        why: String,
    },
    /// Any failure of the system, naming the path and the step.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The step.
        op: &'static str,
        /// What the system said.
        source: io::Error,
    },
}
