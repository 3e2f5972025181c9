//! One process's writer: pages and losses into per-CPU chunks, metadata
//! records into the annex, rotation, and the process's end.

use crate::batch::{Batch, Held};
use crate::chunk::{self, ChunkHeader};
use crate::error::{Unwritten, WriteError};
use crate::fsutil;
use crate::index::{Counters, IndexProcess};
use crate::loss::LossCause;
use crate::open_chunk::{Failed, OpenChunk};
use crate::process::{self, ProcessExit, ProcessInfo};
use crate::shared::{cpu_dir, Shared};
use ringtrace_ring::file::ExitTime;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// What was written for one process, and what was not.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessSummary {
    /// Its pid.
    pub pid: u32,
    /// Its start time.
    pub start: u64,
    /// Per CPU buffer.
    pub cpus: Vec<Counters>,
    /// Summed over its CPUs; `unwritten.metadata_records` too.
    pub totals: Counters,
    /// Metadata records written to its annex.
    pub metadata_records: u64,
}

/// Writes one process into its session. Made by
/// [`SessionWriter::add_process`](crate::SessionWriter::add_process);
/// `Send`, for its drainer thread.
///
/// Every append goes to the `.open` chunk of its CPU with one write, so a
/// writer killed after an append returned loses none of it. An append that
/// fails (a full disk) writes nothing, counts what it held as unwritten
/// (in [`ProcessWriter::summary`] and the index), and the next append tries
/// again.
#[derive(Debug)]
pub struct ProcessWriter {
    shared: Arc<Shared>,
    number: usize,
    info: ProcessInfo,
    dir: PathBuf,
    annex: File,
    annex_len: u64,
    cpus: Vec<CpuStream>,
    finished: bool,
    /// When its ring was marked exited, for its `process` file.
    exited_at: Option<ExitTime>,
    /// A batch of one, for `append_page` and `append_loss` (its
    /// allocations reused from entry to entry).
    one: Batch,
}

#[derive(Debug, Default)]
struct CpuStream {
    next: u32,
    open: Option<OpenChunk>,
    /// The time of the last event appended.
    last_ts: Option<u64>,
}

pub(crate) fn new(
    shared: Arc<Shared>,
    number: usize,
    info: ProcessInfo,
    dir: PathBuf,
    annex: File,
) -> ProcessWriter {
    let cpus = (0..info.header.cpus)
        .map(|_| CpuStream::default())
        .collect();
    ProcessWriter {
        shared,
        number,
        info,
        dir,
        annex,
        annex_len: 0,
        cpus,
        finished: false,
        exited_at: None,
        one: Batch::default(),
    }
}

/// A failed step as the error to return: no space, or the step.
pub(crate) fn write_error(
    path: PathBuf,
    op: &'static str,
    e: io::Error,
    unwritten: Unwritten,
) -> WriteError {
    if fsutil::is_no_space(&e) {
        WriteError::NoSpace { path, unwritten }
    } else {
        WriteError::Io {
            path,
            op,
            source: e,
        }
    }
}

pub(crate) fn summary_of(p: &IndexProcess) -> ProcessSummary {
    ProcessSummary {
        pid: p.pid,
        start: p.start,
        cpus: p.cpus.iter().map(|c| c.counters).collect(),
        totals: p.totals(),
        metadata_records: p.metadata_records,
    }
}

impl ProcessWriter {
    /// The process.
    pub fn info(&self) -> &ProcessInfo {
        &self.info
    }

    /// What was written so far, and what was not.
    pub fn summary(&self) -> ProcessSummary {
        let state = self.shared.state();
        state
            .index
            .processes
            .get(self.number)
            .map_or_else(|| summary_of(&IndexProcess::default()), summary_of)
    }

    /// The ring's page size: the longest page an append takes.
    pub(crate) fn page_size(&self) -> usize {
        self.info.header.page_size
    }

    fn check(&self, cpu: usize) -> Result<(), WriteError> {
        if self.finished {
            return Err(WriteError::Finished {
                what: format!("the process {}", self.info.dir_name()),
            });
        }
        if cpu >= self.cpus.len() {
            return Err(WriteError::NoSuchCpu {
                cpu,
                cpus: self.cpus.len(),
            });
        }
        Ok(())
    }

