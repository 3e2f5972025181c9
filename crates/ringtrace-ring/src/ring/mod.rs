//! The ring: one [`CpuBuffer`] per CPU, written on the CPU the writer is on.

use crate::config::{ConfigError, Geometry, RingConfig};
use crate::cpu_buffer::CpuBuffer;
use crate::read::iter::CpuIter;
use crate::read::merge::MergedReader;
use crate::stats::Stats;
use crate::write::error::ReserveError;
use crate::write::reservation::Reservation;
use crate::write::reserve;
#[cfg(ringtrace_rseq)]
use crate::write::{percpu, whole};
use ringtrace_clock::{Clock, ClockInfo, InlineRead};

mod metadata;
#[cfg(not(loom))]
mod snapshot;

/// Per-CPU lock-free ring buffers stamped by one clock.
///
/// ```
/// use ringtrace_clock::Counter;
/// use ringtrace_ring::{RingBuffer, RingConfig};
///
/// // Any clock: Tsc, Mono, a ClockSpec built from a name, or a Counter.
/// let ring = RingBuffer::new(RingConfig::default().per_cpu_bytes(64 * 1024), Counter::new())?;
/// let mut r = ring.reserve(8)?;
/// r.write(&42u64.to_le_bytes());
/// r.commit();
/// let events: Vec<_> = ring.merged().collect();
/// assert_eq!(events[0].payload, 42u64.to_le_bytes());
/// assert_eq!(ring.stats().hit, ring.stats().accounted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RingBuffer<C: Clock> {
    /// The mapped file of a file ring. Declared before `clock`, so dropped
    /// before it (fields drop in declaration order): its drop takes the
    /// clock back from the exit handler (see `file::at_exit`) before the
    /// clock's box is freed.
    #[cfg(not(loom))]
    file: Option<crate::file::RingFile>,
    /// Boxed, so that its address stays put when the ring moves: a file
    /// ring's exit handler reads it at a normal exit (the time of the
    /// exit, in the file's exit record).
    clock: Box<C>,
    /// How the write path reads `clock`, decided once (see
    /// [`Clock::inline_read`]): a clock built from its name costs per event
    /// what the concrete clock does.
    inline_read: InlineRead,
    /// Writes take the whole-event path (`write::whole::write_whole`): the
    /// clock is a bare rdtsc and the buffers are on the rseq path. Decided
    /// once, with the path.
    #[cfg_attr(not(ringtrace_rseq), allow(dead_code))]
    writes_whole: bool,
    buffers: Box<[CpuBuffer]>,
    geometry: Geometry,
    /// The metadata records appended at run time (see `annex`).
    pub(crate) annex: crate::annex::Annex,
    /// The wall-clock anchor taken when the ring was opened (a file ring's
    /// header's): every snapshot carries it.
    #[cfg(not(loom))]
    anchor: crate::file::WallAnchor,
}

impl<C: Clock> RingBuffer<C> {
    /// Builds a ring; a bad configuration is an error naming what is valid.
    ///
    /// With [`RingConfig::file`], the ring is laid out in that file (see
    /// [`crate::file`]); a file that cannot be created is an error naming
    /// it.
    pub fn new(config: RingConfig, clock: C) -> Result<Self, ConfigError> {
        let geometry = config.validate()?;
        crate::sync::check_cpu().map_err(ConfigError::Cpu)?;
        crate::cpu::init();
        let write_path = crate::rseq::resolve(config.write_path, geometry.cpus)?;
        #[cfg(not(loom))]
        if let Some(path) = config.file {
            let target = crate::file::FileTarget {
                path,
                append: config.append,
                metadata: config.metadata,
            };
            return Self::in_file(&target, geometry, clock).map(|r| r.on_path(write_path));
        }
        // loom cannot map files: there a file ring is modelled in memory,
        // with the file ring's claim (it zeroes its page).
        let zero_on_claim = cfg!(loom) && config.file.is_some();
        let buffers = (0..geometry.cpus)
            .map(|cpu| CpuBuffer::anonymous(cpu, geometry, zero_on_claim))
            .collect::<Result<_, _>>()?;
        #[cfg(not(loom))]
        let anchor = crate::file::wall_anchor(&clock);
        Ok(RingBuffer {
            #[cfg(not(loom))]
            file: None,
            inline_read: clock.inline_read(),
            writes_whole: false,
            clock: Box::new(clock),
            buffers,
            geometry,
            annex: crate::annex::Annex::in_memory(geometry.metadata_capacity),
            #[cfg(not(loom))]
            anchor,
        }
        .on_path(write_path))
    }

