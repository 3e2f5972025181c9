//! How a [`Tracer`] is configured: its clock, its buffers, its mode and,
//! for a flight recorder, its file.

use crate::error::TracerError;
use crate::tracer::Tracer;
use ringtrace_clock::{AnyClock, ClockError, ClockSpec};
use ringtrace_ring::{Mode, RingConfig};
use std::path::PathBuf;
use std::time::Duration;

/// The clock a tracer stamps events with, as given to
/// [`TracerBuilder::clock`]: a name, a parsed [`ClockSpec`], or a built
/// clock (a user-defined one included).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClockChoice {
    /// A clock by name, parsed when the tracer is built (`tsc@preempt`,
    /// `mono`, `global:mono-raw@irq-hard`; see [`ClockSpec`]).
    Name(String),
    /// A parsed name.
    Spec(ClockSpec),
    /// A clock already built.
    Clock(AnyClock),
}

impl From<&str> for ClockChoice {
    fn from(name: &str) -> Self {
        ClockChoice::Name(name.to_owned())
    }
}

impl From<String> for ClockChoice {
    fn from(name: String) -> Self {
        ClockChoice::Name(name)
    }
}

impl From<ClockSpec> for ClockChoice {
    fn from(spec: ClockSpec) -> Self {
        ClockChoice::Spec(spec)
    }
}

impl From<AnyClock> for ClockChoice {
    fn from(clock: AnyClock) -> Self {
        ClockChoice::Clock(clock)
    }
}

impl ClockChoice {
    fn build(self) -> Result<AnyClock, ClockError> {
        match self {
            ClockChoice::Name(name) => name.parse::<ClockSpec>()?.build(),
            ClockChoice::Spec(spec) => spec.build(),
            ClockChoice::Clock(clock) => Ok(clock),
        }
    }
}

/// The clock a tracer uses when none is given: `mono`, the system's
/// monotonic clock, which every CPU and thread agrees on. `tsc` (x86_64)
/// or `cntvct` (aarch64) cost a fraction of it where they are available.
pub const DEFAULT_CLOCK: &str = "mono";

/// Bytes per CPU buffer when none is given: 1 MiB.
pub const DEFAULT_BUFFER_SIZE: usize = 1 << 20;

/// Configures a [`Tracer`]; made by [`Tracer::builder`].
///
/// Nothing is checked until [`build`](TracerBuilder::build), which names
/// the first bad value and the valid ones.
///
/// ```
/// use ringtrace::{Mode, Tracer};
/// let err = Tracer::builder().clock("tsc@nope").build().unwrap_err();
/// assert!(err.to_string().contains("valid protections"), "{err}");
/// let err = Tracer::builder().buffer_size(100).page_size(1000).build().unwrap_err();
/// assert!(err.to_string().contains("power of two"), "{err}");
/// let tracer = Tracer::builder().clock("mono").buffer_size(64 << 10).mode(Mode::Discard).build()?;
/// assert_eq!(tracer.clock_info().name, "mono");
/// # Ok::<(), ringtrace::TracerError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct TracerBuilder {
    clock: ClockChoice,
    config: RingConfig,
}

impl Default for TracerBuilder {
    fn default() -> Self {
        TracerBuilder {
            clock: ClockChoice::Name(DEFAULT_CLOCK.to_owned()),
            config: RingConfig::default().per_cpu_bytes(DEFAULT_BUFFER_SIZE),
        }
    }
}