    /// Updates this process's counters (and, with `cpu`, that CPU's).
    fn count(&self, cpu: usize, f: impl FnOnce(&mut Counters)) -> Unwritten {
        let mut state = self.shared.state();
        let Some(p) = state.index.processes.get_mut(self.number) else {
            return Unwritten::default();
        };
        if let Some(c) = p.cpus.get_mut(cpu) {
            f(&mut c.counters);
        }
        p.totals().unwritten
    }

    /// The time of the last event appended on `cpu` (by a page), if any:
    /// where a drainer places a loss it notices after it.
    pub fn last_ts(&self, cpu: usize) -> Option<u64> {
        self.cpus.get(cpu).and_then(|c| c.last_ts)
    }

    /// Appends a page (or a fragment of one) read from `cpu`'s buffer: a
    /// 32-byte header and records, at most the ring's page size. Its
    /// events are counted (records less `skip`); its bytes are stored as
    /// given, with one write to the CPU's open chunk, which then finishes
    /// if it is due.
    ///
    /// `Ok`: the page is written. An error from the write (`NoSpace`,
    /// `Io`) means it is not, and it is counted as unwritten; a rotation
    /// that fails after the write is not an error here (the chunk stays
    /// open, and [`tick`](ProcessWriter::tick) or
    /// [`finish`](ProcessWriter::finish) report it).
    pub fn append_page(&mut self, cpu: usize, bytes: &[u8]) -> Result<(), WriteError> {
        self.check(cpu)?;
        let mut one = std::mem::take(&mut self.one);
        one.clear();
        let appended = one
            .page(cpu, bytes, self.info.header.page_size)
            .and_then(|_| self.append_batch(cpu, &one));
        self.one = one;
        appended
    }

    /// Appends a loss on `cpu`: `count` events lost at `ts` (clock ticks)
    /// for `cause`. The reader adds it to the `lost_before` of the next
    /// event of that CPU, and lists it in [`Session::losses`].
    ///
    /// [`Session::losses`]: crate::Session::losses
    pub fn append_loss(
        &mut self,
        cpu: usize,
        ts: u64,
        count: u64,
        cause: LossCause,
    ) -> Result<(), WriteError> {
        self.check(cpu)?;
        let mut one = std::mem::take(&mut self.one);
        one.clear();
        one.loss(ts, count, cause);
        let appended = self.append_batch(cpu, &one);
        self.one = one;
        appended
    }

    /// Appends to `cpu`'s chunks how full its buffer was when drained:
    /// `pages` of its `capacity` were waiting, the newest of their events
    /// at `ts`. The reader gives it in
    /// [`CpuRecovery::fill`](ringtrace_ring::file::CpuRecovery::fill).
    /// A [`Drainer`](crate::Drainer) appends one per round that finds
    /// pages.
    pub fn append_fill(
        &mut self,
        cpu: usize,
        ts: u64,
        pages: u32,
        capacity: u32,
    ) -> Result<(), WriteError> {
        self.check(cpu)?;
        let mut one = std::mem::take(&mut self.one);
        one.clear();
        one.fill(ts, pages, capacity);
        let appended = self.append_batch(cpu, &one);
        self.one = one;
        appended
    }

