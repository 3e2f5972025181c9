//! Where a drain reads a ring's metadata records (its callsites and
//! tracepoints): after every page it reads, never before.
//!
//! A writer appends a record before the first event that uses it, so the
//! records read after a page are all its events need. Read before the
//! page, as a drain that takes the records once a round would, they can
//! miss one registered meanwhile: the session would then hold the event
//! before its record, and a live view (`ringtrace record --live`,
//! `--endpoint`) would decode the event as unknown.

use ringtrace_clock::Clock;
use ringtrace_ring::file::{FileError, LiveFile};
use ringtrace_ring::RingBuffer;

/// A ring's metadata records as a [`Drainer`](crate::Drainer) reads them.
pub trait RecordSource {
    /// The records appended so far, in order. Called after each page is
    /// read, so an implementation reads them again only when they grew.
    fn records(&mut self) -> &[Vec<u8>];
}

/// A fixed list: a ring that records none, or records known in advance.
impl RecordSource for Vec<Vec<u8>> {
    fn records(&mut self) -> &[Vec<u8>] {
        self
    }
}

/// The records of a ring in this process, read again when its annex grew.
#[derive(Debug)]
pub struct RingRecords<'a, C: Clock> {
    ring: &'a RingBuffer<C>,
    len: Option<usize>,
    records: Vec<Vec<u8>>,
}

impl<'a, C: Clock> RingRecords<'a, C> {
    /// The records of `ring`, none read yet.
    pub fn new(ring: &'a RingBuffer<C>) -> RingRecords<'a, C> {
        RingRecords {
            ring,
            len: None,
            records: Vec::new(),
        }
    }
}

impl<C: Clock> RecordSource for RingRecords<'_, C> {
    fn records(&mut self) -> &[Vec<u8>] {
        // The length first: records appended after it are read too, and
        // the next call, seeing a longer annex, reads them again.
        let len = self.ring.metadata_len();
        if self.len != Some(len) {
            self.records = self.ring.metadata_records();
            self.len = Some(len);
        }
        &self.records
    }
}

/// The records of another process's ring file, read again when its annex
/// grew; kept between rounds (see [`FileRecords::of`]).
#[derive(Debug, Default)]
pub struct FileRecords {
    len: Option<u64>,
    records: Vec<Vec<u8>>,
    error: Option<FileError>,
}

impl FileRecords {
    /// None read yet.
    pub fn new() -> FileRecords {
        FileRecords::default()
    }

    /// A source reading `file`'s annex into these records.
    pub fn of<'a>(&'a mut self, file: &'a LiveFile) -> impl RecordSource + 'a {
        FileSource {
            file,
            records: self,
        }
    }

    /// The records as last read.
    pub fn current(&self) -> &[Vec<u8>] {
        &self.records
    }

    /// Why the annex could not be read, the first time it could not since
    /// the last call; the records read before it stay in use meanwhile.
    pub fn take_error(&mut self) -> Option<FileError> {
        self.error.take()
    }
}

/// [`FileRecords`] with the file they are read from.
struct FileSource<'a> {
    file: &'a LiveFile,
    records: &'a mut FileRecords,
}

impl RecordSource for FileSource<'_> {
    fn records(&mut self) -> &[Vec<u8>] {
        let r = &mut *self.records;
        let len = self.file.metadata_len();
        if r.len != Some(len) {
            match self.file.metadata_records() {
                Ok((records, _problems)) => {
                    r.records = records;
                    r.len = Some(len);
                }
                Err(e) => {
                    r.error.get_or_insert(e);
                }
            }
        }
        &r.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_ring::RingConfig;

    #[test]
    fn ring_records_are_read_again_when_the_annex_grows() {
        let config = RingConfig::default().cpus(1).metadata_capacity(4096);
        let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
        let mut source = RingRecords::new(&ring);
        assert!(source.records().is_empty());
        ring.append_metadata(b"one").unwrap();
        assert_eq!(source.records(), [b"one".to_vec()]);
        ring.append_metadata(b"two").unwrap();
        assert_eq!(source.records(), [b"one".to_vec(), b"two".to_vec()]);
    }
}
