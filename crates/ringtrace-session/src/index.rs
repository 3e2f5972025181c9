//! The session's index (the `session` file): the options it was written
//! with, each process and what its writer counted per CPU, and what was
//! rotated out; both ways.

use crate::codec::{bad, Bad, Put, Take};
use crate::error::Unwritten;
use crate::loss::LossCause;
use crate::options::{Compression, SessionOptions};
use std::time::Duration;

/// The first eight bytes of the index.
pub(crate) const MAGIC: [u8; 8] = *b"RTSESSN\0";
/// The index version this build writes and reads.
pub const INDEX_VERSION: u32 = 1;
/// The most bytes a reader takes of an index (256 MiB; a larger one is
/// refused unread): under 64 bytes of options, 66 bytes a process (its
/// directory's name is at most 31) and 160 a CPU of a process (up to
/// 4096), so room for well over a million process CPUs, far more than a
/// session is recorded with (its writer rewrites the index whole as each
/// chunk finishes).
pub(crate) const MAX_FILE: u64 = 256 << 20;

/// Finished chunks deleted to keep a session under its `max_size`, and
/// what they held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RotatedOut {
    /// Chunks deleted.
    pub chunks: u64,
    /// Pages they held.
    pub pages: u64,
    /// Events in those pages.
    pub events: u64,
    /// Their entries' bytes, uncompressed.
    pub raw_bytes: u64,
    /// Their files' bytes.
    pub disk_bytes: u64,
    /// Events their pages' headers said were lost before them (`lost`).
    pub page_lost: u64,
    /// Events lost by cause, by their loss entries, in the order of
    /// [`LossCause::ALL`]: read with [`RotatedOut::lost`].
    pub(crate) lost_by_cause: [u64; 4],
    /// The latest timestamp they held (0: none), in the process's clock
    /// ticks: the readers place their losses there.
    pub last_ts: u64,
}

impl RotatedOut {
    /// Adds `o` to these.
    pub fn add(&mut self, o: &RotatedOut) {
        self.chunks += o.chunks;
        self.pages += o.pages;
        self.events += o.events;
        self.raw_bytes += o.raw_bytes;
        self.disk_bytes += o.disk_bytes;
        self.page_lost += o.page_lost;
        for (a, b) in self.lost_by_cause.iter_mut().zip(o.lost_by_cause) {
            *a += b;
        }
        self.last_ts = self.last_ts.max(o.last_ts);
    }

    /// Events lost for `cause` by the loss entries of the deleted chunks:
    /// the readers still count them, before the first event kept.
    pub fn lost(&self, cause: LossCause) -> u64 {
        self.lost_by_cause[cause.index()]
    }

    /// Every event the deleted chunks said was lost: their pages' `lost`
    /// and their loss entries'.
    pub fn lost_total(&self) -> u64 {
        self.page_lost + self.lost_by_cause.iter().sum::<u64>()
    }
}

/// What a writer counted for one CPU buffer of one process (or, summed,
/// for a process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counters {
    /// Pages (and fragments of pages) written.
    pub pages: u64,
    /// Events in them (their records less `skip`).
    pub events: u64,
    /// Chunks finished.
    pub chunks: u64,
    /// Bytes of entries written, uncompressed.
    pub raw_bytes: u64,
    /// Bytes on disk: finished chunk files, and what the open chunk holds.
    pub disk_bytes: u64,
    /// Events the pages' headers say were lost before them (`lost`).
    pub page_lost: u64,
    /// Loss entries written.
    pub loss_entries: u64,
    /// Events lost by cause, from the loss entries, in the order of
    /// [`LossCause::ALL`]: read with [`Counters::lost`].
    pub(crate) lost_by_cause: [u64; 4],
    /// What could not be written (a full disk, an I/O error).
    pub unwritten: Unwritten,
    /// What [`SessionOptions::max_size`] deleted.
    pub rotated_out: RotatedOut,
}

impl Counters {
    /// Events lost for `cause`, by the loss entries.
    pub fn lost(&self, cause: LossCause) -> u64 {
        self.lost_by_cause[cause.index()]
    }

