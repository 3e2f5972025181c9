//! Recovery: every committed event a ring file holds, read back without
//! the program that wrote it, with counts that say what could not be.
//!
//! Each CPU buffer's control words (the state, the counters, the slot and
//! commit words) are read, then the pages they name, then the control
//! words again: a page whose slot or commit word changed in between was
//! being written while it was read (a live ring), and is left out and
//! counted. A file whose writer is dead reads the same twice.

use super::error::{FileError, UnreadableMetadata};
use super::header::FileHeader;
use super::layout::{self as lay};
use super::read::Source;
use super::walk::{walk, Walked};
use crate::event::Event;
use crate::format::PageHeader;
use crate::page::meta::{gen_of, tag_of, Commit, Slot};
use crate::stats::Stats;
use std::path::{Path, PathBuf};

/// What recovery made of one CPU buffer's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RecoveryCounts {
    /// Events read back.
    pub recovered: u64,
    /// Reservations still open when the writer stopped: never committed,
    /// stepped over, never returned.
    pub skipped_pending: u64,
    /// Committed events (by the commit words' count) that could not be read
    /// back: a page whose header was never written, a record that is
    /// corrupt, a page cut off by the file's end.
    pub skipped_unreadable: u64,
    /// Events on pages that changed while they were read (a live ring).
    pub changed_while_read: u64,
}

impl RecoveryCounts {
    fn add(&mut self, o: &RecoveryCounts) {
        self.recovered += o.recovered;
        self.skipped_pending += o.skipped_pending;
        self.skipped_unreadable += o.skipped_unreadable;
        self.changed_while_read += o.changed_while_read;
    }
}

/// One CPU buffer, recovered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CpuRecovery {
    /// The buffer.
    pub cpu: usize,
    /// Its events, oldest first. The first carries in `lost_before` the
    /// events overwritten or lost before it (the file's `overrun + lost`),
    /// as a reader's first event after a loss does.
    pub events: Vec<Event>,
    /// What was read and what was skipped.
    pub counts: RecoveryCounts,
    /// The accounting words as the file holds them (`entries`: what they
    /// leave unread, `hit - read - overrun - lost - discarded`; the
    /// quarantine's size is not in the file and reads 0).
    pub file_stats: Stats,
    /// What is wrong or does not add up, in words.
    pub problems: Vec<String>,
    /// Why events were lost, where a reader knows (a session records each
    /// loss with its cause): each note counts events lost just before
    /// `events[before]` (`before == events.len()`: after the last event),
    /// its share of that event's `lost_before`. Empty for a ring file,
    /// whose losses have no recorded cause.
    pub loss_notes: Vec<LossNote>,
    /// How full the buffer was each time a reader drained it (a session
    /// records one sample per drain round that found pages), in time
    /// order. Empty for a ring file.
    pub fill: Vec<FillSample>,
}

/// How full a CPU buffer was when a reader drained it: `pages` of its
/// `capacity` were waiting, the newest event drained then at `ts` (clock
/// ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FillSample {
    /// The time of the newest event the round drained.
    pub ts: u64,
    /// Pages the round found waiting (at most what one round drains).
    pub pages: u32,
    /// Pages in the buffer's ring.
    pub capacity: u32,
}

impl FillSample {
    /// `pages` of `capacity` waiting at `ts`.
    pub fn new(ts: u64, pages: u32, capacity: u32) -> FillSample {
        FillSample {
            ts,
            pages,
            capacity,
        }
    }
}

/// Events of a CPU buffer lost at one place, and why (see
/// [`CpuRecovery::loss_notes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LossNote {
    /// The index of the event they were lost before; the event count
    /// when they were lost after the last one.
    pub before: usize,
    /// How many.
    pub count: u64,
    /// Why, in words (`refused`, `overwritten`, `blocked too long`,
    /// `writer died`).
    pub why: String,
}

impl LossNote {
    /// `count` events lost before `events[before]`, for `why`.
    pub fn new(before: usize, count: u64, why: impl Into<String>) -> LossNote {
        LossNote {
            before,
            count,
            why: why.into(),
        }
    }
}

impl CpuRecovery {
    /// An empty recovery of buffer `cpu` (no events, zero counts and
    /// accounting words, no problems), for readers of other containers of
    /// pages (a session directory) to fill in through its public fields.
    ///
    /// ```
    /// use ringtrace_ring::file::CpuRecovery;
    /// let mut cpu = CpuRecovery::new(1);
    /// cpu.problems.push("chunk 3 is cut off".to_owned());
    /// assert_eq!((cpu.cpu, cpu.events.len()), (1, 0));
    /// ```
    pub fn new(cpu: usize) -> CpuRecovery {
        CpuRecovery {
            cpu,
            events: Vec::new(),
            counts: RecoveryCounts::default(),
            file_stats: Stats::default(),
            problems: Vec::new(),
            loss_notes: Vec::new(),
            fill: Vec::new(),
        }
    }
}

