//! Opening a ring file for reading and reading its header, whatever the
//! file holds: every length is checked before it is used.

use super::error::{kind_of, FileError, UnreadableMetadata};
use super::header::{FileHeader, MAGIC, OLDEST_VERSION, VERSION};
use super::layout::{
    EXIT_CODE_SHIFT, EXIT_HAS_CODE, EXIT_HAS_TICKS, EXIT_HAS_WALL, EXIT_OFFSET, EXIT_WORDS,
    STATUS_OFFSET,
};
use super::recover::ExitTime;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// A ring file open for reading (or its bytes), with its length.
#[derive(Debug)]
pub(crate) struct Source {
    pub file: Origin,
    pub len: u64,
}

/// Where the bytes come from.
#[derive(Debug)]
pub(crate) enum Origin {
    /// A file, read with pread.
    File(File),
    /// Bytes already in memory (`recover_bytes`: fuzzing, tests, a copy).
    Bytes(Vec<u8>),
}

impl Origin {
    /// The file, when the bytes come from one.
    pub(crate) fn into_file(self) -> Option<File> {
        match self {
            Origin::File(f) => Some(f),
            Origin::Bytes(_) => None,
        }
    }
}

/// Opens an existing ring file at `path` to write it: never through a
/// symbolic link at its last component (refused, naming it), never
/// waiting on a FIFO.
pub(crate) fn open_read_write(path: &Path) -> Result<File, FileError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => FileError::Symlink {
                path: path.to_owned(),
            },
            _ => FileError::io(path, "opened", e),
        })
}

impl Source {
    /// The open file, when the bytes come from one.
    pub(crate) fn file_ref(&self) -> Option<&File> {
        match &self.file {
            Origin::File(f) => Some(f),
            Origin::Bytes(_) => None,
        }
    }