    /// Sets every buffer's write path, before the ring is shared.
    fn on_path(mut self, path: crate::rseq::Resolved) -> Self {
        for b in self.buffers.iter_mut() {
            b.shared_mut().path_mut().choose(path);
        }
        #[cfg(ringtrace_rseq)]
        {
            self.writes_whole = self.inline_read == InlineRead::Rdtsc
                && matches!(path, crate::rseq::Resolved::Rseq(_));
        }
        self
    }

    /// The write path the ring's writers take (see [`crate::rseq`]):
    /// [`WritePath::Rseq`](crate::WritePath::Rseq) or
    /// [`WritePath::Cas`](crate::WritePath::Cas), never `Auto`.
    pub fn write_path(&self) -> crate::WritePath {
        self.buffers
            .first()
            .map_or(crate::WritePath::Cas, CpuBuffer::write_path)
    }

    /// Updates of per-CPU words made from off their CPU on the rseq path,
    /// summed over the buffers (see [`CpuBuffer::remote_updates`]): each
    /// cost a membarrier system call. 0 on the CAS path.
    pub fn remote_updates(&self) -> u64 {
        self.buffers.iter().map(CpuBuffer::remote_updates).sum()
    }

    /// Times a buffer went into shared mode, summed over the buffers (see
    /// [`CpuBuffer::shared_mode_entries`]): remote updates had come often,
    /// and its writers took locked instructions instead of system calls.
    pub fn shared_mode_entries(&self) -> u64 {
        self.buffers
            .iter()
            .map(CpuBuffer::shared_mode_entries)
            .sum()
    }

    /// Remote updates made in shared mode, without a system call, summed
    /// over the buffers (see [`CpuBuffer::shared_updates`]).
    pub fn shared_updates(&self) -> u64 {
        self.buffers.iter().map(CpuBuffer::shared_updates).sum()
    }

    #[cfg(not(loom))]
    fn in_file(
        target: &crate::file::FileTarget,
        geometry: Geometry,
        clock: C,
    ) -> Result<Self, ConfigError> {
        let info = clock.info();
        let opened = crate::file::RingFile::open(
            target,
            &geometry,
            crate::file::Writer {
                clock: &info,
                anchor: crate::file::wall_anchor(&clock),
            },
        )?;
        let adopt = opened.adopt;
        let path = opened.file.path.clone();
        let buffers = opened
            .memory
            .into_iter()
            .enumerate()
            .map(|(cpu, memory)| {
                if adopt {
                    CpuBuffer::adopt(cpu, geometry, memory).map_err(|why| {
                        crate::file::FileError::Mismatch {
                            path: path.clone(),
                            what: format!(
                                "CPU {cpu}'s control words are inconsistent: {why}; read it with `ringtrace recover` and start a new file"
                            ),
                        }
                    })
                } else {
                    Ok(CpuBuffer::new(cpu, geometry, memory))
                }
            })
            .collect::<Result<_, _>>()?;
        let ring = RingBuffer {
            inline_read: clock.inline_read(),
            writes_whole: false,
            clock: Box::new(clock),
            buffers,
            geometry,
            annex: opened.annex,
            file: Some(opened.file),
            anchor: opened.anchor,
        };
        if let Some(file) = &ring.file {
            // SAFETY: the clock is boxed, so it stays at its address when
            // the ring moves, and it is freed only after `file` is dropped
            // (`file` is declared first, and fields drop in declaration
            // order), whose drop takes it back from the exit handler.
            unsafe { file.set_exit_clock(&*ring.clock) };
            file.set_open();
        }
        Ok(ring)
    }

    /// The wall-clock anchor taken when the ring was opened.
    #[cfg(not(loom))]
    pub(crate) fn anchor(&self) -> crate::file::WallAnchor {
        self.anchor
    }