    /// Appends `batch`'s entries, in order, to `cpu`'s chunks: one write
    /// for the entries that go into one chunk (a chunk rotates where a
    /// single append would have rotated it). On a failed write, that
    /// write's entries and the ones after it are counted as unwritten and
    /// the error returned; those before it stay written.
    pub(crate) fn append_batch(&mut self, cpu: usize, batch: &Batch) -> Result<(), WriteError> {
        self.check(cpu)?;
        let rotate_size = self.shared.options.rotate_size;
        let mut from = 0;
        while from < batch.entries.len() {
            let run = self.ensure_open(cpu).and_then(|open| {
                // Entries go in while the chunk is below its rotation size
                // before each, as appended one by one.
                let body = open.body_len();
                let start = batch.start_of(from);
                let mut to = from + 1;
                while to < batch.entries.len()
                    && body + ((batch.entries[to - 1].end - start) as u64) < rotate_size
                {
                    to += 1;
                }
                let entries = batch.entries[from..to]
                    .iter()
                    .enumerate()
                    .map(|(i, e)| ((batch.start_of(from + i) - start) as u64, e.first, e.last));
                open.append_run(&batch.bytes[start..batch.entries[to - 1].end], entries)?;
                Ok(to)
            });
            let to = match run {
                Ok(to) => to,
                Err((path, op, e)) => {
                    let unwritten = self.count(cpu, |c| {
                        for e in &batch.entries[from..] {
                            e.count_unwritten(c);
                        }
                    });
                    return Err(write_error(path, op, e, unwritten));
                }
            };
            let mut last_ts = self.cpus[cpu].last_ts;
            let (mut pages, mut events, mut page_lost) = (0, 0, 0);
            let mut lost_by_cause = [0u64; 4];
            self.count(cpu, |c| {
                for (i, e) in batch.entries[from..to].iter().enumerate() {
                    let len = (e.end - batch.start_of(from + i)) as u64;
                    e.count_written(c, len);
                    match e.held {
                        Held::Page { events: n, lost } => {
                            pages += 1;
                            events += n;
                            page_lost += lost;
                            if n > 0 {
                                last_ts = Some(e.last);
                            }
                        }
                        Held::Loss { count, cause } => lost_by_cause[cause.index()] += count,
                        Held::Fill => {}
                    }
                }
            });
            self.cpus[cpu].last_ts = last_ts;
            if let Some(open) = self.cpus[cpu].open.as_mut() {
                open.pages += pages;
                open.events += events;
                open.page_lost += page_lost;
                for (a, b) in open.lost_by_cause.iter_mut().zip(lost_by_cause) {
                    *a += b;
                }
            }
            self.rotate_after_append(cpu);
            from = to;
        }
        Ok(())
    }

    /// `cpu`'s open chunk, made if it has none.
    fn ensure_open(&mut self, cpu: usize) -> Result<&mut OpenChunk, Failed> {
        let open = match self.cpus[cpu].open.take() {
            Some(open) => open,
            None => {
                let dir = cpu_dir(&self.dir, cpu);
                if !dir.is_dir() {
                    fsutil::mkdir(&dir).map_err(|e| (dir.clone(), "create", e))?;
                }
                let header = ChunkHeader {
                    pid: self.info.pid,
                    cpu: cpu as u32,
                    page_size: self.info.header.page_size as u32,
                    number: self.cpus[cpu].next,
                    start: self.info.start,
                    clock: self.info.header.clock.name.clone(),
                    ..ChunkHeader::default()
                };
                let made = OpenChunk::create(&dir, header)?;
                self.cpus[cpu].next += 1;
                let header_len = chunk::HEADER_LEN as u64;
                self.count(cpu, |c| c.disk_bytes += header_len);
                made
            }
        };
        Ok(self.cpus[cpu].open.insert(open))
    }

    /// Rotates after an append that was written: a rotation that fails
    /// (a full disk) leaves the chunk open, what it holds safe in it; the
    /// next append, [`tick`](ProcessWriter::tick) or
    /// [`finish`](ProcessWriter::finish) tries again, and the last two
    /// report the error.
    fn rotate_after_append(&mut self, cpu: usize) {
        let _ = self.rotate_if_due(cpu, false);
    }

    /// Finishes `cpu`'s open chunk if it is due (by size or age), or
    /// whatever it holds with `now`.
    fn rotate_if_due(&mut self, cpu: usize, now: bool) -> Result<(), WriteError> {
        let options = &self.shared.options;
        let Some(open) = self.cpus[cpu].open.as_ref() else {
            return Ok(());
        };
        let due = now
            || open.body_len() >= options.rotate_size
            || options.rotate_time.is_some_and(|t| open.age() >= t);
        if !due {
            return Ok(());
        }
        match open.finish(options.compression) {
            Ok(done) => {
                self.cpus[cpu].open = None;
                let key = self
                    .info
                    .header
                    .wall_ns_at(done.last_ts)
                    .unwrap_or_else(wall_now);
                self.shared.chunk_finished(self.number, cpu, key, done)
            }
            Err((path, op, e)) => {
                // Kept open: what it holds reads back as an open chunk,
                // and appends go on into it.
                let unwritten = self.count(cpu, |_| {});
                Err(write_error(path, op, e, unwritten))
            }
        }
    }

