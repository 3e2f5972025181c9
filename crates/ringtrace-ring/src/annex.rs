//! The metadata annex: records a higher layer appends at run time (a
//! `tracing` layer's callsite descriptions, learnt one callsite at a
//! time), kept where readers find them: in the ring's file for a file
//! ring, so that a crashed program's trace still decodes, and in memory
//! otherwise (for [`RingBuffer::snapshot`]). Append-only, in order, and
//! bounded by [`RingConfig::metadata_capacity`](crate::RingConfig::metadata_capacity).
//! The records are opaque bytes to the ring.
//!
//! Each record is framed as its length (u32, little-endian), never 0,
//! then its bytes. In a file the framed records follow a committed-length
//! word (u64) that an append stores only after the record's bytes, so a
//! crash mid-append leaves the word covering the earlier records only and
//! the torn one past it, unseen (docs/format.md, "The metadata annex").
//!
//! Appends are serialised by a lock: they are rare (once per callsite),
//! not the hot path, and not async-signal-safe.

use crate::order;
use crate::sync::Mutex;
#[cfg(not(loom))]
use crate::sync::Ordering;

/// Bytes of a record's length word.
pub(crate) const RECORD_HEADER: usize = 4;
/// Bytes of a file annex's committed-length word, before the records.
pub(crate) const COMMITTED_WORD: usize = 8;

/// Why a metadata record was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppendMetadataError {
    /// The record does not fit in what is left of the annex (a ring
    /// without one, `capacity` 0, has room for none).
    Full {
        /// Bytes the record takes: its length plus 4.
        needed: usize,
        /// Bytes left.
        free: usize,
        /// The annex's size ([`RingConfig::metadata_capacity`](crate::RingConfig::metadata_capacity)).
        capacity: usize,
    },
    /// An empty record: a zero length is where the records end.
    Empty,
}

impl std::fmt::Display for AppendMetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            AppendMetadataError::Full {
                needed,
                capacity: 0,
                ..
            } => write!(
                f,
                "the ring has no metadata annex (RingConfig::metadata_capacity is 0), so a record of {needed} bytes cannot be kept; give it a capacity (256 KiB by default)"
            ),
            AppendMetadataError::Full {
                needed,
                free,
                capacity,
            } => write!(
                f,
                "the metadata annex is full: the record needs {needed} bytes (its length plus 4) and {free} of {capacity} are free; raise RingConfig::metadata_capacity"
            ),
            AppendMetadataError::Empty => f.write_str(
                "an empty metadata record is refused: a record holds at least one byte",
            ),
        }
    }
}

impl std::error::Error for AppendMetadataError {}

/// The records framed in `framed`, and why the walk stopped before its
/// end if it did (the records before that point are returned). Never
/// panics, whatever the bytes.
pub(crate) fn parse(framed: &[u8]) -> (Vec<Vec<u8>>, Option<String>) {
    let mut records = Vec::new();
    let mut at = 0usize;
    while at < framed.len() {
        let end = framed.len();
        let Some(word) = framed.get(at..at + RECORD_HEADER) else {
            let why = format!("byte {at}: a record's length is cut off by the end at byte {end}");
            return (records, Some(why));
        };
        let len = u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as usize;
        if len == 0 {
            let why = format!("byte {at}: a record of length 0 (records are never empty)");
            return (records, Some(why));
        }
        let start = at + RECORD_HEADER;
        let Some(bytes) = start.checked_add(len).and_then(|e| framed.get(start..e)) else {
            let why = format!("byte {at}: a record of {len} bytes runs past the end at byte {end}");
            return (records, Some(why));
        };
        records.push(bytes.to_vec());
        at = start + len;
    }
    (records, None)
}

/// Where the framed records are.
#[derive(Debug)]
enum Store {
    /// A memory ring's, grown as records come.
    Memory(Vec<u8>),
    /// A file ring's: views into its map.
    #[cfg(not(loom))]
    File(FileStore),
}

/// A file annex: its committed-length word and the bytes after it.
///
/// A child forked with the ring appends to the same annex as its parent
/// (the map is shared), each with its own copy of the in-process lock: an
/// append also takes a POSIX record lock on the committed word (`lock`, a
/// descriptor of the file), which excludes other processes, and reads the
/// committed length from the file under it rather than from memory of
/// its own.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct FileStore {
    committed: crate::page::zeroed::ZeroedBox<crate::sync::AtomicU64>,
    bytes: crate::page::zeroed::ZeroedSlice<crate::sync::AtomicU8>,
    /// The file, and where in it the committed word is, for the record
    /// lock (`None`: this process alone appends, as in the tests).
    lock: Option<(std::fs::File, u64)>,
}