impl CpuRecovery {
    /// The losses of this CPU buffer that no recovered event carries in
    /// its `lost_before`, so that a reader that sums `lost_before` alone
    /// misses them (see [`Unplaced`] for its parts and where a reader
    /// places each):
    ///
    /// - with no event recovered, the file's `overrun + lost` (which a
    ///   first event would have carried);
    /// - the writes the ring refused, `file_stats.missed` (discard mode
    ///   full, busy, preparing, too large, timed out): a ring file counts
    ///   them but places them on no event, nor records when they were made
    ///   (a session's are in its loss notes instead, its `file_stats`
    ///   being zero);
    /// - the loss notes after the last event (`before >= events.len()`),
    ///   which no later event carries.
    ///
    /// So that "events read + losses carried + unplaced" is what was
    /// written, as ftrace counts refused writes as dropped events.
    ///
    /// ```
    /// use ringtrace_ring::file::{CpuRecovery, LossNote};
    /// let mut cpu = CpuRecovery::new(0);
    /// cpu.file_stats.overrun = 5;
    /// cpu.file_stats.missed = 2;
    /// let u = cpu.unplaced();
    /// assert_eq!((u.no_event, u.refused, u.after_last), (5, 2, 0));
    /// cpu.loss_notes.push(LossNote::new(0, 3, "refused"));
    /// assert_eq!(cpu.unplaced().total(), 10);
    /// ```
    pub fn unplaced(&self) -> Unplaced {
        let no_event = if self.events.is_empty() {
            self.file_stats.overrun.saturating_add(self.file_stats.lost)
        } else {
            0
        };
        let after_last = self
            .loss_notes
            .iter()
            .filter(|n| n.before >= self.events.len())
            .fold(0u64, |sum, n| sum.saturating_add(n.count));
        Unplaced {
            no_event,
            refused: self.file_stats.missed,
            after_last,
        }
    }
}

/// The losses of a CPU buffer that no recovered event carries
/// ([`CpuRecovery::unplaced`]), in parts, as a reader places them: the
/// first at the trace's start, the others at the time of the CPU's last
/// event (at the trace's start when it has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Unplaced {
    /// With no event recovered: the file's `overrun + lost`, which its
    /// first event would have carried. Placed at the trace's start.
    pub no_event: u64,
    /// Writes the ring refused (`file_stats.missed`: discard mode full,
    /// busy, preparing, too large, timed out). A ring file counts them but
    /// does not record when: placed at the CPU's last event, their times
    /// unknown. Zero for a session (its refusals are loss notes).
    pub refused: u64,
    /// Losses noted after the last event (`LossNote::before >=
    /// events.len()`, a session's): at or after the CPU's last event,
    /// placed there.
    pub after_last: u64,
}

impl Unplaced {
    /// Every part.
    pub fn total(&self) -> u64 {
        self.no_event
            .saturating_add(self.refused)
            .saturating_add(self.after_last)
    }

    /// The parts placed at the CPU's last event: `refused + after_last`.
    pub fn trailing(&self) -> u64 {
        self.refused.saturating_add(self.after_last)
    }
}

/// Whether the writer was still at work, and how it ended.
///
/// ```
/// use ringtrace_ring::file::{ExitTime, WriterState};
/// let exited = WriterState::Exited(ExitTime::new(Some(1234), Some(1_700_000_000_000_000_000)));
/// assert!(matches!(exited, WriterState::Exited(t) if t.ticks == Some(1234)));
/// assert_ne!(exited, WriterState::Closed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterState {
    /// The file was still being set up: it holds no ring.
    SettingUp,
    /// The ring was open and its process is gone without exiting normally:
    /// it crashed, was killed by a signal, called `abort()` (a
    /// `panic = "abort"` panic) or `_exit`.
    Died,
    /// The ring is open and its process is alive: the recovery is a
    /// snapshot of a live ring.
    Live,
    /// The ring was dropped by its program. (A file written by a build
    /// from before [`Exited`](WriterState::Exited) also reads closed after
    /// a normal exit with the ring alive.)
    Closed,
    /// The program exited normally (returned from `main`, called
    /// `std::process::exit`, or let a panic unwind out of `main`) with the
    /// ring still alive, at the time given: an exit handler marked the
    /// file. Writers on other threads may have gone on until the process
    /// ended; the reservations they left open are counted as pending
    /// ([`RecoveryCounts::skipped_pending`]), as after a crash.
    Exited(ExitTime),
    /// The status word holds something else (corrupt).
    Unknown(u64),
}

