//! Draining a ring's CPU buffers into a session, a round at a time: the
//! pages in place (`CpuBuffer::read_committed_into`), the losses the ring
//! counted with their cause, and the metadata records appended since the
//! last round. Used by the recorder for other processes' ring files and
//! by a program that streams its own ring.

use crate::batch::Batch;
use crate::{LossCause, ProcessWriter, RecordSource, WriteError};
use ringtrace_ring::file::Recovery;
use ringtrace_ring::format::{PageBuilder, PageHeader, PAGE_HEADER};
use ringtrace_ring::{CpuBuffer, DrainedPage, Losses, PageBuf};

/// Pages taken from one CPU buffer before the next is looked at, so that
/// one busy CPU does not hold the others' pages back.
const PAGES_PER_TURN: usize = 256;

/// What one round drained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Pages (or pieces of pages) drained: written, or counted unwritten
    /// when the file system was full.
    pub pages: u64,
    /// Events in them.
    pub events: u64,
    /// Whether an append failed for want of space (ENOSPC, EDQUOT): what
    /// it held is counted unwritten ([`ProcessWriter::summary`]), and the
    /// round went on, as the writer does (see docs/format.md, "A full
    /// disk").
    pub no_space: bool,
}

/// `result`, unless it failed for want of space: that is noted in
/// `no_space` (the writer counts what was not written) and the drain
/// goes on.
fn unless_no_space(result: Result<(), WriteError>, no_space: &mut bool) -> Result<(), WriteError> {
    match result {
        Err(WriteError::NoSpace { .. }) => {
            *no_space = true;
            Ok(())
        }
        other => other,
    }
}

/// Per CPU: what the ring's counters said at the last round, and the
/// losses already written as loss entries.
#[derive(Debug, Clone, Default)]
struct CpuMark {
    counts: Losses,
    /// Time of the last event drained (where a refusal noticed later is
    /// placed).
    last_ts: u64,
    /// Of the losses pages report (overrun, lost), those attributed to a
    /// cause so far.
    overrun_given: u64,
    lost_given: u64,
}

/// Drains one process's ring into its [`ProcessWriter`].
///
/// Losses are written as loss entries, each with its cause, at their
/// place: those a page reports (events overwritten, or lost with a writer
/// that died inside its reservation) just before the page, at its first
/// time; refusals (the ring full, the page to reuse still being written,
/// a blocking writer that gave up) after the last event drained before
/// they were counted. The pages' own `lost` field is cleared, so that no
/// reader counts a loss twice.
#[derive(Debug)]
pub struct Drainer {
    marks: Vec<CpuMark>,
    records: usize,
    /// One CPU's entries of a round, written together.
    batch: Batch,
    /// The page being drained, its allocation kept between pages.
    page: PageBuf,
}

impl Drainer {
    /// A drainer for a ring of `cpus` CPU buffers, none of whose records
    /// or losses were written yet.
    pub fn new(cpus: usize) -> Drainer {
        Drainer {
            marks: vec![CpuMark::default(); cpus],
            records: 0,
            batch: Batch::default(),
            page: PageBuf {
                cpu: 0,
                bytes: Vec::new(),
            },
        }
    }