    /// Adds `o` to these.
    pub fn add(&mut self, o: &Counters) {
        self.pages += o.pages;
        self.events += o.events;
        self.chunks += o.chunks;
        self.raw_bytes += o.raw_bytes;
        self.disk_bytes += o.disk_bytes;
        self.page_lost += o.page_lost;
        self.loss_entries += o.loss_entries;
        for (a, b) in self.lost_by_cause.iter_mut().zip(o.lost_by_cause) {
            *a += b;
        }
        self.unwritten.pages += o.unwritten.pages;
        self.unwritten.events += o.unwritten.events;
        self.unwritten.losses += o.unwritten.losses;
        self.unwritten.lost += o.unwritten.lost;
        self.unwritten.metadata_records += o.unwritten.metadata_records;
        self.rotated_out.add(&o.rotated_out);
    }

    fn words(&self) -> Vec<u64> {
        let mut w = vec![
            self.pages,
            self.events,
            self.chunks,
            self.raw_bytes,
            self.disk_bytes,
            self.page_lost,
            self.loss_entries,
        ];
        w.extend(self.lost_by_cause);
        let u = &self.unwritten;
        w.extend([u.pages, u.events, u.losses]);
        let r = &self.rotated_out;
        w.extend([r.chunks, r.pages, r.events, r.raw_bytes, r.disk_bytes]);
        w.push(r.page_lost);
        w.extend(r.lost_by_cause);
        w.push(r.last_ts);
        w.push(u.lost);
        w
    }

    fn from_words(w: &[u64]) -> Counters {
        let at = |i: usize| w.get(i).copied().unwrap_or(0);
        let mut c = Counters {
            pages: at(0),
            events: at(1),
            chunks: at(2),
            raw_bytes: at(3),
            disk_bytes: at(4),
            page_lost: at(5),
            loss_entries: at(6),
            lost_by_cause: [at(7), at(8), at(9), at(10)],
            ..Counters::default()
        };
        c.unwritten.pages = at(11);
        c.unwritten.events = at(12);
        c.unwritten.losses = at(13);
        c.rotated_out = RotatedOut {
            chunks: at(14),
            pages: at(15),
            events: at(16),
            raw_bytes: at(17),
            disk_bytes: at(18),
            page_lost: at(19),
            lost_by_cause: [at(20), at(21), at(22), at(23)],
            last_ts: at(24),
        };
        c.unwritten.lost = at(25);
        c
    }
}

/// One CPU buffer of a process in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct IndexCpu {
    /// The lowest chunk number not rotated out: a reader skips chunks
    /// below it (a crash between the index's rewrite and the deletion
    /// leaves them).
    pub first_kept: u32,
    pub counters: Counters,
}

/// One process in the index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct IndexProcess {
    pub dir_name: String,
    pub pid: u32,
    pub start: u64,
    pub finished: bool,
    pub metadata_records: u64,
    pub unwritten_metadata_records: u64,
    pub cpus: Vec<IndexCpu>,
}

impl IndexProcess {
    /// Its counters summed over its CPUs, with its metadata records'.
    pub fn totals(&self) -> Counters {
        let mut t = Counters::default();
        for c in &self.cpus {
            t.add(&c.counters);
        }
        t.unwritten.metadata_records = self.unwritten_metadata_records;
        t
    }
}

/// The whole index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Index {
    /// `SessionWriter::finish` wrote it.
    pub finished: bool,
    pub options: SessionOptions,
    pub processes: Vec<IndexProcess>,
}

/// The index's bytes.
pub(crate) fn encode(index: &Index) -> Vec<u8> {
    let mut p = Put::default();
    p.0.extend_from_slice(&MAGIC);
    p.u32(INDEX_VERSION);
    p.u32(u32::from(index.finished));
    let o = &index.options;
    p.u64(o.rotate_size);
    p.u64(
        o.rotate_time
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
    );
    p.u64(o.max_size.unwrap_or(0));
    let (kind, level) = match o.compression {
        Compression::None => (0, 0),
        Compression::Zstd { level } => (1, level),
    };
    p.u8(kind);
    p.i32(level);
    p.u32(index.processes.len() as u32);
    for proc in &index.processes {
        p.str(&proc.dir_name);
        p.u32(proc.pid);
        p.u64(proc.start);
        p.u8(u8::from(proc.finished));
        p.u64(proc.metadata_records);
        p.u64(proc.unwritten_metadata_records);
        p.u32(proc.cpus.len() as u32);
        for cpu in &proc.cpus {
            p.u32(cpu.first_kept);
            let words = cpu.counters.words();
            p.u32(words.len() as u32);
            for w in words {
                p.u64(w);
            }
        }
    }
    p.checksum();
    p.0
}