    /// Finishes every open chunk that has been open `rotate_time` (the
    /// drainer calls it when it has nothing to append). The first error
    /// is returned after trying every CPU.
    pub fn tick(&mut self) -> Result<(), WriteError> {
        let mut first = Ok(());
        for cpu in 0..self.cpus.len() {
            if let Err(e) = self.rotate_if_due(cpu, false) {
                first = first.and(Err(e));
            }
        }
        first
    }

    /// Finishes every open chunk now, whatever its size or age.
    pub fn rotate(&mut self) -> Result<(), WriteError> {
        let mut first = Ok(());
        for cpu in 0..self.cpus.len() {
            if let Err(e) = self.rotate_if_due(cpu, true) {
                first = first.and(Err(e));
            }
        }
        first
    }

    /// Appends a metadata record (opaque bytes, at least one) to the
    /// process's annex: a u32 length and the bytes, with one write.
    pub fn append_metadata_record(&mut self, record: &[u8]) -> Result<(), WriteError> {
        self.check(0)?;
        if record.is_empty() {
            return Err(WriteError::EmptyRecord);
        }
        let len = u32::try_from(record.len())
            .map_err(|_| WriteError::RecordTooLong { len: record.len() })?;
        let bytes = [&len.to_le_bytes()[..], record].concat();
        let path = self.dir.join("annex");
        let state_unwritten = |shared: &Shared, ok: bool| {
            let mut state = shared.state();
            let Some(p) = state.index.processes.get_mut(self.number) else {
                return Unwritten::default();
            };
            if ok {
                p.metadata_records += 1;
            } else {
                p.unwritten_metadata_records += 1;
            }
            p.totals().unwritten
        };
        match self.annex.write_all_at(&bytes, self.annex_len) {
            Ok(()) => {
                self.annex_len += bytes.len() as u64;
                state_unwritten(&self.shared, true);
                Ok(())
            }
            Err(e) => {
                let _ = self.annex.set_len(self.annex_len);
                let unwritten = state_unwritten(&self.shared, false);
                Err(write_error(path, "write", e, unwritten))
            }
        }
    }

    /// Notes that the process's ring was marked exited, at `time` (its
    /// exit handler ran: a normal exit), for the `process` file that
    /// [`finish`](Self::finish) writes: readers then say it exited, and
    /// when.
    pub fn exited_at(&mut self, time: ExitTime) {
        self.exited_at = Some(time);
    }

    /// Ends the process: finishes its open chunks, records how it ended in
    /// its `process` file, and rewrites the index. After an error the
    /// process is still finished (later appends are refused); a chunk that
    /// could not be finished stays open and reads back as one. Returns
    /// what was written, which [`ProcessWriter::summary`] also gives.
    pub fn finish(&mut self, exit: ProcessExit) -> Result<ProcessSummary, WriteError> {
        self.check(0)?;
        let mut first = self.rotate();
        self.finished = true;
        let path = self.dir.join("process");
        let bytes = process::encode(&self.info, Some(exit), self.exited_at);
        let mut replaced = fsutil::replace(&path, &bytes);
        // On a full file system, how the process ended is worth a little
        // of the reserve: without it the session would say it was still
        // running.
        if matches!(&replaced, Err((_, _, e)) if fsutil::is_no_space(e))
            && self.shared.give_up_reserve_step()
        {
            replaced = fsutil::replace(&path, &bytes);
        }
        if let Err((path, op, e)) = replaced {
            let unwritten = self.count(0, |_| {});
            first = first.and(Err(write_error(path, op, e, unwritten)));
        }
        {
            let mut state = self.shared.state();
            if let Some(p) = state.index.processes.get_mut(self.number) {
                p.finished = true;
            }
            if let Err(e) = self.shared.write_index(&state) {
                first = first.and(Err(e));
            }
        }
        first.map(|()| self.summary())
    }
}

fn wall_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