    /// The file of a file ring.
    #[cfg(not(loom))]
    pub fn file_path(&self) -> Option<&std::path::Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    /// Writes a file ring's dirty pages to disk and waits: what a crash of
    /// the process keeps anyway (the page cache outlives it), a crash of
    /// the machine keeps only after this. Does nothing for an anonymous
    /// ring.
    #[cfg(not(loom))]
    pub fn sync_file(&self) -> std::io::Result<()> {
        self.file.as_ref().map_or(Ok(()), |f| f.sync())
    }

    /// The validated shape of the ring.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The clock events are stamped with.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// What the clock is, to convert timestamps.
    pub fn clock_info(&self) -> ClockInfo {
        self.clock.info()
    }

    /// Number of CPU buffers.
    pub fn cpus(&self) -> usize {
        self.buffers.len()
    }

    /// All CPU buffers.
    pub fn cpu_buffers(&self) -> &[CpuBuffer] {
        &self.buffers
    }

    /// The buffer of `cpu`, if there is one.
    pub fn cpu_buffer(&self, cpu: usize) -> Option<&CpuBuffer> {
        self.buffers.get(cpu)
    }

    #[inline(always)]
    pub(crate) fn buffer_for(&self, cpu: usize) -> &CpuBuffer {
        let n = self.buffers.len();
        // No division on the fast path: a CPU number is almost always below
        // the number of possible CPUs.
        let index = if cpu < n { cpu } else { cpu % n };
        &self.buffers[index]
    }