/// When a ring's process exited normally with the ring alive
/// ([`WriterState::Exited`]), as the exit handler read it: the ring's
/// clock between two readings of `CLOCK_REALTIME`, as the header's
/// wall-clock anchor is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExitTime {
    /// The ring clock's reading at the exit, in ticks as events' `ts`
    /// are; `None` when the handler could not read the clock (it
    /// panicked, or the process exited while the ring was being made).
    pub ticks: Option<u64>,
    /// `CLOCK_REALTIME` at the exit (the middle of the readings around
    /// `ticks`), ns since the Unix epoch; `None` when it could not be read.
    pub wall_ns: Option<u64>,
    /// The process's exit code (`exit`'s argument, or 101 for a panic
    /// that unwound out of `main`), where the C library tells it (glibc);
    /// `None` when unknown.
    pub code: Option<u8>,
}

impl ExitTime {
    /// An exit at `ticks` of the ring's clock and `wall_ns` of
    /// `CLOCK_REALTIME`, either unknown, for readers of other containers
    /// of pages to fill in [`WriterState::Exited`].
    pub fn new(ticks: Option<u64>, wall_ns: Option<u64>) -> ExitTime {
        ExitTime {
            ticks,
            wall_ns,
            code: None,
        }
    }

    /// The same exit, with its exit code.
    pub fn with_code(mut self, code: Option<u8>) -> ExitTime {
        self.code = code;
        self
    }

    /// The wall-clock time of the exit, ns since the Unix epoch: the one
    /// read at the exit, or else its ticks placed by `header`'s wall-clock
    /// anchor (when the clock's ticks are time); `None` when neither.
    ///
    /// ```
    /// use ringtrace_ring::file::ExitTime;
    /// # use ringtrace_ring::{RingBuffer, RingConfig};
    /// # let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(8192), ringtrace_clock::Counter::new())?;
    /// # let header = ring.snapshot(Vec::new()).header;
    /// assert_eq!(ExitTime::new(Some(5), Some(42)).wall_ns_or_anchored(&header), Some(42));
    /// // A counter's ticks are not time: no anchor places them.
    /// assert_eq!(ExitTime::new(Some(5), None).wall_ns_or_anchored(&header), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wall_ns_or_anchored(&self, header: &FileHeader) -> Option<u64> {
        self.wall_ns.or_else(|| header.wall_ns_at(self.ticks?))
    }
}

/// Everything recovered from a ring file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Recovery {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: FileHeader,
    /// Its metadata (the tracepoint descriptions), or what is wrong with it.
    pub metadata: Result<Vec<u8>, UnreadableMetadata>,
    /// The writer's state when the file was read.
    pub writer: WriterState,
    /// One entry per CPU buffer.
    pub cpus: Vec<CpuRecovery>,
    /// The metadata records appended at run time (the annex), in order:
    /// those before any damage.
    pub(crate) metadata_records: Vec<Vec<u8>>,
    /// What is wrong with the annex, in words.
    pub(crate) annex_problems: Vec<String>,
}

/// Everything a [`Recovery`] holds, for a reader of another container of
/// pages (a session directory) to build one with [`Recovery::from_parts`].
/// A plain bag of fields: build it with a struct literal.
#[derive(Debug, Clone)]
pub struct RecoveryParts {
    /// Where the events were read from (a file, a directory).
    pub path: PathBuf,
    /// The ring's header: geometry, clock, anchor, pid, command.
    pub header: FileHeader,
    /// Its metadata, or what is wrong with it.
    pub metadata: Result<Vec<u8>, UnreadableMetadata>,
    /// The writer's state when the events were read.
    pub writer: WriterState,
    /// One entry per CPU buffer.
    pub cpus: Vec<CpuRecovery>,
    /// The metadata records appended at run time, in order.
    pub metadata_records: Vec<Vec<u8>>,
    /// What is wrong with those records, in words (empty: nothing).
    pub annex_problems: Vec<String>,
}

