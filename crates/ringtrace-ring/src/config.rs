//! Ring configuration and its validation.

pub use crate::config_error::ConfigError;

/// The shortest [`RingConfig::fixup_after`]: a millisecond. A writer
/// between reserve and commit for less is running, not dead.
///
/// ```
/// use ringtrace_ring::{ConfigError, RingConfig, MIN_FIXUP_AFTER};
/// use std::time::Duration;
/// let config = |wait| RingConfig::default().cpus(1).fixup_after(Some(wait));
/// let err = config(Duration::ZERO).validate().unwrap_err();
/// assert!(matches!(err, ConfigError::FixupAfter { .. }), "{err}");
/// assert!(err.to_string().contains("at least 1ms"), "{err}");
/// assert!(config(MIN_FIXUP_AFTER).validate().is_ok());
/// ```
pub const MIN_FIXUP_AFTER: std::time::Duration = std::time::Duration::from_millis(1);

/// How long a closed page may wait for its last commit before the reader
/// takes it out of the ring (a writer vanished between reserve and commit).
pub const DEFAULT_FIXUP_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// What happens when a writer finds the buffer full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// The flight recorder: the oldest page is overwritten and its unread
    /// events are counted in `overrun`.
    #[default]
    Overwrite,
    /// Producer/consumer: the reservation fails and is counted in `missed`.
    Discard,
}

