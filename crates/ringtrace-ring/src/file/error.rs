//! What can be wrong with a ring file, each naming the file.

use std::path::PathBuf;
use thiserror::Error;

/// A ring file that cannot be created, opened or read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FileError {
    /// The path exists and appending was not asked for.
    #[error("{} already exists; append to it (RingConfig::append, TracerBuilder::append, --append), or choose another path", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The final component of the path is a symbolic link.
    #[error("{} is a symbolic link; ringtrace does not follow a link at the last component of a trace file's path", path.display())]
    Symlink {
        /// The file.
        path: PathBuf,
    },
    /// Not a regular file: a directory, FIFO, socket or device.
    #[error("{} is a {kind}, not a regular file", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file has no bytes at all.
    #[error("{} is empty (0 bytes): it is not a ringtrace file, or its writer died before writing the header", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file does not start with the ringtrace magic.
    #[error("{} is not a ringtrace file: it starts with {found}, not \"RINGTRC\\0\"", path.display())]
    NotRingtrace {
        /// The file.
        path: PathBuf,
        /// Its first bytes, escaped.
        found: String,
    },
    /// A format version this build does not read.
    #[error("{} is a ringtrace file of format version {found}; this build reads versions {} to {supported}", path.display(), super::header::OLDEST_VERSION)]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The newest version this build reads (it reads from
        /// [`OLDEST_VERSION`](super::OLDEST_VERSION) up).
        supported: u32,
    },
    /// The file ends inside its header.
    #[error("{} is cut off at {len} bytes, inside its header", path.display())]
    TruncatedHeader {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// A header field is impossible.
    #[error("{}: bad header: {field}: {why}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// Appending to a file whose ring has another shape or clock.
    #[error("cannot append to {}: {what}", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What differs, with both values.
        what: String,
    },
    /// The system refused an operation.
    #[error("{} could not be {action}: {reason}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("created", "read", "mapped").
        action: &'static str,
        /// What the system said.
        reason: String,
    },
}

impl FileError {
    pub(crate) fn io(path: &std::path::Path, action: &'static str, e: std::io::Error) -> FileError {
        FileError::Io {
            path: path.to_owned(),
            action,
            reason: e.to_string(),
        }
    }
}

/// What a file's type is, in words, for [`FileError::NotRegular`].
pub(crate) fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        "directory"
    } else if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else {
        "regular file"
    }
}

/// Why a recovered file's metadata region (the tracepoint descriptions
/// written when the file was made) cannot be used: the rest of the file
/// may still be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum UnreadableMetadata {
    /// The header gives a length this machine cannot address.
    #[error("{len} bytes of metadata is too many")]
    TooLong {
        /// The length the header gives.
        len: u64,
    },
    /// The file ends before the metadata does.
    #[error("the file ends inside the metadata ({got} of {len} bytes)")]
    Truncated {
        /// The bytes there are.
        got: usize,
        /// The length the header gives.
        len: usize,
    },
    /// The metadata's checksum in the header does not match its bytes.
    #[error("the metadata's checksum does not match: it is corrupt")]
    Checksum,
}