    /// Reserves `len` payload bytes on the caller's CPU buffer.
    ///
    /// Lock-free, no system call, no allocation; async-signal-safe.
    #[inline]
    pub fn reserve(&self, len: usize) -> Result<Reservation<'_>, ReserveError> {
        let b = self.buffer_for(crate::cpu::current_cpu());
        match self.reserve_in(b, len) {
            Err(e @ (ReserveError::Full | ReserveError::Busy | ReserveError::Preparing))
                if self.blocks() =>
            {
                self.reserve_blocking(b, len, e)
            }
            r => r,
        }
    }

    /// A reservation on `b` refused (`first`: a full buffer, or a busy
    /// page to reuse), tried again for the ring's blocking wait (see
    /// `write::block`).
    #[cold]
    #[inline(never)]
    pub(crate) fn reserve_blocking<'a>(
        &'a self,
        b: &'a CpuBuffer,
        len: usize,
        first: ReserveError,
    ) -> Result<Reservation<'a>, ReserveError> {
        let wait = self.geometry.block_for.unwrap_or_default();
        crate::write::block::wait_for_room(b.shared().rare(), wait, first, || {
            self.reserve_in(b, len)
        })
    }

    /// Reserves on the buffer of `cpu` (taken modulo the buffer count):
    /// `ring.cpu_writer(cpu).reserve(len)`, which is the one way now (see
    /// [`cpu_writer`](Self::cpu_writer) for the cost of writing to another
    /// CPU's buffer).
    #[deprecated(since = "0.2.0", note = "use `ring.cpu_writer(cpu).reserve(len)`")]
    #[inline(always)]
    pub fn reserve_on(&self, cpu: usize, len: usize) -> Result<Reservation<'_>, ReserveError> {
        let b = self.buffer_for(cpu);
        match self.reserve_in(b, len) {
            Err(e @ (ReserveError::Full | ReserveError::Busy | ReserveError::Preparing))
                if self.blocks() =>
            {
                crate::write::block::unwaited(b.shared().rare(), e)
            }
            r => r,
        }
    }

    /// Reserves on `b`, one of this ring's buffers.
    #[inline(always)]
    pub(crate) fn reserve_in<'a>(
        &'a self,
        b: &'a CpuBuffer,
        len: usize,
    ) -> Result<Reservation<'a>, ReserveError> {
        #[cfg(ringtrace_rseq)]
        if self.writes_whole {
            use crate::write::whole::Miss;
            // The claim's parts meet here, from the fast reserve or from a
            // call, and the reservation is made from them once: made in
            // each arm, it would reach the caller through memory, its
            // fields no longer constants for a constant length.
            let claimed = match whole::reserve_whole(
                b.shared(),
                b.shared().path().line(),
                BareRdtsc(&*self.clock),
                len,
            ) {
                Ok(claimed) => claimed,
                Err(Miss::General) => self.reserve_placed(b, len)?,
                Err(Miss::Aborted) => self.reserve_placed_after_abort(b, len)?,
            };
            // SAFETY: claimed for `len`.
            let words = unsafe { claimed.words(len) };
            return Ok(Reservation::new(
                b.shared(),
                words,
                claimed.commit,
                claimed.header,
                len,
                claimed.ts,
            ));
        }
        self.reserve_stamped(b, len)
    }

    /// `write::reserve::reserve` stamped by the ring's clock, read as decided
    /// once (`inline_read`).
    #[inline(always)]
    fn reserve_stamped<'a>(
        &'a self,
        b: &'a CpuBuffer,
        len: usize,
    ) -> Result<Reservation<'a>, ReserveError> {
        let clock = Stamp {
            clock: &*self.clock,
            how: self.inline_read,
        };
        // By value: two words in registers, where a reference would make
        // it live on the stack for the general loop's sake.
        reserve::reserve(b.shared(), clock, len)
    }

    /// The general loop's claim on `b` (`write::whole::reserve_placed`), where
    /// the rseq path's fast reserve missed: out of line, so that its
    /// registers are not saved on every reservation (every page switch
    /// comes here).
    #[cfg(ringtrace_rseq)]
    #[inline(never)]
    fn reserve_placed<'a>(
        &'a self,
        b: &'a CpuBuffer,
        len: usize,
    ) -> Result<crate::write::whole::Claimed<'a>, ReserveError> {
        whole::reserve_placed(b.shared(), BareRdtsc(&*self.clock), len)
    }

    /// A claim whose fast reserve section the kernel aborted: the abort
    /// counted, then the general loop.
    #[cfg(ringtrace_rseq)]
    #[cold]
    #[inline(never)]
    fn reserve_placed_after_abort<'a>(
        &'a self,
        b: &'a CpuBuffer,
        len: usize,
    ) -> Result<crate::write::whole::Claimed<'a>, ReserveError> {
        crate::rseq::section::count_abort();
        whole::reserve_placed(b.shared(), BareRdtsc(&*self.clock), len)
    }

    /// Records `payload` as one event on the caller's CPU; returns its
    /// timestamp. Lock-free, no system call, no allocation;
    /// async-signal-safe.
    ///
    /// The same event as [`reserve`](Self::reserve), a write of the whole
    /// payload and a commit, and on the rseq path with a clock read by a
    /// bare rdtsc ([`InlineRead::Rdtsc`]: `Tsc`, or `"tsc"` by name) the
    /// cheapest way to make one: the event is written in one pass, with
    /// nothing kept between reserve and commit.
    #[inline]
    pub fn write(&self, payload: &[u8]) -> Result<u64, ReserveError> {
        let cpu = crate::cpu::current_cpu();
        match self.write_to(cpu, payload) {
            Err(e @ (ReserveError::Full | ReserveError::Busy | ReserveError::Preparing))
                if self.blocks() =>
            {
                self.write_blocking(self.buffer_for(cpu), payload, e)
            }
            r => r,
        }
    }

    /// A write to `b` refused (`first`: a full buffer, or a busy page to
    /// reuse), tried again for the ring's blocking wait (see
    /// `write::block`).
    #[cold]
    #[inline(never)]
    pub(crate) fn write_blocking(
        &self,
        b: &CpuBuffer,
        payload: &[u8],
        first: ReserveError,
    ) -> Result<u64, ReserveError> {
        let wait = self.geometry.block_for.unwrap_or_default();
        crate::write::block::wait_for_room(b.shared().rare(), wait, first, || {
            self.write_in(b, payload)
        })
    }

    /// Writes `payload` on `b`, one of this ring's buffers.
    #[inline(always)]
    pub(crate) fn write_in(&self, b: &CpuBuffer, payload: &[u8]) -> Result<u64, ReserveError> {
        #[cfg(ringtrace_rseq)]
        if self.writes_whole {
            return self.write_whole(b, payload);
        }
        self.write_reserved(b, payload)
    }

    /// Whether writers wait for room in a full buffer (see
    /// [`RingConfig::block_for`](crate::RingConfig::block_for)).
    #[inline(always)]
    pub(crate) fn blocks(&self) -> bool {
        self.geometry.block_for.is_some()
    }

    /// Records `payload` on the buffer of `cpu` (taken modulo the buffer
    /// count): `ring.cpu_writer(cpu).write(payload)`, which is the one way
    /// now (see [`cpu_writer`](Self::cpu_writer) for the cost of writing to
    /// another CPU's buffer).
    #[deprecated(since = "0.2.0", note = "use `ring.cpu_writer(cpu).write(payload)`")]
    #[inline]
    pub fn write_on(&self, cpu: usize, payload: &[u8]) -> Result<u64, ReserveError> {
        match self.write_to(cpu, payload) {
            Err(e @ (ReserveError::Full | ReserveError::Busy | ReserveError::Preparing))
                if self.blocks() =>
            {
                crate::write::block::unwaited(self.buffer_for(cpu).shared().rare(), e)
            }
            r => r,
        }
    }

    /// Records `payload` on the buffer of `cpu`, taken modulo the buffer
    /// count.
    #[inline]
    pub(crate) fn write_to(&self, cpu: usize, payload: &[u8]) -> Result<u64, ReserveError> {
        #[cfg(ringtrace_rseq)]
        if let (true, Some(b)) = (self.writes_whole, self.buffers.get(cpu)) {
            return self.write_whole(b, payload);
        }
        // Inline, as the reserve, write and commit it is: out of line (as
        // the whole-event path's misses go), the CAS path pays a call and
        // its spills on every event, which the three calls inlined do not.
        self.write_reserved(self.buffer_for(cpu), payload)
    }

    /// The whole-event path on `b`, where `writes_whole`. A miss goes the
    /// general way out of line, a call in tail position for each kind of
    /// miss, so that the fast path keeps no register for it beyond its own
    /// arguments.
    #[cfg(ringtrace_rseq)]
    #[inline(always)]
    pub(crate) fn write_whole(&self, b: &CpuBuffer, payload: &[u8]) -> Result<u64, ReserveError> {
        use crate::write::whole::Miss;
        match whole::write_whole(
            b.shared(),
            b.shared().path().line(),
            BareRdtsc(&*self.clock),
            payload,
        ) {
            Ok(ts) => Ok(ts),
            Err(Miss::General) => self.write_general(b, payload),
            Err(Miss::Aborted) => self.write_after_abort(b, payload),
        }
    }

    /// A whole event whose reserve section the kernel aborted: the abort
    /// counted (an abort handler's count, see
    /// [`crate::rseq::thread_aborts`]), then the general way.
    #[cfg(ringtrace_rseq)]
    #[cold]
    #[inline(never)]
    fn write_after_abort(&self, b: &CpuBuffer, payload: &[u8]) -> Result<u64, ReserveError> {
        crate::rseq::section::count_abort();
        self.write_reserved(b, payload)
    }

    /// [`write_reserved`](Self::write_reserved) out of line, for the
    /// whole-event path's misses: inlined beside it, its registers would be
    /// saved on every event of the fast path too. A miss because the
    /// writer is not on the buffer's CPU holds one remote update across the
    /// event (`CpuBuffer::remote_event`).
    #[cfg(ringtrace_rseq)]
    #[inline(never)]
    pub(crate) fn write_general(&self, b: &CpuBuffer, payload: &[u8]) -> Result<u64, ReserveError> {
        let _remote = percpu::remote_event(b.shared());
        self.write_reserved(b, payload)
    }

    /// Reserve on `b`, write the whole payload, commit: the general way to
    /// write an event.
    #[inline(always)]
    pub(crate) fn write_reserved(
        &self,
        b: &CpuBuffer,
        payload: &[u8],
    ) -> Result<u64, ReserveError> {
        // The general reserve, not `reserve_in`: where the whole-event path
        // is taken, it has just missed, and its reserve would miss again.
        let mut r = self.reserve_stamped(b, payload.len())?;
        r.write(payload);
        let ts = r.timestamp();
        r.commit();
        Ok(ts)
    }

    /// A writer for the buffer of `cpu` (taken modulo the buffer count):
    /// the way to write to a chosen CPU's buffer, whole
    /// ([`CpuWriter::write`](crate::CpuWriter::write)) or in pieces
    /// ([`CpuWriter::reserve`](crate::CpuWriter::reserve)), with
    /// the buffer looked up once. Make one per event or keep it, for a
    /// thread that writes to one CPU's buffer many times (one pinned to
    /// that CPU, say): it is two references.
    ///
    /// On the rseq path ([`write_path`](Self::write_path)), an event on a
    /// buffer other than the caller's CPU's makes remote updates (see
    /// [`remote_updates`](Self::remote_updates)), each a `membarrier`
    /// system call: one for an event written in one call with a bare-rdtsc
    /// clock (`CpuWriter::write`; about half a microsecond on
    /// the 2-vCPU hosts of docs/results.md, far more when several threads
    /// make them at once), two for a reservation and its commit, against
    /// tens of nanoseconds on the caller's own CPU's buffer. A buffer that
    /// gets them often goes into shared mode
    /// ([`CpuBuffer::shared_mode_entries`]), where they make none: then
    /// about 50 ns an event, a few times the CAS path's, and the buffer's
    /// own CPU writes at the CAS path's cost until remote writes stop. A
    /// design in which threads write to buffers not their CPU's all the
    /// time does best on the CAS path
    /// ([`WritePath::Cas`](crate::WritePath::Cas)), where every buffer
    /// costs the same.
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// let ring = RingBuffer::new(RingConfig::default().cpus(2).per_cpu_bytes(64 * 1024), Counter::new())?;
    /// let writer = ring.cpu_writer(1);
    /// writer.write(b"ping")?;
    /// assert_eq!(ring.cpu_buffer(1).unwrap().read_event().unwrap().payload, b"ping");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cpu_writer(&self, cpu: usize) -> crate::CpuWriter<'_, C> {
        crate::CpuWriter::new(self, self.buffer_for(cpu))
    }

    /// Counters summed over every CPU buffer.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        for b in self.buffers.iter() {
            total.add(&b.stats());
        }
        total
    }

    /// A consuming reader over every CPU, in timestamp order.
    pub fn merged(&self) -> MergedReader<'_, C> {
        MergedReader::new(self.buffers.iter().map(|b| (b.shared(), b.reader())))
    }

    /// A non-consuming iterator over the unread events of `cpu`.
    pub fn iter(&self, cpu: usize) -> Option<CpuIter<'_>> {
        self.buffers
            .get(cpu)
            .map(|b| CpuIter::new(b.shared(), b.reader()))
    }

    /// Closes every CPU's open page, so all committed events can be read as
    /// whole pages.
    pub fn flush(&self) {
        for b in self.buffers.iter() {
            b.flush();
        }
    }
}