impl Mode {
    /// `overwrite` or `discard`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Overwrite => "overwrite",
            Mode::Discard => "discard",
        }
    }

    /// Parses `overwrite` or `discard`.
    ///
    /// ```
    /// use ringtrace_ring::Mode;
    /// assert_eq!(Mode::parse("discard").unwrap(), Mode::Discard);
    /// assert!(Mode::parse("drop").unwrap_err().to_string().contains("overwrite, discard"));
    /// ```
    pub fn parse(name: &str) -> Result<Mode, ConfigError> {
        match name {
            "overwrite" => Ok(Mode::Overwrite),
            "discard" => Ok(Mode::Discard),
            other => Err(ConfigError::UnknownMode(other.to_owned())),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The machine's physical memory in bytes, if the system says. (Not under
/// Miri, which has no such query: there the check is skipped.)
fn physical_memory() -> Option<usize> {
    #[cfg(miri)]
    {
        None
    }
    #[cfg(not(miri))]
    {
        // SAFETY: sysconf only reads system configuration; both names are
        // valid on Linux, and a failure is reported as -1.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let pages = usize::try_from(pages).ok()?;
        let page = usize::try_from(page).ok()?;
        pages.checked_mul(page)
    }
}

/// The shape of a ring: page size, per-CPU size, mode and CPU count.
///
/// ```
/// use ringtrace_ring::{Mode, RingConfig};
/// let config = RingConfig::default().page_size(1024).per_cpu_bytes(8192).mode(Mode::Discard);
/// assert_eq!(config.validate().unwrap().pages_per_cpu, 8);
/// let err = RingConfig::default().page_size(1000).validate().unwrap_err();
/// assert!(err.to_string().contains("power of two"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per page (sub-buffer): a power of two, 4096 by default.
    pub page_size: usize,
    /// Bytes per CPU buffer, rounded up to whole pages; 1,000,000 by
    /// default, as in ring_buffer_benchmark.
    pub per_cpu_bytes: usize,
    /// Overwrite (default) or discard.
    pub mode: Mode,
    /// Number of CPU buffers; `None` means one per possible CPU.
    pub cpus: Option<usize>,
    /// How long a reader waits for the last commit of a closed page before
    /// it takes the page out of the ring and counts its events as lost
    /// (a writer that died between reserve and commit). `None` never
    /// does it on its own; [`CpuBuffer::fixup`](crate::CpuBuffer::fixup)
    /// still can. 500 ms by default.
    pub fixup_after: Option<std::time::Duration>,
    /// How many pages a fixup may hold out of the ring at once for
    /// reservations that have not committed: one per writer that died (or
    /// stalled) between reserve and commit, until its late commit lands.
    /// When that many are held, a further stuck page is not taken out: the
    /// reader waits at it and counts it in
    /// [`Stats::fixups_refused`](crate::Stats::fixups_refused). The pages
    /// are mapped with the ring but cost memory only once a dead writer
    /// holds them: `page_size` bytes each, for good. 1024 by default. A
    /// file ring lends some of them (16, or half, up to 64) to its pool of
    /// pages zeroed ahead for claims and step-overs (see
    /// [`RingConfig::step_over`]); a memory ring's spare pages are apart.
    pub quarantine_pages: usize,
    /// Lay the ring out in this file (the flight recorder; see
    /// [`crate::file`]) rather than in anonymous memory. `None` by default.
    pub file: Option<std::path::PathBuf>,
    /// With `file`: write into an existing file (its ring must have this
    /// shape and clock, and its writer must be gone) rather than refuse it.
    pub append: bool,
    /// With `file`: bytes the file's header keeps for readers (ringtrace's
    /// facade puts the tracepoint descriptions here). Empty by default.
    pub metadata: Vec<u8>,
    /// Bytes for the records appended at run time with
    /// [`RingBuffer::append_metadata`](crate::RingBuffer::append_metadata)
    /// (the metadata annex): each record takes its length plus 4. In a
    /// file ring they are in the file (and the file that much longer);
    /// in a memory ring in memory, taken as records come. 0: no annex.
    /// [`DEFAULT_METADATA_CAPACITY`] (256 KiB) by default, at most
    /// [`MAX_METADATA_CAPACITY`].
    pub metadata_capacity: usize,
    /// How writers update the per-CPU words: [`WritePath::Auto`](crate::WritePath::Auto) (the
    /// default) takes the rseq path where this machine allows it and the
    /// CAS path elsewhere; see [`crate::rseq`].
    pub write_path: crate::WritePath,
    /// Discard mode only: how long a writer that finds its buffer full
    /// waits for a reader to make room before it gives up and the event
    /// is refused ([`ReserveError::TimedOut`](crate::ReserveError::TimedOut))
    /// and counted ([`Stats::timed_out`](crate::Stats::timed_out)).
    /// A writer refused because the page it needs is busy (another
    /// writer's reservation still open in it, or its claimer still
    /// zeroing it) waits the same way, for that thread to run.
    /// `None` (the default): refused at once. LTTng's blocking mode
    /// (`--blocking-timeout`), for a ring drained by a recorder. A writer
    /// never waits in a signal handler (see [`crate::SignalScope`]) or an
    /// emulated interrupt: there it is refused at once, as without it. At
    /// most [`MAX_BLOCK_FOR`].
    pub block_for: Option<std::time::Duration>,
    /// Overwrite mode: a claim that finds the page it is about to
    /// overwrite still held by a writer that has not committed (a thread
    /// preempted between reserve and commit) steps over that page with a
    /// spare one, and the sleeper's event counts as overrun when it lands
    /// ([`Stats::pages_stepped_over`](crate::Stats::pages_stepped_over)).
    /// Each page stepped over keeps a spare until its last commit: at most
    /// 64 at once in a memory ring, half the pool of zeroed pages in a
    /// file ring; past that a claim is refused `Busy` as below, and the
    /// reader's fixup takes a page whose writer died out after
    /// [`fixup_after`](Self::fixup_after()).
    /// `true` by default. `false`: such a claim is refused
    /// ([`ReserveError::Busy`](crate::ReserveError::Busy)) until the
    /// sleeper commits, as the kernel's ring refuses (its
    /// `commit_overrun`), which in userspace refuses every writer of the
    /// CPU for as long as the sleeper sleeps; for comparing the two.
    pub step_over: bool,
}

/// The longest a blocking writer may wait for room: one minute.
pub const MAX_BLOCK_FOR: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            page_size: 4096,
            per_cpu_bytes: 1_000_000,
            mode: Mode::Overwrite,
            cpus: None,
            fixup_after: Some(DEFAULT_FIXUP_AFTER),
            quarantine_pages: DEFAULT_QUARANTINE_PAGES,
            file: None,
            append: false,
            metadata: Vec::new(),
            metadata_capacity: DEFAULT_METADATA_CAPACITY,
            write_path: crate::WritePath::Auto,
            block_for: None,
            step_over: true,
        }
    }
}

