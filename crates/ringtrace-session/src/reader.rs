//! The session reader: the index, every process directory, every chunk,
//! as `Recovery`s for the dump and the exporters.

use crate::bounded::{self, Unread};
use crate::codec::fnv1a64;
use crate::cpu_read::{self, Owner};
use crate::error::OpenError;
use crate::fsutil;
use crate::halves::Held;
use crate::index::{self, Counters, IndexProblem, IndexProcess, RotatedOut, INDEX_VERSION};
use crate::loss::Loss;
use crate::options::SessionOptions;
use crate::process::{self, ProcessExit};
use crate::shared::{cpu_dir, INDEX, LOCK};
use ringtrace_ring::file::{
    FileClock, LossNote, Recovery, RecoveryParts, UnreadableMetadata, WriterState,
};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most bytes a reader takes of a process's `metadata` or `annex`
/// (256 MiB; a larger one is refused unread): four times the largest
/// metadata annex a ring has, which the annex mirrors record by record.
const MAX_METADATA: u64 = 4 * ringtrace_ring::config::MAX_METADATA_CAPACITY as u64;

/// A session directory, read back.
///
/// [`Session::open`] holds every event of the session in memory (a
/// process's `Recovery` holds its events); chunks are decoded one at a
/// time. [`Session::open_streamed`] reads the index, descriptions and
/// metadata only (and each CPU's last chunks, back to its last event, for
/// the loss notes after it, which no event carries: they are in its
/// recoveries' `loss_notes`), and gives the events a chunk at a time through
/// [`EventSource`](ringtrace_ring::file::EventSource), for a reader whose
/// memory must not grow with the session (the Perfetto export).
///
/// ```
/// use ringtrace_session::{OpenError, Session};
/// let err = Session::open("/nonexistent/session").unwrap_err();
/// assert!(matches!(err, OpenError::NotASession { .. }));
/// ```
#[derive(Debug)]
pub struct Session {
    dir: PathBuf,
    finished: bool,
    live: bool,
    options: SessionOptions,
    processes: Vec<SessionProcess>,
    losses: Vec<Loss>,
    rotated_out: RotatedOut,
    problems: Vec<String>,
    /// Opened streamed: events are read from the chunks when asked for.
    pub(crate) streamed: bool,
    /// Each process's CPU directories and owners.
    pub(crate) owners: Vec<Vec<(PathBuf, Owner)>>,
    /// Problems met while streaming chunks.
    pub(crate) stream_problems: Mutex<Vec<String>>,
}

/// One process of a session, read back.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionProcess {
    /// Its pid.
    pub pid: u32,
    /// Its start time (`/proc/PID/stat` field 22).
    pub start: u64,
    /// Its parent's pid.
    pub ppid: u32,
    /// Its command name.
    pub comm: String,
    /// The clock its events are stamped with.
    pub clock: FileClock,
    /// How it ended; `None`: its writer had not finished it (still
    /// recording, or the recorder died).
    pub exit: Option<ProcessExit>,
    /// What its writer counted per CPU, as of the index's last rewrite.
    pub written: Vec<Counters>,
    /// The same, summed.
    pub written_totals: Counters,
    /// What is wrong with its description, metadata or records, in words
    /// (its CPUs' problems are in its recovery's `cpus`).
    pub problems: Vec<String>,
    recovery: Recovery,
}

impl SessionProcess {
    /// Its events, metadata and problems, as a ring file's recovery.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Whether anything is wrong with it: its description, metadata,
    /// records or any CPU's chunks.
    pub fn has_problems(&self) -> bool {
        !self.problems.is_empty() || self.recovery.has_problems()
    }
}

impl Session {
    /// Reads session directory `dir`: its index, then each process it
    /// names (and any process directory it does not, made just before a
    /// crash), each CPU's chunks in order, finished and open. A writer
    /// that was killed leaves a readable session: open chunks are read up
    /// to their last whole entry. A chunk that cannot be read is a problem
    /// of its CPU, and the rest is read. Each file is read only if it is a
    /// regular file (or a symbolic link to one) no larger than its format
    /// allows: anything else in its place (a FIFO, a device, a file too
    /// large) is a problem naming it, never waited on nor read.
    ///
    /// Errors: not a session (no index), an index of another version, an
    /// index that is corrupt or not a regular file of an index's size, the
    /// directory unreadable: each naming the path.
    pub fn open(dir: impl AsRef<Path>) -> Result<Session, OpenError> {
        Session::read(dir.as_ref(), false)
    }

