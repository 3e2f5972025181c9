//! Runs a script of operations on a small ring stamped by a
//! [`ScriptClock`], checking every step against the [`model`](crate::model).
//!
//! One thread plays every writer and reader, so reservations left open
//! while others are made are what nesting (a handler writing in the middle
//! of a write), a CPU switch between reserve and commit (the open
//! reservation stays on the buffer it was made on while the writer reserves
//! on another), and a writer that dies (`Forget`) look like to the ring.
//!
//! At every reservation the harness knows the clock's reading, so it
//! checks the timestamp exactly: the reading itself when the clock did not
//! go back since the buffer's last reservation, otherwise that last time,
//! with one more `ts_fixups`. Every reader must then return that same
//! timestamp for the event.

use crate::model::{id_of, payload_for, CpuModel};
use crate::script_clock::{ClockStep, ScriptClock};
use crate::{ensure, Violation};
use arbitrary::Arbitrary;
use ringtrace_ring::{format, Mode, Reservation, ReserveError, RingBuffer, RingConfig};

/// How a reservation's payload is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Fill {
    /// `write`, whole.
    Write,
    /// A `PayloadStream`, 3 bytes at a time.
    Stream,
    /// `write_at`, 4 bytes at a time.
    WriteAt,
    /// `write_at` of the id only: the rest must read back as zeros.
    IdOnly,
}

/// One operation of a script. CPU numbers are taken modulo the ring's
/// CPU count; indexes into the open reservations modulo their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// Reserves `9 + len % 48` bytes on `cpu` and fills them (payloads
    /// longer than a page holds must be refused as `TooLarge`).
    Reserve {
        /// The CPU buffer.
        cpu: u8,
        /// The payload length, less 9.
        len: u8,
        /// How the payload is written.
        fill: Fill,
    },
    /// Commits an open reservation.
    Commit(u8),
    /// Drops an open reservation without commit (a discard record).
    Abandon(u8),
    /// An open reservation's writer dies: it never commits nor drops.
    Forget(u8),
    /// One event through the consuming reader.
    Read(u8),
    /// A whole page through `read_page`.
    ReadPage(u8),
    /// The non-consuming iterator, to its end.
    Iterate(u8),
    /// The iterator, with an event written and committed after each of the
    /// first three it yields.
    IterateWhileWriting(u8),
    /// One event through the merged reader.
    Merged,
    /// A peek, which must name the event the next read returns.
    Peek(u8),
    /// An explicit fixup: takes a closed page still waiting for a commit.
    Fixup(u8),
    /// Closes the CPU buffer's page early; `255` flushes every buffer.
    Flush(u8),
    /// Changes the clock.
    Clock(ClockStep),
}

/// The ring a script runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct Setup {
    /// Overwrite or discard.
    pub overwrite: bool,
    /// Pages of `64 << (page_shift % 3)` bytes: 64, 128 or 256.
    pub page_shift: u8,
    /// `2 + pages % 4` pages per CPU buffer.
    pub pages: u8,
    /// `1 + cpus % 2` CPU buffers.
    pub cpus: u8,
}

impl Setup {
    /// Discard mode, one CPU buffer of two 64-byte pages.
    pub const SMALLEST: Setup = Setup {
        overwrite: false,
        page_shift: 0,
        pages: 0,
        cpus: 0,
    };

    /// The ring's configuration: small pages, no timed fixup (fixups happen
    /// only when the script asks, so a run is deterministic).
    pub fn config(&self) -> RingConfig {
        let page = 64usize << (self.page_shift % 3);
        RingConfig::default()
            .cpus(1 + usize::from(self.cpus % 2))
            .page_size(page)
            .per_cpu_bytes(page * (2 + usize::from(self.pages % 4)))
            .mode(if self.overwrite {
                Mode::Overwrite
            } else {
                Mode::Discard
            })
            .fixup_after(None)
            .quarantine_pages(8)
    }
}

/// What a script did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Operations run.
    pub ops: usize,
    /// Events committed.
    pub committed: u64,
    /// Events consumed by readers.
    pub read: u64,
    /// Timestamps the ring raised (its `ts_fixups`, which the harness
    /// checked against the readings).
    pub ts_fixups: u64,
    /// Events the ring counted lost to fixups.
    pub lost: u64,
    /// Events overwritten before they were read.
    pub overrun: u64,
}

struct Open<'r> {
    cpu: usize,
    id: u64,
    ts: u64,
    reservation: Reservation<'r>,
    expect: Vec<u8>,
}