    /// Opens `path` read-only. Non-blocking, so a FIFO is refused rather
    /// than waited on; anything but a regular file is refused.
    pub(crate) fn open(path: &Path) -> Result<Source, FileError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| FileError::io(path, "opened", e))?;
        Self::checked(file, path)
    }

    /// `file`, once it is known to be a regular, non-empty file.
    pub(crate) fn checked(file: File, path: &Path) -> Result<Source, FileError> {
        let meta = file
            .metadata()
            .map_err(|e| FileError::io(path, "examined", e))?;
        if !meta.file_type().is_file() {
            return Err(FileError::NotRegular {
                path: path.to_owned(),
                kind: kind_of(meta.file_type()),
            });
        }
        if meta.len() == 0 {
            // A file of /proc or /sys says 0 bytes and yet has some.
            let mut probe = [0u8; 1];
            if matches!(
                std::os::unix::fs::FileExt::read_at(&file, &mut probe, 0),
                Ok(1)
            ) {
                return Err(FileError::NotRegular {
                    path: path.to_owned(),
                    kind: "pseudo-file (its size reads 0, yet it has bytes: /proc, /sys)",
                });
            }
            return Err(FileError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(Source {
            file: Origin::File(file),
            len: meta.len(),
        })
    }

    /// `bytes` as if they were a file's; empty bytes are [`FileError::Empty`].
    pub(crate) fn bytes(bytes: Vec<u8>, path: &Path) -> Result<Source, FileError> {
        if bytes.is_empty() {
            return Err(FileError::Empty {
                path: path.to_owned(),
            });
        }
        Ok(Source {
            len: bytes.len() as u64,
            file: Origin::Bytes(bytes),
        })
    }

    /// Up to `len` bytes at `offset`: fewer where the file ends (or was
    /// cut while being read).
    pub(crate) fn read_at(
        &self,
        offset: u64,
        len: usize,
        path: &Path,
    ) -> Result<Vec<u8>, FileError> {
        let available = self.len.saturating_sub(offset).min(len as u64) as usize;
        let file = match &self.file {
            Origin::File(file) => file,
            Origin::Bytes(bytes) => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                return Ok(bytes[start..start + available.min(bytes.len() - start)].to_vec());
            }
        };
        let mut out = vec![0u8; available];
        let mut done = 0;
        while done < available {
            match file.read_at(&mut out[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FileError::io(path, "read", e)),
            }
        }
        out.truncate(done);
        Ok(out)
    }

    /// The header, checked, and the metadata (or what is wrong with it).
    pub(crate) fn header(
        &self,
        path: &Path,
    ) -> Result<(FileHeader, Result<Vec<u8>, UnreadableMetadata>), FileError> {
        let head = self.read_at(0, STATUS_OFFSET, path)?;
        let shown = head.len().min(MAGIC.len());
        if head[..shown] != MAGIC[..shown] {
            return Err(FileError::NotRingtrace {
                path: path.to_owned(),
                found: format!("\"{}\"", head[..shown].escape_ascii()),
            });
        }
        let truncated = || FileError::TruncatedHeader {
            path: path.to_owned(),
            len: self.len,
        };
        let version = head
            .get(8..12)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(truncated)?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(FileError::Version {
                path: path.to_owned(),
                found: version,
                supported: VERSION,
            });
        }
        let header = FileHeader::decode(&head).map_err(|p| {
            if p.why.contains("ends before") && (head.len() as u64) < STATUS_OFFSET as u64 {
                truncated()
            } else {
                FileError::Header {
                    path: path.to_owned(),
                    field: p.field,
                    why: p.why,
                }
            }
        })?;
        header.check().map_err(|p| FileError::Header {
            path: path.to_owned(),
            field: p.field,
            why: p.why,
        })?;
        let l = &header.layout;
        let metadata = match usize::try_from(l.metadata_len) {
            Err(_) => Err(UnreadableMetadata::TooLong {
                len: l.metadata_len,
            }),
            Ok(len) => {
                let bytes = self.read_at(l.metadata_offset, len, path)?;
                if bytes.len() < len {
                    Err(UnreadableMetadata::Truncated {
                        got: bytes.len(),
                        len,
                    })
                } else if super::header::fnv1a64(&bytes) != header.metadata_checksum {
                    Err(UnreadableMetadata::Checksum)
                } else {
                    Ok(bytes)
                }
            }
        };
        Ok((header, metadata))
    }

    /// The status word (see `layout::STATUS_OFFSET`), if the file reaches it.
    pub(crate) fn status(&self, path: &Path) -> Result<Option<u64>, FileError> {
        let b = self.read_at(STATUS_OFFSET as u64, 8, path)?;
        Ok(<[u8; 8]>::try_from(b.as_slice())
            .ok()
            .map(u64::from_le_bytes))
    }

    /// The exit record (see `layout::EXIT_OFFSET`): what it says was read
    /// at the exit; nothing where the file ends before it. Read after the
    /// status word that says `EXITED`, which was stored after the record.
    pub(crate) fn exit_time(&self, path: &Path) -> Result<ExitTime, FileError> {
        let b = self.read_at(EXIT_OFFSET as u64, 8 * EXIT_WORDS, path)?;
        let mut words = [0u64; EXIT_WORDS];
        if b.len() == 8 * EXIT_WORDS {
            for (word, bytes) in words.iter_mut().zip(b.chunks_exact(8)) {
                let mut a = [0u8; 8];
                a.copy_from_slice(bytes);
                *word = u64::from_le_bytes(a);
            }
        }
        let [ticks, wall_ns, read] = words;
        Ok(ExitTime {
            ticks: (read & EXIT_HAS_TICKS != 0).then_some(ticks),
            wall_ns: (read & EXIT_HAS_WALL != 0).then_some(wall_ns),
            code: (read & EXIT_HAS_CODE != 0).then_some((read >> EXIT_CODE_SHIFT) as u8),
        })
    }
}