/// A validated configuration, with what follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Geometry {
    /// Bytes per page.
    pub page_size: usize,
    /// Pages in each CPU buffer's ring.
    pub pages_per_cpu: usize,
    /// Overwrite or discard.
    pub mode: Mode,
    /// Number of CPU buffers.
    pub cpus: usize,
    /// The reader's bound on waiting for a stuck page (see
    /// [`RingConfig::fixup_after`]).
    pub fixup_after: Option<std::time::Duration>,
    /// Pages a fixup may hold for writers that have not committed (see
    /// [`RingConfig::quarantine_pages`]).
    pub quarantine_pages: usize,
    /// Bytes of the metadata annex (see [`RingConfig::metadata_capacity`]).
    pub metadata_capacity: usize,
    /// How long a writer waits for room in a full discard buffer (see
    /// [`RingConfig::block_for`]).
    pub block_for: Option<std::time::Duration>,
    /// Whether overwrite claims step over a page a sleeping writer holds
    /// (see [`RingConfig::step_over`]).
    pub step_over: bool,
    /// log2 of the page size, kept so the write path need not compute it.
    page_shift: u32,
}

impl Geometry {
    /// log2 of the page size.
    #[inline(always)]
    pub(crate) fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// Physical pages of one CPU buffer: the ring's, the reader's spare, and
    /// the quarantine's.
    pub(crate) fn physical_pages(&self) -> usize {
        self.pages_per_cpu + 1 + self.quarantine_pages
    }
}

/// Smallest page: room for the header and a few events (loom and the
/// property tests use tiny pages to reach wrap-around quickly).
pub const MIN_PAGE_SIZE: usize = 64;
/// Largest page: the commit word counts bytes in 24 bits and events in 16.
pub const MAX_PAGE_SIZE: usize = 65_536;
/// Most pages per CPU buffer: page indices are 16 bits, one spare for the
/// reader and the rest for pages set aside by fixups.
pub const MAX_PAGES: usize = 32_768;
/// Most CPU buffers in one ring.
pub const MAX_CPUS: usize = 4_096;
/// Most physical pages of one CPU buffer (ring, reader's spare and
/// quarantine): a slot word names its page in 16 bits.
pub const MAX_PHYSICAL_PAGES: usize = 1 << 16;
/// Pages a fixup may hold for writers that have not committed, by default:
/// a CPU buffer outlives this many writers that die mid-event. (Fewer under
/// Miri, where every page is built word by word.)
pub const DEFAULT_QUARANTINE_PAGES: usize = if cfg!(miri) { 8 } else { 1024 };
/// Bytes of the metadata annex by default: room for about a thousand
/// callsite descriptions of a couple of hundred bytes.
pub const DEFAULT_METADATA_CAPACITY: usize = 256 * 1024;
/// The largest metadata annex.
pub const MAX_METADATA_CAPACITY: usize = 64 * 1024 * 1024;