impl Recovery {
    /// A recovery made of `parts`, read from somewhere other than a ring
    /// file (ringtrace-session's chunks, say), for the exporters and the
    /// dump that take a [`Recovery`].
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::file::{CpuRecovery, Recovery, RecoveryParts, WriterState};
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(8192), Counter::new())?;
    /// let header = ring.snapshot(Vec::new()).header; // any ring's header
    /// let recovery = Recovery::from_parts(RecoveryParts {
    ///     path: "session/1-2".into(),
    ///     header,
    ///     metadata: Ok(Vec::new()),
    ///     writer: WriterState::Closed,
    ///     cpus: vec![CpuRecovery::new(0)],
    ///     metadata_records: vec![b"callsite".to_vec()],
    ///     annex_problems: Vec::new(),
    /// });
    /// assert_eq!(recovery.metadata_records(), [b"callsite".to_vec()]);
    /// assert!(!recovery.has_problems());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_parts(parts: RecoveryParts) -> Recovery {
        let RecoveryParts {
            path,
            header,
            metadata,
            writer,
            cpus,
            metadata_records,
            annex_problems,
        } = parts;
        Recovery {
            path,
            header,
            metadata,
            writer,
            cpus,
            metadata_records,
            annex_problems,
        }
    }

    /// Every CPU's events in time order (ties: by CPU).
    pub fn merged(&self) -> Vec<&Event> {
        let mut all: Vec<&Event> = self.cpus.iter().flat_map(|c| c.events.iter()).collect();
        all.sort_by_key(|e| (e.ts, e.cpu));
        all
    }

    /// The counts summed over every CPU.
    pub fn totals(&self) -> RecoveryCounts {
        let mut t = RecoveryCounts::default();
        for c in &self.cpus {
            t.add(&c.counts);
        }
        t
    }

    /// The accounting words summed over every CPU.
    pub fn file_stats(&self) -> Stats {
        let mut s = Stats::default();
        for c in &self.cpus {
            s.add(&c.file_stats);
        }
        s
    }

    /// The metadata records appended at run time
    /// ([`RingBuffer::append_metadata`](crate::RingBuffer::append_metadata)),
    /// in the order they were appended: opaque bytes for the layer that
    /// wrote them (a `tracing` layer's callsite descriptions). After damage
    /// to the annex, the records before it ([`Recovery::annex_problems`]
    /// says what).
    pub fn metadata_records(&self) -> &[Vec<u8>] {
        &self.metadata_records
    }

    /// What is wrong with the metadata annex, in words: a committed length
    /// past its capacity, a record running past it, the file's end inside
    /// it. Empty when it is sound.
    pub fn annex_problems(&self) -> &[String] {
        &self.annex_problems
    }

    /// Whether anything is wrong or does not add up.
    pub fn has_problems(&self) -> bool {
        self.metadata.is_err()
            || !self.annex_problems.is_empty()
            || self.cpus.iter().any(|c| !c.problems.is_empty())
    }
}

/// Reads back every committed event of the ring file at `path`.
///
/// Bad files get an error that names the file and the problem: not a
/// regular file, empty, not a ringtrace file, another format version, a
/// header cut off or corrupt. A file whose header is sound but whose body
/// is cut off or damaged is recovered in part, and the events that could
/// not be read are counted. Never panics and never reads outside the file,
/// whatever its bytes.
///
/// ```
/// use ringtrace_clock::Counter;
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("recover.ring");
/// # let _ = std::fs::remove_file(&path);
/// let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024).file(&path), Counter::new())?;
/// ring.write(b"kept")?;
/// std::mem::forget(ring); // as if the process died here
/// let recovered = file::recover(&path)?;
/// assert_eq!(recovered.merged()[0].payload, b"kept");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn recover(path: impl AsRef<Path>) -> Result<Recovery, FileError> {
    let path = path.as_ref();
    recover_from(Source::open(path)?, path)
}

/// [`recover`] from a ring file's bytes already in memory (a copy, or a
/// fuzzer's input); `name` stands for the file in errors. Whatever the
/// bytes: an error or a (partial) recovery, never a panic.
///
/// ```
/// use ringtrace_ring::file::{recover_bytes, FileError};
/// let err = recover_bytes("junk", b"not a ring".to_vec()).unwrap_err();
/// assert!(matches!(err, FileError::NotRingtrace { .. }));
/// ```
pub fn recover_bytes(name: impl AsRef<Path>, bytes: Vec<u8>) -> Result<Recovery, FileError> {
    let path = name.as_ref();
    recover_from(Source::bytes(bytes, path)?, path)
}

fn recover_from(source: Source, path: &Path) -> Result<Recovery, FileError> {
    let (header, metadata) = source.header(path)?;
    let writer = writer_state(&source, path, &header)?;
    // Memory for the result grows with what is found, not with what the
    // header claims.
    let mut cpus = Vec::new();
    for cpu in 0..header.cpus {
        cpus.push(recover_cpu(&source, path, &header, cpu)?);
    }
    // After the events: in a live ring, a record is appended before the
    // events that need it, so each event read has its record.
    let annex = super::annex::read(&source, &header, path)?;
    if source.len < header.layout.file_len {
        if let Some(first) = cpus.first_mut() {
            first.problems.push(format!(
                "the file is {} bytes, cut off before the {} its header says",
                source.len, header.layout.file_len
            ));
        }
    }
    Ok(Recovery {
        path: path.to_owned(),
        header,
        metadata,
        writer,
        cpus,
        metadata_records: annex.records,
        annex_problems: annex.problems,
    })
}