/// Why an index cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexProblem {
    /// Another version.
    Version(u32),
    /// A field that cannot be right.
    Bad(Bad),
}

impl From<Bad> for IndexProblem {
    fn from(b: Bad) -> Self {
        IndexProblem::Bad(b)
    }
}

/// Reads an index's bytes. Never panics; memory grows with the bytes
/// there are, not with the counts they claim.
pub(crate) fn decode(bytes: &[u8]) -> Result<Index, IndexProblem> {
    let mut t = Take::new(bytes);
    if t.bytes(8, "magic")? != MAGIC {
        return Err(bad("magic", "not a ringtrace session index").into());
    }
    let version = t.u32("version")?;
    if version != INDEX_VERSION {
        return Err(IndexProblem::Version(version));
    }
    let flags = t.u32("flags")?;
    let rotate_size = t.u64("rotate size")?;
    let rotate_ns = t.u64("rotate time")?;
    let max_size = t.u64("max size")?;
    let compression = match (t.u8("compression")?, t.i32("compression level")?) {
        (0, _) => Compression::None,
        (1, level) => Compression::Zstd { level },
        (other, _) => {
            return Err(bad("compression", format!("{other}, not 0 (none) or 1 (zstd)")).into())
        }
    };
    let options = SessionOptions {
        rotate_size,
        rotate_time: (rotate_ns != 0).then(|| Duration::from_nanos(rotate_ns)),
        max_size: (max_size != 0).then_some(max_size),
        compression,
    };
    let n = t.u32("processes")?;
    let mut processes = Vec::new();
    for _ in 0..n {
        let mut proc = IndexProcess {
            dir_name: t.str("process directory")?,
            pid: t.u32("pid")?,
            start: t.u64("start")?,
            finished: t.u8("finished")? != 0,
            metadata_records: t.u64("metadata records")?,
            unwritten_metadata_records: t.u64("unwritten metadata records")?,
            cpus: Vec::new(),
        };
        let cpus = t.u32("CPUs")?;
        for _ in 0..cpus {
            let first_kept = t.u32("first kept chunk")?;
            let words = t.u32("counters")?;
            let mut w = Vec::new();
            for _ in 0..words {
                w.push(t.u64("counter")?);
            }
            proc.cpus.push(IndexCpu {
                first_kept,
                counters: Counters::from_words(&w),
            });
        }
        processes.push(proc);
    }
    t.checksum()?;
    Ok(Index {
        finished: flags & 1 != 0,
        options,
        processes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_reads_back_and_every_cut_is_an_error() {
        let mut counters = Counters {
            pages: 1,
            events: 2,
            lost_by_cause: [3, 4, 5, 6],
            ..Counters::default()
        };
        counters.unwritten.pages = 7;
        counters.rotated_out.chunks = 8;
        counters.rotated_out.lost_by_cause = [9, 10, 11, 12];
        counters.rotated_out.page_lost = 13;
        counters.rotated_out.last_ts = 14;
        counters.unwritten.lost = 15;
        let index = Index {
            finished: true,
            options: SessionOptions::default().rotate_time(Some(Duration::from_millis(5))),
            processes: vec![IndexProcess {
                dir_name: "12-34".into(),
                pid: 12,
                start: 34,
                finished: false,
                metadata_records: 2,
                unwritten_metadata_records: 1,
                cpus: vec![
                    IndexCpu {
                        first_kept: 3,
                        counters,
                    },
                    IndexCpu::default(),
                ],
            }],
        };
        let bytes = encode(&index);
        assert_eq!(decode(&bytes).unwrap(), index);
        assert_eq!(index.processes[0].totals().lost(LossCause::WriterDied), 6);
        let out = index.processes[0].totals().rotated_out;
        assert_eq!((out.lost(LossCause::Refused), out.lost_total()), (9, 55));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err());
        }
        let mut other = bytes.clone();
        other[8] = 9;
        assert_eq!(decode(&other), Err(IndexProblem::Version(9)));
    }
}