#[cfg(not(loom))]
impl FileStore {
    /// The annex of a file over `committed` and `bytes` (its capacity), as
    /// the file holds it: empty for a new file, the records of an earlier
    /// run for one appended to. Its writer must be gone (checked by the
    /// caller). A committed length past the capacity, or records that do
    /// not fill it exactly, are what is wrong, in words.
    pub(crate) fn adopt(
        committed: crate::page::zeroed::ZeroedBox<crate::sync::AtomicU64>,
        bytes: crate::page::zeroed::ZeroedSlice<crate::sync::AtomicU8>,
        lock: Option<(std::fs::File, u64)>,
    ) -> Result<FileStore, String> {
        // Relaxed: nothing else touches the words (see above).
        let word = committed.load(Ordering::Relaxed);
        let capacity = bytes.len();
        if usize::try_from(word).map_or(true, |u| u > capacity) {
            return Err(format!(
                "its committed length {word} is past its capacity of {capacity} bytes"
            ));
        }
        let store = FileStore {
            committed,
            bytes,
            lock,
        };
        match parse(&store.framed()) {
            (_, Some(why)) => Err(why),
            (_, None) => Ok(store),
        }
    }

    /// Bytes of records committed, by any process (never past the
    /// capacity, whatever the word says).
    fn used(&self) -> usize {
        // Acquire: pairs with the Release of the append that stored the
        // word (in this process or a forked one), so its bytes are seen.
        let word = self.committed.load(Ordering::Acquire);
        usize::try_from(word).map_or(self.bytes.len(), |u| u.min(self.bytes.len()))
    }

    /// The framed records, copied out.
    fn framed(&self) -> Vec<u8> {
        // Relaxed: covered by the committed word read with Acquire.
        self.bytes[..self.used()]
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// Takes the record lock that excludes other processes' appends, until
    /// the guard is dropped. Without one (no descriptor, or the lock
    /// refused), appends are excluded within this process only.
    fn lock_processes(&self) -> Option<ProcessLock<'_>> {
        let (file, at) = self.lock.as_ref()?;
        ProcessLock::take(file, *at)
    }
}

/// A POSIX record lock on the committed word, released when dropped.
#[cfg(not(loom))]
struct ProcessLock<'f> {
    file: &'f std::fs::File,
    at: u64,
}

#[cfg(not(loom))]
impl<'f> ProcessLock<'f> {
    fn take(file: &'f std::fs::File, at: u64) -> Option<ProcessLock<'f>> {
        if Self::set(file, at, libc::F_WRLCK) {
            Some(ProcessLock { file, at })
        } else {
            None
        }
    }

    /// F_SETLKW of `kind` on the 8 bytes at `at`, retried when a signal
    /// interrupts the wait; whether it was set.
    fn set(file: &std::fs::File, at: u64, kind: libc::c_int) -> bool {
        use std::os::fd::AsRawFd;
        let Ok(start) = libc::off_t::try_from(at) else {
            return false;
        };
        // SAFETY: a zeroed flock is a valid value of the plain C struct.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = kind as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = start;
        lock.l_len = COMMITTED_WORD as libc::off_t;
        loop {
            // SAFETY: the descriptor is open (owned by `file`) and `lock`
            // is a valid flock for F_SETLKW to read.
            let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLKW, &lock) };
            if r == 0 {
                return true;
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }
}

#[cfg(not(loom))]
impl Drop for ProcessLock<'_> {
    fn drop(&mut self) {
        Self::set(self.file, self.at, libc::F_UNLCK);
    }
}

/// A ring's metadata annex.
#[derive(Debug)]
pub(crate) struct Annex {
    capacity: usize,
    store: Mutex<Store>,
}

impl Annex {
    /// An empty annex of `capacity` bytes in memory.
    pub(crate) fn in_memory(capacity: usize) -> Annex {
        Annex {
            capacity,
            store: Mutex::new(Store::Memory(Vec::new())),
        }
    }

    /// The annex of a file ring.
    #[cfg(not(loom))]
    pub(crate) fn in_file(store: FileStore) -> Annex {
        Annex {
            capacity: store.bytes.len(),
            store: Mutex::new(Store::File(store)),
        }
    }

