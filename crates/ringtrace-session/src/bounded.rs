//! How the reader opens a session's files, whatever is found in their
//! place: never waiting (a FIFO is refused, not waited on), nothing but a
//! regular file (a symbolic link to one is followed), and never more bytes
//! than the file can hold by the format.

use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum Unread {
    /// The system refused to open, examine or read it (`NotFound`
    /// included).
    Io(io::Error),
    /// It is not a regular file: what it is (`FIFO`, `directory`...).
    NotRegular(&'static str),
    /// It holds more bytes than such a file can: its length, the most
    /// such a file holds, and what it should be (`a chunk`...).
    TooLarge {
        len: u64,
        cap: u64,
        what: &'static str,
    },
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unread::Io(e) => e.fmt(f),
            Unread::NotRegular(kind) => write!(f, "it is a {kind}, not a regular file"),
            Unread::TooLarge { len, cap, what } => {
                write!(f, "it is {len} bytes, past the {cap} bytes {what} can hold")
            }
        }
    }
}

impl Unread {
    /// The system's error, or one saying what is wrong with the file.
    pub fn into_io(self) -> io::Error {
        match self {
            Unread::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// Opens `path` for reading if it is a regular file, with its length. It
/// is looked at before it is opened (a device is never opened) and again
/// once open (it may have been replaced in between); the open does not
/// wait (`O_NONBLOCK`, which a regular file's reads ignore).
pub(crate) fn open(path: &Path) -> Result<(File, u64), Unread> {
    regular(&fs::metadata(path).map_err(Unread::Io)?)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(Unread::Io)?;
    let len = regular(&file.metadata().map_err(Unread::Io)?)?;
    Ok((file, len))
}

/// Reads regular file `path` whole if it holds at most `cap` bytes; a
/// larger one is refused unread, naming its length and `what` it should
/// be. At most `cap + 1` bytes are read, so a file that grows meanwhile
/// is refused too.
pub(crate) fn read(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, Unread> {
    let (file, len) = open(path)?;
    let too_large = |len: u64| Unread::TooLarge { len, cap, what };
    if len > cap {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    (&file)
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Unread::Io)?;
    let read = bytes.len() as u64;
    if read > cap {
        let now = file.metadata().map_or(read, |m| m.len());
        return Err(too_large(now.max(read)));
    }
    Ok(bytes)
}

/// The length of a regular file; anything else is refused, saying what
/// it is.
fn regular(meta: &Metadata) -> Result<u64, Unread> {
    let t = meta.file_type();
    if t.is_file() {
        return Ok(meta.len());
    }
    Err(Unread::NotRegular(if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_char_device() {
        "character device"
    } else {
        "special file"
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_its_cap_is_read() {
        let dir = std::env::temp_dir().join(format!("ringtrace-bounded-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).unwrap();
        let file = dir.join("f");
        fs::write(&file, b"12345").unwrap();
        assert_eq!(read(&file, 5, "a test file").unwrap(), b"12345");
        let err = read(&file, 4, "a test file").unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is 5 bytes, past the 4 bytes a test file can hold"
        );
        let link = dir.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read(&link, 5, "a test file").unwrap(), b"12345");
        let err = read(&dir, 5, "a test file").unwrap_err();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
        let null = read(Path::new("/dev/null"), 5, "a test file").unwrap_err();
        assert_eq!(
            null.to_string(),
            "it is a character device, not a regular file"
        );
        assert!(matches!(
            read(&dir.join("absent"), 5, "a test file"),
            Err(Unread::Io(e)) if e.kind() == io::ErrorKind::NotFound
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