impl TracerBuilder {
    /// The clock events are stamped with, the one way to pick it: a name
    /// (`"tsc@preempt"`), a [`ClockSpec`] (a name parsed ahead), or a built
    /// clock ([`AnyClock`]), such as the program's own [`Clock`](ringtrace_clock::Clock) (a
    /// simulation's virtual time, a device counter) wrapped by
    /// [`AnyClock::custom`]. [`DEFAULT_CLOCK`] when not called. A custom
    /// clock's [`ClockInfo`] (name, frequency, guarantee) is what the
    /// readers and exporters convert and label timestamps with.
    ///
    /// [`ClockInfo`]: ringtrace_clock::ClockInfo
    ///
    /// ```
    /// use ringtrace::clock::{ClockInfo, Guarantee};
    /// use ringtrace::{AnyClock, Clock, ClockSpec, Tracer};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// let by_name = Tracer::builder().clock("mono").build()?;
    /// let spec: ClockSpec = "counter".parse()?;
    /// let by_spec = Tracer::builder().clock(spec).build()?;
    /// assert_eq!((by_name.clock_info().name, by_spec.clock_info().name), ("mono".into(), "counter".into()));
    ///
    /// struct Ticks(AtomicU64);
    /// impl Clock for Ticks {
    ///     fn read(&self) -> u64 {
    ///         // Relaxed: a counter, only its own order matters.
    ///         self.0.fetch_add(1, Ordering::Relaxed)
    ///     }
    ///     fn info(&self) -> ClockInfo {
    ///         ClockInfo::counter("ticks", Guarantee::Global, 1_000)
    ///     }
    /// }
    ///
    /// let tracer = Tracer::builder()
    ///     .clock(AnyClock::custom(Ticks(AtomicU64::new(0))))
    ///     .buffer_size(16 * 1024)
    ///     .build()?;
    /// assert_eq!(tracer.clock_info().name, "ticks");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock(mut self, clock: impl Into<ClockChoice>) -> Self {
        self.clock = clock.into();
        self
    }

    /// Bytes of each CPU's buffer, rounded up to whole pages
    /// ([`DEFAULT_BUFFER_SIZE`] when not called).
    pub fn buffer_size(mut self, bytes_per_cpu: usize) -> Self {
        self.config.per_cpu_bytes = bytes_per_cpu;
        self
    }

    /// Bytes per page (sub-buffer): a power of two from 64 to 65,536;
    /// 4096 by default. An event must fit in a page.
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.config.page_size = bytes;
        self
    }

    /// [`Mode::Overwrite`] (the default, a flight recorder: the oldest
    /// events make room) or [`Mode::Discard`] (new events are refused and
    /// counted when the buffer is full).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self
    }

    /// How many CPU buffers; one per possible CPU when not called.
    pub fn cpus(mut self, cpus: usize) -> Self {
        self.config.cpus = Some(cpus);
        self
    }

    /// Records into the file at `path` (a flight recorder whose events
    /// survive a crash of the program) rather than into memory. The file
    /// must not exist unless [`append`](TracerBuilder::append) is set; it
    /// carries the tracepoints' descriptions, so `ringtrace dump` and
    /// `ringtrace export` read it without the program.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.file = Some(path.into());
        self
    }

    /// With [`file`](TracerBuilder::file): go on writing an existing trace
    /// file of the same shape and clock whose writer is gone.
    pub fn append(mut self, append: bool) -> Self {
        self.config.append = append;
        self
    }

    /// Bytes kept for descriptions registered while the program runs (the
    /// `tracing` layer's callsites, local span sites): 256 KiB by default,
    /// at most 64 MiB, 0 for none. When they run out, further callsites
    /// are counted unregistered and their events are not recorded.
    pub fn metadata_capacity(mut self, bytes: usize) -> Self {
        self.config.metadata_capacity = bytes;
        self
    }

    /// How long a reader waits for a writer that reserved an event and
    /// never committed it (it died, or stalls) before it skips the page
    /// and counts its events lost; `None`: never on its own. 500 ms by
    /// default.
    pub fn fixup_after(mut self, wait: Option<Duration>) -> Self {
        self.config.fixup_after = wait;
        self
    }

    /// How writers update the ring (see `ringtrace_ring::rseq`):
    /// [`WritePath::Auto`](ringtrace_ring::WritePath::Auto) by default,
    /// restartable sequences where the machine has them and
    /// compare-and-swap elsewhere; asking for `Rseq` where it cannot run
    /// makes [`build`](TracerBuilder::build) fail, naming what is missing.
    ///
    /// ```
    /// use ringtrace::{ring::WritePath, Tracer};
    /// let tracer = Tracer::builder().clock("counter").write_path(WritePath::Cas).build()?;
    /// assert_eq!(tracer.ring().write_path(), WritePath::Cas);
    /// # Ok::<(), ringtrace::TracerError>(())
    /// ```
    pub fn write_path(mut self, path: ringtrace_ring::WritePath) -> Self {
        self.config.write_path = path;
        self
    }

    /// The ring configuration as it stands (what [`build`] will use, minus
    /// the metadata it adds for a file).
    ///
    /// [`build`]: TracerBuilder::build
    pub fn ring_config(&self) -> &RingConfig {
        &self.config
    }

    /// Builds the clock and the ring. Errors name the bad value and the
    /// valid ones: an unknown or unavailable clock, a bad size or page
    /// size, a file that exists or cannot be made.
    pub fn build(self) -> Result<Tracer, TracerError> {
        let clock = self.clock.build()?;
        Tracer::from_parts(self.config, clock)
    }
}