struct Run<'r> {
    ring: &'r RingBuffer<ScriptClock>,
    clock: &'r ScriptClock,
    page_size: usize,
    cpus: Vec<CpuModel>,
    open: Vec<Open<'r>>,
    next_id: u64,
    hit: u64,
    missed: u64,
    /// Of `missed`, the events too large for a page.
    too_large: u64,
    abandoned: u64,
    ts_fixups: u64,
}

/// Writes `payload` into `r` the way `how` says; returns what the event
/// must read back as.
fn fill(r: &mut Reservation<'_>, payload: Vec<u8>, how: Fill) -> Vec<u8> {
    match how {
        Fill::Write => r.write(&payload),
        Fill::Stream => {
            let mut stream = r.stream();
            for piece in payload.chunks(3) {
                stream.put(piece);
            }
        }
        Fill::WriteAt => {
            for (i, piece) in payload.chunks(4).enumerate() {
                r.write_at(i * 4, piece);
            }
        }
        Fill::IdOnly => {
            r.write_at(0, &payload[..8]);
            let mut expect = payload[..8].to_vec();
            expect.resize(payload.len(), 0);
            return expect;
        }
    }
    payload
}

impl<'r> Run<'r> {
    fn cpu(&self, n: u8) -> usize {
        usize::from(n) % self.cpus.len()
    }