    /// Reads session directory `dir` as [`open`](Session::open) does,
    /// except the events: each process's recovery has its CPUs with no
    /// events (their `counts.recovered` is what the index counts), and
    /// [`EventSource::batches`](ringtrace_ring::file::EventSource::batches)
    /// reads each CPU's chunks one at a time when asked, so that a reader
    /// that goes through them once holds one chunk per CPU. Problems of
    /// the chunks are known once read: [`stream_problems`](Session::stream_problems).
    ///
    /// ```
    /// use ringtrace_session::{OpenError, Session};
    /// let err = Session::open_streamed("/nonexistent/session").unwrap_err();
    /// assert!(matches!(err, OpenError::NotASession { .. }));
    /// ```
    pub fn open_streamed(dir: impl AsRef<Path>) -> Result<Session, OpenError> {
        Session::read(dir.as_ref(), true)
    }

    /// What was wrong with the chunks streamed so far (with
    /// [`open_streamed`](Session::open_streamed)), in words.
    pub fn stream_problems(&self) -> Vec<String> {
        self.stream_problems
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
    }

    fn read(dir: &Path, streamed: bool) -> Result<Session, OpenError> {
        let dir = dir.to_owned();
        let index_path = dir.join(INDEX);
        let bytes = match bounded::read(&index_path, index::MAX_FILE, "a session index") {
            Ok(b) => b,
            Err(Unread::Io(e))
                if matches!(e.kind(), io::ErrorKind::NotFound)
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                return Err(OpenError::NotASession { dir });
            }
            Err(e) => {
                return Err(OpenError::Io {
                    path: index_path,
                    op: "read",
                    source: e.into_io(),
                })
            }
        };
        let index = index::decode(&bytes).map_err(|p| match p {
            IndexProblem::Version(found) => OpenError::Version {
                path: index_path.clone(),
                found,
                supported: INDEX_VERSION,
            },
            IndexProblem::Bad(b) => OpenError::CorruptIndex {
                path: index_path.clone(),
                field: b.field,
                why: b.why,
            },
        })?;
        let mut names: Vec<String> = index.processes.iter().map(|p| p.dir_name.clone()).collect();
        let entries = fs::read_dir(&dir).map_err(|e| OpenError::Io {
            path: dir.clone(),
            op: "list",
            source: e,
        })?;
        let mut extra: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| is_process_dir(n) && !names.contains(n))
            .collect();
        extra.sort();
        names.extend(extra);
        let mut session = Session {
            live: lock_held(&dir.join(LOCK)),
            dir,
            finished: index.finished,
            options: index.options.clone(),
            processes: Vec::new(),
            losses: Vec::new(),
            rotated_out: RotatedOut::default(),
            problems: Vec::new(),
            streamed,
            owners: Vec::new(),
            stream_problems: Mutex::new(Vec::new()),
        };
        for p in &index.processes {
            for c in &p.cpus {
                session.rotated_out.add(&c.counters.rotated_out);
            }
        }
        for name in names {
            let indexed = index.processes.iter().find(|p| p.dir_name == name);
            session.read_process(&name, indexed);
        }
        session
            .losses
            .sort_by_key(|l| (l.ts, l.pid, l.start, l.cpu));
        Ok(session)
    }

    fn read_process(&mut self, name: &str, indexed: Option<&IndexProcess>) {
        let dir = self.dir.join(name);
        let described = bounded::read(
            &dir.join("process"),
            process::MAX_FILE,
            "a process description",
        )
        .map_err(|e| e.to_string())
        .and_then(|b| process::decode(&b).map_err(|b| format!("{}: {}", b.field, b.why)));
        let described = match described {
            Ok(d) => d,
            Err(why) => {
                self.problems.push(format!(
                    "{name}/process cannot be read, so neither can the process: {why}"
                ));
                return;
            }
        };
        let info = described.info;
        let mut problems = Vec::new();
        if info.dir_name() != name {
            problems.push(format!(
                "its description names process {}, in directory {name}",
                info.dir_name()
            ));
        }
        let metadata = match bounded::read(&dir.join("metadata"), MAX_METADATA, "metadata") {
            Ok(m) if fnv1a64(&m) == info.header.metadata_checksum => Ok(m),
            Ok(_) => Err(UnreadableMetadata::Checksum),
            // Absent: a program with no metadata wrote none.
            Err(Unread::Io(e))
                if e.kind() == io::ErrorKind::NotFound
                    && fnv1a64(&[]) == info.header.metadata_checksum =>
            {
                Ok(Vec::new())
            }
            Err(Unread::Io(e)) => {
                if e.kind() != io::ErrorKind::NotFound {
                    problems.push(format!("{name}/metadata cannot be read: {e}"));
                }
                Err(UnreadableMetadata::Checksum)
            }
            // Something else in its place: said, and unusable.
            Err(e) => {
                problems.push(format!("{name}/metadata cannot be read: {e}"));
                Err(match e {
                    Unread::TooLarge { len, .. } => UnreadableMetadata::TooLong { len },
                    _ => UnreadableMetadata::Checksum,
                })
            }
        };
        let records = match bounded::read(&dir.join("annex"), MAX_METADATA, "an annex") {
            Ok(bytes) => annex_records(&bytes),
            Err(Unread::Io(e)) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                problems.push(format!("{name}/annex cannot be read: {e}"));
                Vec::new()
            }
        };
        let mut cpus = Vec::new();
        let mut owners = Vec::new();
        for cpu in 0..info.header.cpus {
            let kept = indexed.and_then(|p| p.cpus.get(cpu));
            let owner = Owner {
                pid: info.pid,
                start: info.start,
                cpu,
                page_size: info.header.page_size,
                first_kept: kept.map_or(0, |c| c.first_kept),
                rotated: kept.map_or_else(RotatedOut::default, |c| c.counters.rotated_out),
            };
            if self.streamed {
                let mut recovery = ringtrace_ring::file::CpuRecovery::new(cpu);
                if let Some(c) = indexed.and_then(|p| p.cpus.get(cpu)) {
                    recovery.counts.recovered = c
                        .counters
                        .events
                        .saturating_sub(c.counters.rotated_out.events);
                }
                // The losses after the CPU's last event, which no
                // streamed event will carry: read now, from its last
                // chunks back to the last holding an event.
                recovery.loss_notes = cpu_read::trailing_notes(&cpu_dir(&dir, cpu), owner.clone());
                recovery.loss_notes.extend(unwritten_notes(kept));
                owners.push((cpu_dir(&dir, cpu), owner));
                cpus.push(recovery);
                continue;
            }
            owners.push((cpu_dir(&dir, cpu), owner.clone()));
            let mut read = cpu_read::read(&cpu_dir(&dir, cpu), owner);
            if let Some(c) = indexed.and_then(|p| p.cpus.get(cpu)) {
                let expected = c
                    .counters
                    .events
                    .saturating_sub(c.counters.rotated_out.events);
                let got = read.recovery.counts.recovered;
                if expected > got {
                    read.recovery.counts.skipped_unreadable = expected - got;
                    if read.recovery.problems.is_empty() {
                        read.recovery.problems.push(format!(
                            "the index counts {expected} events kept, {got} were read"
                        ));
                    }
                }
            }
            read.recovery.loss_notes.extend(unwritten_notes(kept));
            self.losses.append(&mut read.losses);
            cpus.push(read.recovery);
        }
        let writer = match (described.exit, described.exited_at) {
            // Its ring marked exited (a normal exit with the ring alive),
            // with its time when the ring had it, and the exit code the
            // recorder saw or else the one the exit record kept.
            (Some(ProcessExit::Exited(c)), Some(at)) => {
                let code = u8::try_from(c).ok().or(at.code);
                WriterState::Exited(at.with_code(code))
            }
            // An exit code seen, the ring not marked exited: the program
            // dropped its ring before it exited.
            (Some(ProcessExit::Exited(_)), None) => WriterState::Closed,
            (Some(ProcessExit::Closed), Some(at)) => WriterState::Exited(at),
            (Some(ProcessExit::Closed), None) => WriterState::Closed,
            (Some(ProcessExit::Signaled(_) | ProcessExit::DiedWithRing), _) => WriterState::Died,
            (Some(ProcessExit::Running) | None, _) => WriterState::Live,
        };
        let recovery = Recovery::from_parts(RecoveryParts {
            path: dir,
            header: info.header.clone(),
            metadata,
            writer,
            cpus,
            metadata_records: records,
            annex_problems: Vec::new(),
        });
        let written: Vec<Counters> = indexed
            .map(|p| p.cpus.iter().map(|c| c.counters).collect())
            .unwrap_or_default();
        self.owners.push(owners);
        self.processes.push(SessionProcess {
            pid: info.pid,
            start: info.start,
            ppid: info.ppid,
            comm: info.comm,
            clock: info.header.clock,
            exit: described.exit,
            written_totals: indexed.map(IndexProcess::totals).unwrap_or_default(),
            written,
            problems,
            recovery,
        });
    }

    /// What the session holds of each CPU of process `process` (an index
    /// into [`processes`](Session::processes)), counted from its chunks, a
    /// chunk at a time, whatever the index says (a recorder killed before
    /// its last index write leaves it behind its chunks): what
    /// [`halves::join`](crate::halves::join) needs. Empty for a process
    /// it does not have.
    pub fn held(&self, process: usize) -> Vec<Held> {
        self.owners.get(process).map_or_else(Vec::new, |cpus| {
            cpus.iter()
                .map(|(dir, owner)| cpu_read::held(dir, owner.clone()))
                .collect()
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the writer finished the session (wrote its final index).
    /// False after a crash, or while it records.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Whether a writer holds the session's lock now (it is recording).
    pub fn live(&self) -> bool {
        self.live
    }

    /// The options it was written with.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// Every process, in the order they were added.
    pub fn processes(&self) -> &[SessionProcess] {
        &self.processes
    }

    /// Every loss entry of every process and CPU, in time order (ties: by
    /// pid, start, CPU). Times are each process's clock ticks.
    pub fn losses(&self) -> &[Loss] {
        &self.losses
    }

    /// What `max_size` deleted, over every process.
    pub fn rotated_out(&self) -> RotatedOut {
        self.rotated_out
    }

    /// What is wrong with the session beyond its processes' own problems:
    /// a process directory that cannot be read at all.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Whether anything is wrong: the session's or any process's
    /// problems.
    pub fn has_problems(&self) -> bool {
        !self.problems.is_empty() || self.processes.iter().any(SessionProcess::has_problems)
    }

    /// Each process as a ring file's `Recovery`: its header, metadata and
    /// metadata records, one `CpuRecovery` per CPU with its events in order
    /// (`lost_before` from the pages' `lost` and the loss entries before
    /// each event), and `writer` from how it ended (exited: `Closed`;
    /// signalled or died: `Died`; still running or unknown: `Live`). Each
    /// CPU's `counts.recovered` is the events read, and
    /// `skipped_unreadable` the events the index counted (less those
    /// rotated out) that could not be read; `file_stats` are zero (a
    /// session has no accounting words: its losses are in
    /// [`Session::losses`] and the pages' `lost`).
    pub fn recoveries(&self) -> Vec<Recovery> {
        self.processes.iter().map(|p| p.recovery.clone()).collect()
    }
}

/// Why a CPU's events that its writer drained but could not write (a
/// full file system) are missing, in a loss note's words.
pub const NOT_WRITTEN: &str = "not written (the file system was full)";
/// Why events whose loss a page or entry not written counted are missing
/// from the losses a reader finds in the chunks.
pub const LOSS_NOT_WRITTEN: &str = "lost, their record not written (the file system was full)";

/// What the index counts as drained from a CPU buffer but not written,
/// as loss notes after its last event (when is not recorded): the
/// events of the pages not written, and the losses that pages and
/// entries not written counted; so that a reader's events and counted
/// losses add up to what the program wrote.
fn unwritten_notes(kept: Option<&index::IndexCpu>) -> Vec<LossNote> {
    let u = kept.map(|c| c.counters.unwritten).unwrap_or_default();
    [(u.events, NOT_WRITTEN), (u.lost, LOSS_NOT_WRITTEN)]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| LossNote::new(usize::MAX, n, why))
        .collect()
}

/// `<pid>-<start>`, both decimal.
fn is_process_dir(name: &str) -> bool {
    name.split_once('-').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
    })
}

/// The annex's records: a u32 length and the bytes, repeated, up to the
/// last whole one (a crash leaves at most a torn tail).
fn annex_records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(len) = bytes.get(at..at + 4) {
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let Some(record) = at
            .checked_add(4 + len)
            .and_then(|end| bytes.get(at + 4..end))
        else {
            break;
        };
        if len == 0 {
            break;
        }
        out.push(record.to_vec());
        at += 4 + len;
    }
    out
}

/// Whether another holds `path`'s lock (a writer is recording); not if
/// it is not a regular file.
fn lock_held(path: &Path) -> bool {
    match bounded::open(path) {
        Ok((f, _)) => matches!(fsutil::try_lock(&f), Ok(false)),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annex_records_stop_at_a_torn_tail() {
        let bytes = [&3u32.to_le_bytes()[..], b"abc", &5u32.to_le_bytes(), b"de"].concat();
        assert_eq!(annex_records(&bytes), [b"abc".to_vec()]);
        assert_eq!(annex_records(&bytes[..5]), Vec::<Vec<u8>>::new());
        assert!(is_process_dir("12-345") && !is_process_dir("12-") && !is_process_dir("rings"));
    }
}