/// The ring's clock as its write path reads it: through the clock's `read`,
/// or inline as the instruction the clock said it is, decided once per
/// ring (a `match` on a field that never changes predicts perfectly).
struct Stamp<'a, C: Clock> {
    clock: &'a C,
    how: InlineRead,
}

// A reference and an enum: copied whatever C is (a derive would ask C: Copy).
impl<C: Clock> Clone for Stamp<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C: Clock> Copy for Stamp<'_, C> {}

/// The ring's clock when it said it is a bare rdtsc ([`InlineRead::Rdtsc`]):
/// read so, with no call (and so no register saved for one) on the way.
#[cfg(ringtrace_rseq)]
struct BareRdtsc<'a, C: Clock>(&'a C);

#[cfg(ringtrace_rseq)]
impl<C: Clock> Clone for BareRdtsc<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
#[cfg(ringtrace_rseq)]
impl<C: Clock> Copy for BareRdtsc<'_, C> {}

#[cfg(ringtrace_rseq)]
impl<C: Clock> Clock for BareRdtsc<'_, C> {
    #[inline(always)]
    fn read(&self) -> u64 {
        InlineRead::Rdtsc.read(self.0)
    }

    fn info(&self) -> ClockInfo {
        self.0.info()
    }
}

impl<C: Clock> Clock for Stamp<'_, C> {
    #[inline(always)]
    fn read(&self) -> u64 {
        self.how.read(self.clock)
    }

    fn info(&self) -> ClockInfo {
        self.clock.info()
    }
}