    /// Reserves `len` bytes on `cpu` and checks the timestamp it got.
    fn reserve(
        &mut self,
        cpu: usize,
        len: usize,
        how: Fill,
    ) -> Result<Option<Open<'r>>, Violation> {
        let reading = ringtrace_clock::Clock::read(self.clock);
        let result = self.ring.cpu_writer(cpu).reserve(len);
        self.clock.after_reserve();
        let max = format::max_payload(self.page_size);
        let mut r = match result {
            Ok(r) => r,
            Err(ReserveError::Full | ReserveError::Busy | ReserveError::Preparing)
                if len <= max =>
            {
                self.missed += 1;
                return Ok(None);
            }
            Err(ReserveError::TooLarge { .. }) if len > max => {
                self.missed += 1;
                self.too_large += 1;
                return Ok(None);
            }
            Err(e) => {
                return Err(Violation::new(
                    "a reservation failed wrongly",
                    format!("{len} bytes on cpu {cpu} (largest {max}): {e}"),
                ))
            }
        };
        ensure(len <= max, "an oversized reservation was accepted", || {
            format!("{len} bytes in pages of {} bytes", self.page_size)
        })?;
        let model = &mut self.cpus[cpu];
        let last = model.last_reserved_ts.unwrap_or(0);
        let want = reading.max(last);
        if reading < last {
            self.ts_fixups += 1;
        }
        let ts = r.timestamp();
        ensure(ts == want, "a reservation got the wrong timestamp", || {
            format!("cpu {cpu}: clock read {reading}, last time {last}, stamped {ts}")
        })?;
        model.last_reserved_ts = Some(ts);
        ensure(
            r.cpu() == cpu,
            "a reservation landed on another CPU",
            || format!("asked for {cpu}, got {}", r.cpu()),
        )?;
        let id = self.next_id;
        self.next_id += 1;
        let expect = fill(&mut r, payload_for(id, len), how);
        Ok(Some(Open {
            cpu,
            id,
            ts,
            reservation: r,
            expect,
        }))
    }

    fn commit(&mut self, o: Open<'r>) {
        self.cpus[o.cpu].committed.insert(o.id, (o.ts, o.expect));
        self.hit += 1;
        o.reservation.commit();
    }

    fn see(&mut self, cpu: usize, ts: u64, payload: &[u8], lost: u64) -> Result<(), Violation> {
        ensure(
            cpu < self.cpus.len(),
            "an event came from no CPU buffer",
            || format!("cpu {cpu}"),
        )?;
        // A page stepped over with a reservation open in it: that
        // reservation's commit is counted where the reader is when it
        // lands, as after a fixup.
        if !self.cpus[cpu].fixed_up && self.buffer(cpu).pages_stepped_over() > 0 {
            self.cpus[cpu].fixed_up = true;
        }
        self.cpus[cpu].see(cpu, ts, payload, lost)
    }

    /// The iterator: whatever it yields is committed, intact, at its
    /// timestamp, in order, and after everything consumed so far.
    fn iterate(&mut self, cpu: usize, write_between: bool) -> Result<(), Violation> {
        let mut last = self.cpus[cpu].read.last().copied();
        let mut last_ts = self.cpus[cpu].last_read_ts;
        let ring = self.ring;
        let Some(it) = ring.iter(cpu) else {
            return Err(Violation::new("no iterator", format!("cpu {cpu}")));
        };
        for (n, e) in it.enumerate() {
            let id = id_of(&e.payload)?;
            self.cpus[cpu].check_intact(cpu, id, e.ts, &e.payload)?;
            ensure(last.is_none_or(|l| id > l), "iterator out of order", || {
                format!("cpu {cpu}: event {id} after {last:?}")
            })?;
            ensure(e.ts >= last_ts, "time went back", || {
                format!("cpu {cpu}: iterator gave {} after {last_ts}", e.ts)
            })?;
            ensure(e.lost_before == 0, "an iterator reported a loss", || {
                format!("cpu {cpu}: {} before event {id}", e.lost_before)
            })?;
            last = Some(id);
            last_ts = e.ts;
            if write_between && n < 3 {
                if let Some(o) = self.reserve(cpu, 12, Fill::Write)? {
                    self.commit(o);
                }
            }
        }
        Ok(())
    }

    fn step(&mut self, op: Op) -> Result<(), Violation> {
        let pick = |n: u8, len: usize| usize::from(n) % len;
        match op {
            Op::Reserve { cpu, len, fill } => {
                let cpu = self.cpu(cpu);
                if let Some(o) = self.reserve(cpu, 9 + usize::from(len) % 48, fill)? {
                    self.open.push(o);
                }
            }
            Op::Commit(i) if !self.open.is_empty() => {
                let o = self.open.remove(pick(i, self.open.len()));
                self.commit(o);
            }
            Op::Abandon(i) if !self.open.is_empty() => {
                drop(self.open.remove(pick(i, self.open.len())));
                self.abandoned += 1;
                self.hit += 1;
            }
            Op::Forget(i) if !self.open.is_empty() => {
                std::mem::forget(self.open.remove(pick(i, self.open.len())).reservation);
            }
            Op::Commit(_) | Op::Abandon(_) | Op::Forget(_) => {}
            Op::Read(cpu) => {
                let cpu = self.cpu(cpu);
                if let Some(e) = self.buffer(cpu).read_event() {
                    self.see(e.cpu, e.ts, &e.payload, e.lost_before)?;
                }
            }
            Op::ReadPage(cpu) => {
                let cpu = self.cpu(cpu);
                if let Some(page) = self.buffer(cpu).read_page() {
                    let lost = u64::from(page.header().lost);
                    if page.events().next().is_none() {
                        self.cpus[page.cpu].carried_loss += lost;
                    }
                    for (n, (ts, p)) in page.events().enumerate() {
                        self.see(page.cpu, ts, p, if n == 0 { lost } else { 0 })?;
                    }
                }
            }
            Op::Iterate(cpu) => self.iterate(self.cpu(cpu), false)?,
            Op::IterateWhileWriting(cpu) => self.iterate(self.cpu(cpu), true)?,
            Op::Merged => {
                if let Some(e) = self.ring.merged().next() {
                    self.see(e.cpu, e.ts, &e.payload, e.lost_before)?;
                }
            }
            Op::Peek(cpu) => {
                let cpu = self.cpu(cpu);
                let peeked = self.buffer(cpu).peek_timestamp();
                let read = self.buffer(cpu).read_event();
                ensure(
                    peeked == read.as_ref().map(|e| e.ts),
                    "a peek named another event",
                    || {
                        format!(
                            "cpu {cpu}: peeked {peeked:?}, read {:?}",
                            read.as_ref().map(|e| e.ts)
                        )
                    },
                )?;
                if let Some(e) = read {
                    self.see(e.cpu, e.ts, &e.payload, e.lost_before)?;
                }
            }
            Op::Fixup(cpu) => {
                let cpu = self.cpu(cpu);
                self.cpus[cpu].fixed_up |= self.buffer(cpu).fixup();
            }
            Op::Flush(255) => self.ring.flush(),
            Op::Flush(cpu) => {
                self.buffer(self.cpu(cpu)).flush();
            }
            Op::Clock(step) => self.clock.apply(step),
        }
        self.check_counters()
    }

    fn buffer(&self, cpu: usize) -> &'r ringtrace_ring::CpuBuffer {
        let ring: &'r RingBuffer<ScriptClock> = self.ring;
        &ring.cpu_buffers()[cpu]
    }

    fn check_counters(&self) -> Result<(), Violation> {
        let s = self.ring.stats();
        ensure(
            (s.hit, s.missed, s.too_large, s.discarded)
                == (self.hit, self.missed, self.too_large, self.abandoned),
            "a counter is off",
            || {
                format!(
                    "hit/missed/too_large/discarded {}/{}/{}/{}, expected {}/{}/{}/{}",
                    s.hit,
                    s.missed,
                    s.too_large,
                    s.discarded,
                    self.hit,
                    self.missed,
                    self.too_large,
                    self.abandoned
                )
            },
        )?;
        ensure(
            s.ts_fixups == self.ts_fixups,
            "a timestamp correction went uncounted",
            || format!("ts_fixups {}, expected {}", s.ts_fixups, self.ts_fixups),
        )?;
        // Forgotten reservations never end, and are in no count.
        ensure(
            !self.open.is_empty() || s.hit == s.accounted(),
            "the accounting identity broke",
            || format!("{s:?}"),
        )
    }

    /// Commits what is open, flushes, and drains every buffer, taking out
    /// pages dead writers left; then every committed event must be read,
    /// overwritten, or counted lost.
    fn finish(mut self) -> Result<Outcome, Violation> {
        for o in std::mem::take(&mut self.open) {
            self.commit(o);
        }
        self.ring.flush();
        for cpu in 0..self.cpus.len() {
            loop {
                while let Some(e) = self.buffer(cpu).read_event() {
                    self.see(e.cpu, e.ts, &e.payload, e.lost_before)?;
                }
                if !self.buffer(cpu).fixup() {
                    break;
                }
                self.cpus[cpu].fixed_up = true;
            }
        }
        self.check_counters()?;
        let s = self.ring.stats();
        let committed: u64 = self.cpus.iter().map(|c| c.committed.len() as u64).sum();
        let read: u64 = self.cpus.iter().map(|c| c.read.len() as u64).sum();
        let fixed_up = self.cpus.iter().any(|c| c.fixed_up);
        // A full quarantine refuses further fixups: the reader then waits at
        // the stuck page for good (RingConfig::quarantine_pages), and the
        // events behind it stay in the buffer, counted as entries.
        ensure(
            s.entries == 0 || s.fixups_refused > 0,
            "events stayed behind after the drain",
            || format!("{s:?}"),
        )?;
        ensure(
            fixed_up || s.lost == 0,
            "events were lost with no fixup",
            || format!("{s:?}"),
        )?;
        ensure(s.read == read, "the read count is off", || {
            format!("{} read, stats say {}", read, s.read)
        })?;
        ensure(
            s.read + s.overrun + s.lost + s.entries == committed,
            "a committed event went missing",
            || format!("{committed} committed; {s:?}"),
        )?;
        if self.ring.geometry().mode == Mode::Discard {
            ensure(s.overrun == 0, "discard mode overwrote", || {
                format!("{s:?}")
            })?;
            for (cpu, c) in self.cpus.iter().enumerate() {
                if c.fixed_up || self.buffer(cpu).stats().fixups_refused > 0 {
                    continue;
                }
                let all: Vec<u64> = c.committed.keys().copied().collect();
                ensure(c.read == all, "discard mode lost accepted events", || {
                    format!("cpu {cpu}: read {:?}, committed {all:?}", c.read)
                })?;
            }
        }
        Ok(Outcome {
            ops: 0,
            committed,
            read,
            ts_fixups: s.ts_fixups,
            lost: s.lost,
            overrun: s.overrun,
        })
    }
}