    /// Drains what is readable now from `buffers` into `out`, then the
    /// refusals counted meanwhile. After each page it reads the ring's
    /// metadata `records` and writes those not written yet before the
    /// page, so that an event is appended after the record it needs; then
    /// it hands the page and the records to `on_page` too (a live view).
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_session::{Drainer, ProcessInfo, RingRecords, SessionOptions, SessionWriter};
    ///
    /// let dir = std::env::temp_dir().join(format!("ringtrace-doc-drain-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let config = RingConfig::default().cpus(1).metadata_capacity(4096);
    /// let ring = RingBuffer::new(config, Counter::new())?;
    /// let session = SessionWriter::create(&dir, SessionOptions::default())?;
    /// let info = ProcessInfo {
    ///     pid: std::process::id(),
    ///     start: 0,
    ///     ppid: 0,
    ///     comm: "example".into(),
    ///     header: ring.snapshot(Vec::new()).header,
    ///     metadata: Vec::new(),
    /// };
    /// let mut out = session.add_process(info)?;
    /// ring.append_metadata(b"callsite 1")?;
    /// ring.cpu_writer(0).write(b"event of callsite 1")?;
    /// ring.flush();
    /// let mut drainer = Drainer::new(ring.cpus());
    /// let mut records = RingRecords::new(&ring);
    /// let drained = drainer.round(ring.cpu_buffers(), &mut records, &mut out, |_page, known| {
    ///     assert_eq!(known, [b"callsite 1".to_vec()]);
    /// })?;
    /// assert_eq!(drained.events, 1);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn round(
        &mut self,
        buffers: &[CpuBuffer],
        records: &mut impl RecordSource,
        out: &mut ProcessWriter,
        mut on_page: impl FnMut(&PageBuf, &[Vec<u8>]),
    ) -> Result<Drained, WriteError> {
        let mut drained = Drained::default();
        // Records the last round left unwritten (appended with no event).
        let written = self.records(records.records(), out);
        unless_no_space(written, &mut drained.no_space)?;
        for (cpu, b) in buffers.iter().enumerate() {
            if cpu >= self.marks.len() {
                break;
            }
            // The turn's pages (and the losses before them) are written
            // together: one write instead of one a page.
            let mut batch = std::mem::take(&mut self.batch);
            let mut page = std::mem::replace(
                &mut self.page,
                PageBuf {
                    cpu,
                    bytes: Vec::new(),
                },
            );
            batch.clear();
            let capacity = u32::try_from(out.info().header.pages_per_cpu).unwrap_or(u32::MAX);
            let mut records_full = false;
            let mut turn = || -> Result<(), WriteError> {
                let (mut pages, mut newest) = (0u32, None);
                for _ in 0..PAGES_PER_TURN {
                    let Some(found) = b.read_committed_into(&mut page) else {
                        break;
                    };
                    // Read after the page: every record its events need.
                    // One the disk has no room for is tried again next
                    // round; the page, read from the ring, is written (or
                    // counted unwritten) all the same.
                    let known = records.records();
                    unless_no_space(self.records(known, out), &mut records_full)?;
                    on_page(&page, known);
                    if found.events > 0 {
                        newest = Some(found.last_ts);
                    }
                    drained.events += self.page(cpu, &mut page, found, b, &mut batch, out)?;
                    drained.pages += 1;
                    pages += 1;
                }
                // How full the buffer was: the pages this turn found
                // waiting, at the newest event among them.
                if let Some(ts) = newest {
                    batch.fill(ts, pages, capacity);
                }
                if !batch.is_empty() {
                    out.append_batch(cpu, &batch)?;
                }
                Ok(())
            };
            let written = turn();
            self.batch = batch;
            self.page = page;
            drained.no_space |= records_full;
            unless_no_space(written, &mut drained.no_space)?;
            if let Some(ts) = out.last_ts(cpu) {
                self.marks[cpu].last_ts = ts;
            }
            let written = self.refusals(cpu, &b.losses(), out);
            unless_no_space(written, &mut drained.no_space)?;
        }
        Ok(drained)
    }

    /// Writes the records of `records` not written yet.
    pub fn records(
        &mut self,
        records: &[Vec<u8>],
        out: &mut ProcessWriter,
    ) -> Result<(), WriteError> {
        for record in records.iter().skip(self.records) {
            out.append_metadata_record(record)?;
            self.records += 1;
        }
        Ok(())
    }

    /// One drained page, added to `batch`: its losses as entries, then
    /// the page, indexed by what the drain `found` of it. Returns its
    /// events.
    fn page(
        &mut self,
        cpu: usize,
        page: &mut PageBuf,
        found: DrainedPage,
        b: &CpuBuffer,
        batch: &mut Batch,
        out: &ProcessWriter,
    ) -> Result<u64, WriteError> {
        let Ok(mut header) = PageHeader::parse(&page.bytes) else {
            return Ok(0);
        };
        if header.lost > 0 {
            let stats = b.losses();
            let mark = &mut self.marks[cpu];
            let lost = u64::from(header.lost);
            // The page reports overrun and lost together; the counters say
            // how much of each has not been given a cause yet.
            let overrun = stats.overrun.saturating_sub(mark.overrun_given).min(lost);
            let died = lost - overrun;
            mark.overrun_given += overrun;
            mark.lost_given += died;
            if overrun > 0 {
                batch.loss(header.base_ts, overrun, LossCause::Overwritten);
            }
            if died > 0 {
                batch.loss(header.base_ts, died, LossCause::WriterDied);
            }
            header.lost = 0;
            header.write_to(&mut page.bytes);
        }
        // Stored up to its data's end: a piece of a page is padded to a
        // power of two for the ring's decoder, which the reader does again.
        let end = match header.commit as usize {
            0 => page.bytes.len(),
            commit => commit.clamp(PAGE_HEADER, page.bytes.len()),
        };
        let summary = crate::page::Summary {
            events: u64::from(found.events),
            first: found.first_ts,
            last: found.last_ts,
            lost: u64::from(header.lost),
        };
        let bytes = &page.bytes[..end];
        debug_assert_eq!(Some(summary), crate::page::summary(bytes));
        batch.page_summarized(cpu, bytes, out.page_size(), summary)
    }

    /// The refusals counted on `cpu` since the last round, by cause.
    fn refusals(
        &mut self,
        cpu: usize,
        now: &Losses,
        out: &mut ProcessWriter,
    ) -> Result<(), WriteError> {
        let mark = &mut self.marks[cpu];
        let before = mark.counts;
        let timed_out = now.timed_out.saturating_sub(before.timed_out);
        let refused = now
            .missed
            .saturating_sub(before.missed)
            .saturating_sub(timed_out);
        let at = mark.last_ts;
        mark.counts = *now;
        if refused > 0 {
            out.append_loss(cpu, at, refused, LossCause::Refused)?;
        }
        if timed_out > 0 {
            out.append_loss(cpu, at, timed_out, LossCause::BlockedTooLong)?;
        }
        Ok(())
    }

    /// What a recovery of the ring file found after its writer died: the
    /// events no drain reached (its slot words say what was consumed), as
    /// pages, and the losses it counted (reservations that never
    /// committed, pages left unreadable) as entries.
    pub fn recovered(
        &mut self,
        recovery: &Recovery,
        page_size: usize,
        out: &mut ProcessWriter,
    ) -> Result<Drained, WriteError> {
        self.records(recovery.metadata_records(), out)?;
        let mut drained = Drained::default();
        for c in &recovery.cpus {
            if c.cpu >= self.marks.len() {
                continue;
            }
            let mut builder = PageBuilder::new(page_size, u64::MAX);
            for e in &c.events {
                if e.lost_before > 0 {
                    if builder.events() > 0 {
                        drained.events += u64::from(builder.events());
                        drained.pages += 1;
                        out.append_page(c.cpu, &builder.finish(0))?;
                    }
                    builder = PageBuilder::new(page_size, u64::MAX);
                    out.append_loss(c.cpu, e.ts, e.lost_before, LossCause::WriterDied)?;
                }
                if !builder.push(e.ts, &e.payload) {
                    drained.events += u64::from(builder.events());
                    drained.pages += 1;
                    out.append_page(c.cpu, &builder.finish(0))?;
                    builder = PageBuilder::new(page_size, u64::MAX);
                    builder.push(e.ts, &e.payload);
                }
            }
            if builder.events() > 0 {
                drained.events += u64::from(builder.events());
                drained.pages += 1;
                out.append_page(c.cpu, &builder.finish(0))?;
            }
            let unreadable = c.counts.skipped_pending + c.counts.skipped_unreadable;
            if unreadable > 0 {
                let at = c.events.last().map_or(self.marks[c.cpu].last_ts, |e| e.ts);
                out.append_loss(c.cpu, at, unreadable, LossCause::WriterDied)?;
            }
            self.refusals(c.cpu, &Losses::from(&c.file_stats), out)?;
        }
        Ok(drained)
    }
}