    /// Bytes of records so far (each with its length word): grows with
    /// every append, so a reader can tell there are new ones cheaply.
    pub(crate) fn len(&self) -> usize {
        match &*self.store.lock() {
            Store::Memory(framed) => framed.len(),
            #[cfg(not(loom))]
            Store::File(f) => f.used(),
        }
    }

    /// Appends `record`, or says why not.
    pub(crate) fn append(&self, record: &[u8]) -> Result<(), AppendMetadataError> {
        if record.is_empty() {
            return Err(AppendMetadataError::Empty);
        }
        let mut store = self.store.lock();
        match &mut *store {
            Store::Memory(framed) => {
                let len = self.fits(record, framed.len())?;
                framed.extend_from_slice(&len.to_le_bytes());
                framed.extend_from_slice(record);
            }
            #[cfg(not(loom))]
            Store::File(f) => {
                let _processes = f.lock_processes();
                // Read under the process lock: a forked process may have
                // appended since.
                let used = f.used();
                let len = self.fits(record, used)?;
                let end = used + RECORD_HEADER + record.len();
                let framed = len.to_le_bytes().into_iter().chain(record.iter().copied());
                for (at, byte) in f.bytes[used..end].iter().zip(framed) {
                    // Relaxed: published by the Release store below.
                    at.store(byte, Ordering::Relaxed);
                }
                // Release: the record's bytes come before the length that
                // covers them, in program order and for the compiler. That
                // is what a crash needs (a killed thread stops between two
                // instructions, and every store it made before reaches the
                // page cache); this process's readers take the lock, and
                // another process's read the word first (Acquire).
                f.committed.store(end as u64, order::ANNEX_COMMITTED);
            }
        }
        Ok(())
    }

    /// `record`'s length word, if it fits after `used` bytes of records.
    fn fits(&self, record: &[u8], used: usize) -> Result<u32, AppendMetadataError> {
        let needed = record.len().saturating_add(RECORD_HEADER);
        let free = self.capacity.saturating_sub(used);
        // A record that fits is under MAX_METADATA_CAPACITY, so its length
        // fits in the u32.
        u32::try_from(record.len())
            .ok()
            .filter(|_| needed <= free)
            .ok_or(AppendMetadataError::Full {
                needed,
                free,
                capacity: self.capacity,
            })
    }

    /// The records so far, in order.
    pub(crate) fn records(&self) -> Vec<Vec<u8>> {
        let store = self.store.lock();
        match &*store {
            Store::Memory(framed) => parse(framed).0,
            #[cfg(not(loom))]
            Store::File(f) => parse(&f.framed()).0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(records: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            out.extend_from_slice(r);
        }
        out
    }

    #[test]
    fn whole_records_parse_back_in_order() {
        let bytes = framed(&[b"a", b"bcd", &[7; 300]]);
        let (records, why) = parse(&bytes);
        assert_eq!(records, vec![b"a".to_vec(), b"bcd".to_vec(), vec![7; 300]]);
        assert_eq!(why, None);
    }

    #[test]
    fn damage_stops_the_parse_with_a_reason_and_keeps_what_came_before() {
        let whole = framed(&[b"one", b"two"]);
        // cut inside the second record's length, then inside its bytes
        for (cut, says) in [(9, "cut off"), (12, "runs past")] {
            let (records, why) = parse(&whole[..cut]);
            assert_eq!(records, vec![b"one".to_vec()]);
            assert!(why.as_deref().unwrap().contains(says), "{why:?}");
        }
        let mut zero = whole.clone();
        zero[7..11].copy_from_slice(&0u32.to_le_bytes());
        let (records, why) = parse(&zero);
        assert_eq!(records, vec![b"one".to_vec()]);
        assert!(why.unwrap().contains("byte 7: a record of length 0"));
        let mut huge = whole;
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(&huge).0, Vec::<Vec<u8>>::new());
    }

    #[test]
    fn a_memory_annex_refuses_what_does_not_fit_and_keeps_the_rest() {
        let annex = Annex::in_memory(10);
        annex.append(b"12345").unwrap();
        assert_eq!(
            annex.append(b"x"),
            Err(AppendMetadataError::Full {
                needed: 5,
                free: 1,
                capacity: 10
            })
        );
        assert_eq!(annex.append(b""), Err(AppendMetadataError::Empty));
        assert_eq!(annex.records(), vec![b"12345".to_vec()]);
        let none = Annex::in_memory(0);
        let err = none.append(b"x").unwrap_err().to_string();
        assert!(err.contains("no metadata annex"), "{err}");
    }
}