/// Runs `ops` (at most [`MAX_OPS`](crate::MAX_OPS) of them) on a ring set
/// up as `setup` says, with a clock starting at `start`; checks every step
/// and the final drain.
pub fn run(
    setup: Setup,
    start: u64,
    ops: impl IntoIterator<Item = Op>,
) -> Result<Outcome, Violation> {
    let config = setup.config();
    let clock = ScriptClock::at(start);
    let ring = RingBuffer::new(config.clone(), clock.clone()).map_err(|e| {
        Violation::new(
            "a valid configuration was refused",
            format!("{config:?}: {e}"),
        )
    })?;
    let page_size = ring.geometry().page_size;
    let mut run = Run {
        ring: &ring,
        clock: &clock,
        page_size,
        cpus: (0..ring.cpus()).map(|_| CpuModel::default()).collect(),
        open: Vec::new(),
        next_id: 0,
        hit: 0,
        missed: 0,
        too_large: 0,
        abandoned: 0,
        ts_fixups: 0,
    };
    let mut n = 0;
    for op in ops.into_iter().take(crate::MAX_OPS) {
        run.step(op)
            .map_err(|v| Violation::new(v.property, format!("{} (at op {n}: {op:?})", v.detail)))?;
        n += 1;
    }
    let mut outcome = run.finish()?;
    outcome.ops = n;
    Ok(outcome)
}