/// The writer's state from the file's status word (a file that ends
/// before it is still being set up), whether its process still runs, and
/// for an exit, the exit record (read after the word).
pub(crate) fn writer_state(
    source: &Source,
    path: &Path,
    header: &FileHeader,
) -> Result<WriterState, FileError> {
    Ok(match source.status(path)? {
        Some(super::STATUS_SETTING_UP) | None => WriterState::SettingUp,
        Some(super::STATUS_OPEN) if super::process_alive(header.pid, &header.comm) => {
            WriterState::Live
        }
        Some(super::STATUS_OPEN) => WriterState::Died,
        Some(super::STATUS_CLOSED) => WriterState::Closed,
        Some(super::STATUS_EXITED) => WriterState::Exited(source.exit_time(path)?),
        Some(other) => WriterState::Unknown(other),
    })
}

/// A little-endian u64 at `at` of `bytes`, 0 past its end.
fn u64_at(bytes: &[u8], at: u64) -> u64 {
    usize::try_from(at)
        .ok()
        .and_then(|at| bytes.get(at..at.checked_add(8)?))
        .map_or(0, |b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
}

/// The control words of one CPU buffer, as read once.
struct Control {
    bytes: Vec<u8>,
}

impl Control {
    fn hot(&self, h: &FileHeader, field: usize) -> u64 {
        u64_at(&self.bytes, h.layout.hot + field as u64)
    }
    fn rare(&self, h: &FileHeader, field: usize) -> u64 {
        u64_at(&self.bytes, h.layout.rare + field as u64)
    }
    /// A rare-line counter past [`lay::RARE_LEN`], where the line has room
    /// for it (zero in older files, whose line was padding there).
    fn rare_newer(&self, h: &FileHeader, field: usize) -> u64 {
        let room = h.layout.slots.saturating_sub(h.layout.rare);
        if room < lay::RARE_WRITTEN as u64 {
            return 0;
        }
        self.rare(h, field)
    }
    fn slot(&self, h: &FileHeader, index: usize) -> u64 {
        u64_at(&self.bytes, h.layout.slots + 8 * index as u64)
    }
    fn commit(&self, h: &FileHeader, phys: usize) -> u64 {
        u64_at(
            &self.bytes,
            h.layout.commits + h.layout.commit_stride * phys as u64,
        )
    }
    /// A page's `hits`, beside its commit word (format version 3; zero in
    /// older files, whose commit lines were padding there).
    fn commit_hits(&self, h: &FileHeader, phys: usize) -> u64 {
        if h.layout.commit_stride < 16 {
            return 0;
        }
        u64_at(
            &self.bytes,
            h.layout.commits + h.layout.commit_stride * phys as u64 + 8,
        )
    }
}

/// A page to decode: where, which lap, how many events to skip.
struct PageTask {
    seq: Option<u64>,
    phys: usize,
    slot_index: Option<usize>,
    consumed: u32,
    commit: Commit,
}

fn recover_cpu(
    source: &Source,
    path: &Path,
    h: &FileHeader,
    cpu: usize,
) -> Result<CpuRecovery, FileError> {
    let base = h.layout.cpu_base(cpu);
    let control_len = h.layout.pages as usize;
    let first = Control {
        bytes: source.read_at(base, control_len, path)?,
    };
    let mut out = CpuRecovery {
        cpu,
        events: Vec::new(),
        counts: RecoveryCounts::default(),
        file_stats: Stats::default(),
        problems: Vec::new(),
        loss_notes: Vec::new(),
        fill: Vec::new(),
    };
    if first.bytes.len() < control_len {
        out.problems.push(
            "the file ends inside this CPU buffer's control words: nothing of it can be read"
                .to_owned(),
        );
        return Ok(out);
    }
    let stats = Stats {
        hit: (0..h.physical_pages())
            .map(|phys| first.commit_hits(h, phys))
            .fold(first.hot(h, lay::HOT_HIT), u64::wrapping_add),
        missed: first.rare(h, lay::RARE_MISSED),
        busy: first.rare_newer(h, lay::RARE_BUSY),
        too_large: first.rare_newer(h, lay::RARE_TOO_LARGE),
        blocked: first.rare_newer(h, lay::RARE_BLOCKED),
        timed_out: first.rare_newer(h, lay::RARE_TIMED_OUT),
        preparing: first.rare_newer(h, lay::RARE_PREPARING),
        pages_stepped_over: 0,
        overrun: first.rare(h, lay::RARE_OVERRUN),
        read: first.rare(h, lay::RARE_READ),
        entries: 0,
        discarded: first.rare(h, lay::RARE_DISCARDED),
        lost: first.rare(h, lay::RARE_LOST),
        ts_fixups: first.rare(h, lay::RARE_TS_FIXUPS),
        pages_reclaimed: first.rare(h, lay::RARE_PAGES_RECLAIMED),
        pages_quarantined: 0,
        fixups_refused: first.rare(h, lay::RARE_FIXUPS_REFUSED),
    };
    let n = h.pages_per_cpu;
    let physical = h.physical_pages();
    let shift = h.page_size.trailing_zeros();
    let write = first.hot(h, lay::HOT_WRITE);
    let tail = {
        let seq = write >> shift;
        if write & (h.page_size as u64 - 1) == 0 {
            seq.saturating_sub(1)
        } else {
            seq
        }
    };
    let mut tasks = Vec::new();
    let reader_page = first.rare(h, lay::RARE_READER_PAGE);
    if reader_page != 0 {
        let phys = (reader_page & 0xFFFF_FFFF).wrapping_sub(1) as usize;
        if phys < physical {
            tasks.push(PageTask {
                seq: None,
                phys,
                slot_index: None,
                consumed: (reader_page >> 32) as u32,
                commit: Commit::unpack(first.commit(h, phys)),
            });
        } else {
            out.problems.push(format!(
                "the reader's page word names page {phys}, of {physical}"
            ));
        }
    }
    for seq in tail.saturating_sub(n as u64 - 1)..=tail {
        let index = (seq % n as u64) as usize;
        let slot = Slot::unpack(first.slot(h, index));
        if slot.gen != gen_of(seq, n) {
            continue; // overwritten (counted in overrun) or never opened
        }
        if slot.phys >= physical {
            out.problems.push(format!(
                "slot {index} names page {}, of {physical}",
                slot.phys
            ));
            continue;
        }
        tasks.push(PageTask {
            seq: Some(seq),
            phys: slot.phys,
            slot_index: Some(index),
            consumed: slot.consumed,
            commit: Commit::unpack(first.commit(h, slot.phys)),
        });
    }
    let pages_at = base + h.layout.pages;
    out.counts.skipped_pending += stepped_pending(h, &first, &tasks, |phys| {
        source.read_at(pages_at + (phys * h.page_size) as u64, h.page_size, path)
    })?;
    let mut pages = Vec::with_capacity(tasks.len());
    for t in &tasks {
        pages.push(source.read_at(pages_at + (t.phys * h.page_size) as u64, h.page_size, path)?);
    }
    let second = Control {
        bytes: source.read_at(base, control_len, path)?,
    };
    // No event of a page is later than the next page's base time (it was
    // opened after every reservation in this one), nor than the state's
    // time as read after the pages (every record they hold was reserved
    // before): a walk that finds one has misread the page.
    let base_ts_of = |seq: u64| {
        let (t, page) = tasks.iter().zip(&pages).find(|(t, _)| t.seq == Some(seq))?;
        let ph = PageHeader::parse(page).ok()?;
        (t.commit.header && ph.seq == seq).then_some(ph.base_ts)
    };
    let state_ts = second.hot(h, lay::HOT_LAST_TS);
    for (t, page) in tasks.iter().zip(&pages) {
        let latest = t
            .seq
            .map(|seq| base_ts_of(seq + 1).map_or(state_ts, |next| next.min(state_ts)));
        let unchanged = second.commit(h, t.phys) == first.commit(h, t.phys)
            && t.slot_index
                .is_none_or(|i| second.slot(h, i) == first.slot(h, i))
            && (t.slot_index.is_some() || second.rare(h, lay::RARE_READER_PAGE) == reader_page);
        let committed = u64::from(t.commit.events.saturating_sub(t.consumed));
        if !unchanged {
            out.counts.changed_while_read += committed;
            continue;
        }
        // Where the state (as read after the pages) is inside this page,
        // the bytes reserved in it: every record the page read holds ends
        // there or before, and a walk that gets there has passed them all.
        let write = second.hot(h, lay::HOT_WRITE);
        let reserved_end = (t.seq == Some(write >> shift) && write & (h.page_size as u64 - 1) != 0)
            .then(|| (write & (h.page_size as u64 - 1)) as usize);
        decode_page(h, t, page, committed, (reserved_end, latest), &mut out);
    }
    // Whatever was overwritten or lost came before what is left: the
    // first event recovered reports it, as a reader's would.
    if let Some(first) = out.events.first_mut() {
        first.lost_before = stats.overrun.saturating_add(stats.lost);
    }
    let entries = i128::from(stats.hit)
        - i128::from(stats.read)
        - i128::from(stats.overrun)
        - i128::from(stats.lost)
        - i128::from(stats.discarded);
    out.file_stats = Stats {
        entries: u64::try_from(entries.max(0)).unwrap_or(u64::MAX),
        ..stats
    };
    let c = &out.counts;
    let found = i128::from(c.recovered + c.skipped_unreadable + c.changed_while_read);
    if found != entries && out.problems.is_empty() {
        out.problems.push(format!(
            "the accounting words leave {entries} events unread (hit {} - read {} - overrun {} - lost {} - discarded {}), but the pages hold {found} (recovered {}, unreadable {}, changed while read {}): off by {}; a writer stopped between its commit and its count, or a claim cut short between its two counts, is off by one each",
            stats.hit, stats.read, stats.overrun, stats.lost, stats.discarded,
            c.recovered, c.skipped_unreadable, c.changed_while_read, found - entries
        ));
    }
    Ok(out)
}

/// Reservations still open in pages an overwrite claim stepped over (in
/// no slot, their commit word STEPPED and short of the page): a writer
/// that stopped in one never came back to commit. Their committed events
/// were counted as overrun when the page was stepped over, so only the
/// open reservations are counted here, as pending.
fn stepped_pending(
    h: &FileHeader,
    control: &Control,
    tasks: &[PageTask],
    mut read_page: impl FnMut(usize) -> Result<Vec<u8>, FileError>,
) -> Result<u64, FileError> {
    let mut pending = 0;
    for phys in 0..h.physical_pages() {
        let word = control.commit(h, phys);
        let commit = Commit::unpack(word);
        if word & crate::page::meta::STEPPED == 0
            || commit.bytes >= h.page_size
            || !commit.header
            || tasks.iter().any(|t| t.phys == phys)
        {
            continue;
        }
        let page = read_page(phys)?;
        if page.len() < h.page_size {
            continue; // cut off by the file's end
        }
        if let Ok(ph) = PageHeader::parse(&page) {
            pending += walk(&page, ph.base_ts).pending;
        }
    }
    Ok(pending)
}

/// The smallest record of an event: a header and four bytes of payload
/// (a short event), or a long event's header and length with none.
const MIN_EVENT: u64 = 8;

fn decode_page(
    h: &FileHeader,
    t: &PageTask,
    page: &[u8],
    committed: u64,
    (reserved_end, latest): (Option<usize>, Option<u64>),
    out: &mut CpuRecovery,
) {
    let what = match t.seq {
        Some(seq) => format!("page {seq}"),
        None => "the reader's page".to_owned(),
    };
    if page.len() < h.page_size {
        out.counts.skipped_unreadable += committed;
        out.problems
            .push(format!("{what} is cut off by the file's end"));
        return;
    }
    if let Some(seq) = t.seq {
        // The commit word must be this lap's, or the next lap's claim
        // (step 1 done, so the page is complete and still this lap's).
        let gen = gen_of(seq, h.pages_per_cpu);
        let ours = !t.commit.opening && t.commit.tag == tag_of(gen);
        let claimed = t.commit.opening && t.commit.tag == tag_of(gen.wrapping_add(1));
        if !ours && !claimed {
            out.problems
                .push(format!("{what}'s commit word is for another lap"));
            return;
        }
    }
    if !t.commit.header {
        if committed > 0 {
            out.counts.skipped_unreadable += committed;
            out.problems.push(format!(
                "{what}'s header was never written (its writer stopped first): {committed} committed events in it cannot be timed"
            ));
        }
        return;
    }
    let Ok(ph) = PageHeader::parse(page) else {
        out.counts.skipped_unreadable += committed;
        out.problems.push(format!("{what}'s header cannot be read"));
        return;
    };
    if t.seq.is_some_and(|seq| seq != ph.seq) {
        out.counts.skipped_unreadable += committed;
        out.problems
            .push(format!("{what}'s header says page {}", ph.seq));
        return;
    }
    let Walked {
        events,
        pending,
        stopped,
        written_bytes,
        reached_end,
        unwritten_at,
        end,
        ..
    } = walk(page, ph.base_ts);
    let total = events.len() as u64;
    let expected = u64::from(t.commit.events);
    // A walk that passed every record must find what the commit word
    // counts, plus only whole records whose commit never landed (a writer
    // stopped between its last store and its commit): each at least
    // MIN_EVENT bytes. A header damaged into another that still parses
    // makes the walk read the page wrongly from there; it shows as records
    // that do not add up, and then nothing of the page can be trusted.
    let passed_all = reached_end
        || unwritten_at
            .zip(reserved_end)
            .is_some_and(|(at, r)| at >= r);
    // The page the state is in was neither padded nor filled: its records
    // end where its reserved bytes do, or before.
    if let Some(r) = reserved_end.filter(|&r| reached_end || end > r) {
        out.counts.skipped_unreadable += committed;
        out.problems.push(format!(
            "{what} is damaged: its records run to byte {end}, past the {r} bytes reserved in it; none of its events is returned"
        ));
        return;
    }
    let adds_up = !passed_all
        || match (
            written_bytes.checked_sub(t.commit.bytes as u64),
            total.checked_sub(expected),
        ) {
            (Some(extra_bytes), Some(extra_events)) => extra_events * MIN_EVENT <= extra_bytes,
            _ => false,
        };
    if !adds_up {
        out.counts.skipped_unreadable += committed;
        out.problems.push(format!(
            "{what} is damaged: its records add up to {total} events in {written_bytes} bytes, its commit word counts {expected} in {}; none of its events is returned",
            t.commit.bytes
        ));
        return;
    }
    if let Some((ts, latest)) = latest.and_then(|l| Some((events.iter().map(|e| e.0).max()?, l))) {
        if ts > latest {
            out.counts.skipped_unreadable += committed;
            out.problems.push(format!(
                "{what} is damaged: its records reckon a time of {ts}, after {latest}, the next page's start or the writers' last; none of its events is returned"
            ));
            return;
        }
    }
    out.counts.skipped_pending += pending;
    if let Some(why) = stopped {
        out.problems
            .push(format!("{what}: the walk stopped at {why}"));
    } else if let (false, Some(at)) = (passed_all, unwritten_at) {
        if expected > total.max(u64::from(t.consumed)) {
            out.problems.push(format!(
                "{what}: a record header at byte {at} was never written (its writer stopped between its reservation and its first store), so {} committed events after it cannot be reached",
                expected - total.max(u64::from(t.consumed))
            ));
        }
    }
    let kept = events.into_iter().skip(t.consumed as usize);
    let mut recovered = 0;
    for (ts, payload) in kept {
        recovered += 1;
        out.events.push(Event {
            cpu: out.cpu,
            ts,
            payload,
            lost_before: 0,
        });
    }
    out.counts.recovered += recovered;
    // Committed events the walk could not reach: after a header never
    // written (a writer stopped between its reservation and its first
    // store), or after a corrupt record.
    let reached = total.max(u64::from(t.consumed));
    out.counts.skipped_unreadable += expected.saturating_sub(reached);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ts: u64, lost_before: u64) -> Event {
        Event {
            cpu: 0,
            ts,
            payload: vec![1],
            lost_before,
        }
    }

    #[test]
    fn unplaced_counts_what_no_event_carries() {
        let mut c = CpuRecovery::new(0);
        assert_eq!(c.unplaced(), Unplaced::default());
        // No event: the counters a first event would carry, and refusals.
        c.file_stats.overrun = 4;
        c.file_stats.lost = 1;
        c.file_stats.missed = 7;
        let u = c.unplaced();
        assert_eq!((u.no_event, u.refused, u.after_last), (5, 7, 0));
        assert_eq!((u.total(), u.trailing()), (12, 7));
        // With events, the first carries overrun + lost: only refusals.
        c.events = vec![event(1, 5), event(2, 0)];
        let u = c.unplaced();
        assert_eq!((u.no_event, u.refused, u.after_last), (0, 7, 0));
        // A session's notes: those before an event are carried, those
        // after the last are not.
        let mut s = CpuRecovery::new(1);
        s.events = vec![event(1, 3), event(2, 0)];
        s.loss_notes = vec![
            LossNote::new(0, 3, "refused"),
            LossNote::new(2, 6, "refused"),
            LossNote::new(2, 1, "writer died"),
        ];
        let u = s.unplaced();
        assert_eq!((u.no_event, u.refused, u.after_last), (0, 0, 7));
        // Notes past the end (a streamed reader's, with no events held)
        // count as after the last.
        let mut streamed = CpuRecovery::new(2);
        streamed.loss_notes = vec![LossNote::new(usize::MAX, 9, "overwritten")];
        assert_eq!(streamed.unplaced().after_last, 9);
        assert_eq!(streamed.unplaced().total(), 9);
    }
}