impl RingConfig {
    /// Sets the page size.
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.page_size = bytes;
        self
    }

    /// Sets the per-CPU size in bytes.
    pub fn per_cpu_bytes(mut self, bytes: usize) -> Self {
        self.per_cpu_bytes = bytes;
        self
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the number of CPU buffers.
    pub fn cpus(mut self, cpus: usize) -> Self {
        self.cpus = Some(cpus);
        self
    }

    /// Sets how long a reader waits for a stuck page before taking it out
    /// (`None`: only on an explicit fixup); at least [`MIN_FIXUP_AFTER`].
    pub fn fixup_after(mut self, wait: Option<std::time::Duration>) -> Self {
        self.fixup_after = wait;
        self
    }

    /// Sets how many pages fixups may hold for writers that have not
    /// committed (see [`RingConfig::quarantine_pages`]).
    pub fn quarantine_pages(mut self, pages: usize) -> Self {
        self.quarantine_pages = pages;
        self
    }

    /// Lays the ring out in the file at `path`: a flight recorder, whose
    /// events survive the process ([`crate::file`]). The file is created
    /// with mode 0600; an existing file, or a symbolic link at `path`, is an
    /// error unless [`append`](RingConfig::append) is set (a link is
    /// refused even then).
    ///
    /// One process writes the file at a time: `append` refuses a file
    /// whose writer is alive, and a child forked while the ring is open,
    /// which shares its mapping, must not write to the ring while the
    /// parent does (the rseq path's remote updates, for one, see
    /// [`RingBuffer::remote_updates`](crate::RingBuffer::remote_updates),
    /// shut out only their own process's sections). One after the other
    /// is fine: the child writes while the parent waits, and the parent
    /// writes on once the child is done (a child's claims zero their
    /// page in place, never taking from its copy of the parent's pool of
    /// zeroed pages, and step over no page).
    ///
    /// ```
    /// use ringtrace_ring::RingConfig;
    /// let config = RingConfig::default().file("/tmp/app.ring").append(true);
    /// assert!(config.append && config.file.is_some());
    /// // append or metadata without a file is an error naming the fix
    /// let err = RingConfig::default().append(true).validate().unwrap_err();
    /// assert!(err.to_string().contains("RingConfig::file"));
    /// ```
    pub fn file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Writes into an existing file rather than refusing it: its ring must
    /// have this shape and clock, and its writer must be gone. The ring
    /// goes on from where the file left off.
    pub fn append(mut self, append: bool) -> Self {
        self.append = append;
        self
    }

    /// Bytes the file's header keeps for readers (ringtrace's facade puts
    /// the tracepoint descriptions here, so that a dump decodes events
    /// without the program).
    pub fn metadata(mut self, bytes: Vec<u8>) -> Self {
        self.metadata = bytes;
        self
    }

    /// Sets the bytes kept for records appended at run time (see
    /// [`RingConfig::metadata_capacity`]); 0 for none.
    ///
    /// ```
    /// use ringtrace_ring::RingConfig;
    /// let config = RingConfig::default().metadata_capacity(64 * 1024);
    /// assert_eq!(config.validate().unwrap().metadata_capacity, 64 * 1024);
    /// let err = RingConfig::default().metadata_capacity(1 << 40).validate().unwrap_err();
    /// assert!(err.to_string().contains("at most 67108864 bytes"));
    /// ```
    pub fn metadata_capacity(mut self, bytes: usize) -> Self {
        self.metadata_capacity = bytes;
        self
    }

    /// Sets the write path (see [`crate::rseq`]).
    pub fn write_path(mut self, path: crate::WritePath) -> Self {
        self.write_path = path;
        self
    }

    /// Discard mode: writers that find their buffer full wait up to
    /// `timeout` for a reader to make room (see [`RingConfig::block_for`]).
    ///
    /// ```
    /// use ringtrace_ring::{Mode, RingConfig};
    /// use std::time::Duration;
    /// let ok = RingConfig::default().mode(Mode::Discard).blocking(Duration::from_millis(100));
    /// assert!(ok.validate().is_ok());
    /// let err = RingConfig::default().blocking(Duration::from_millis(100)).validate().unwrap_err();
    /// assert!(err.to_string().contains("use discard mode"), "{err}");
    /// ```
    pub fn blocking(mut self, timeout: std::time::Duration) -> Self {
        self.block_for = Some(timeout);
        self
    }

    /// Whether overwrite claims step over a page a sleeping writer holds
    /// (see [`RingConfig::step_over`]; on by default).
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::{ReserveError, RingBuffer, RingConfig};
    /// let config = |on| RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(1024).step_over(on);
    /// for on in [true, false] {
    ///     let ring = RingBuffer::new(config(on), Counter::new())?;
    ///     let sleeper = ring.cpu_writer(0).reserve(8)?; // preempted, say
    ///     let refused = (0..100u64).filter(|i| ring.cpu_writer(0).write(&i.to_le_bytes()).is_err()).count();
    ///     assert_eq!(refused == 0, on);
    ///     assert_eq!(ring.stats().pages_stepped_over, u64::from(on));
    ///     sleeper.commit();
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step_over(mut self, on: bool) -> Self {
        self.step_over = on;
        self
    }

    /// Checks the configuration and works out the geometry.
    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        if self.file.as_ref().is_some_and(|f| f.as_os_str().is_empty()) {
            return Err(ConfigError::EmptyFilePath);
        }
        if self.file.is_none() {
            if self.append {
                return Err(ConfigError::NeedsFile("append"));
            }
            if !self.metadata.is_empty() {
                return Err(ConfigError::NeedsFile("metadata"));
            }
        }
        let page_size = self.page_size;
        if !page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
            return Err(ConfigError::PageSize {
                given: page_size,
                min: MIN_PAGE_SIZE,
                max: MAX_PAGE_SIZE,
            });
        }
        let pages = self.per_cpu_bytes.div_ceil(page_size);
        if !(2..=MAX_PAGES).contains(&pages) {
            return Err(ConfigError::BufferSize {
                given: self.per_cpu_bytes,
                page_size,
                pages,
                max_pages: MAX_PAGES,
            });
        }
        let quarantine_max = MAX_PHYSICAL_PAGES - 1 - pages;
        if self.quarantine_pages > quarantine_max {
            return Err(ConfigError::QuarantinePages {
                given: self.quarantine_pages,
                max: quarantine_max,
                pages,
            });
        }
        if let Some(wait) = self.fixup_after {
            if wait < MIN_FIXUP_AFTER {
                return Err(ConfigError::FixupAfter {
                    given: wait,
                    min: MIN_FIXUP_AFTER,
                });
            }
        }
        if self.metadata_capacity > MAX_METADATA_CAPACITY {
            return Err(ConfigError::MetadataCapacity {
                given: self.metadata_capacity,
                max: MAX_METADATA_CAPACITY,
            });
        }
        if let Some(wait) = self.block_for {
            if self.mode != Mode::Discard {
                return Err(ConfigError::BlockingMode { mode: self.mode });
            }
            if wait.is_zero() || wait > MAX_BLOCK_FOR {
                return Err(ConfigError::BlockFor {
                    given: wait,
                    max: MAX_BLOCK_FOR,
                });
            }
        }
        let cpus = self.cpus.unwrap_or_else(crate::cpu::possible_cpus);
        if !(1..=MAX_CPUS).contains(&cpus) {
            return Err(ConfigError::Cpus {
                given: cpus,
                max: MAX_CPUS,
            });
        }
        // Refused here rather than aborting in the allocator (or being
        // killed for it) when the pages are made. The quarantine's pages
        // are not counted: they take memory only as dead writers hold them.
        let bytes = cpus
            .checked_mul(pages + 1)
            .and_then(|p| p.checked_mul(page_size))
            .unwrap_or(usize::MAX);
        if let Some(memory) = physical_memory().filter(|&m| bytes > m) {
            return Err(ConfigError::TooLarge {
                cpus,
                pages,
                page_size,
                bytes,
                memory,
            });
        }
        Ok(Geometry {
            page_size,
            pages_per_cpu: pages,
            mode: self.mode,
            cpus,
            fixup_after: self.fixup_after,
            quarantine_pages: self.quarantine_pages,
            metadata_capacity: self.metadata_capacity,
            block_for: self.block_for,
            step_over: self.step_over,
            page_shift: page_size.trailing_zeros(),
        })
    }
}
