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
    /// What [`from_env`](TracerBuilder::from_env) found wrong, reported
    /// by `build`.
    env_error: Option<crate::session_env::EnvProblem>,
    #[cfg(feature = "stream")]
    stream: Option<crate::stream::StreamTarget>,
    /// Whether the mode was chosen (`mode`, `blocking`, `from_env`): a
    /// stream's ring is in discard mode unless it was.
    mode_chosen: bool,
    /// Whether the clock is the session's (`from_env`): a clock this
    /// machine lacks is then named by its variable.
    clock_from_env: bool,
}

impl Default for TracerBuilder {
    fn default() -> Self {
        TracerBuilder {
            clock: ClockChoice::Name(DEFAULT_CLOCK.to_owned()),
            config: RingConfig::default().per_cpu_bytes(DEFAULT_BUFFER_SIZE),
            env_error: None,
            #[cfg(feature = "stream")]
            stream: None,
            mode_chosen: false,
            clock_from_env: false,
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
        self.clock_from_env = false;
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
    /// counted when the buffer is full; the default of a ring streamed
    /// with [`stream_to`](Self::stream_to)).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self.mode_chosen = true;
        self
    }

    /// Overwrite mode: whether a claim steps over a page a preempted
    /// writer still holds (on by default; see
    /// [`RingConfig::step_over`](ringtrace_ring::RingConfig::step_over)).
    /// Off, every write that needs that page is refused until the writer
    /// runs again, as in the kernel's ring.
    ///
    /// ```
    /// let builder = ringtrace::Tracer::builder().step_over(false);
    /// assert!(!builder.ring_config().step_over);
    /// let tracer = builder.build()?;
    /// assert_eq!(tracer.ring().stats().pages_stepped_over, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step_over(mut self, on: bool) -> Self {
        self.config.step_over = on;
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
    /// are counted unregistered and their events are not recorded: the
    /// ring never sees them, so they are counted in the layer's or the
    /// subscriber's own stats (`RingLayer::stats`,
    /// `RingSubscriber::stats`: `callsites_refused`, `unregistered`), not
    /// in [`Tracer::stats`]. With 0, a `tracing` layer or subscriber
    /// records nothing.
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

    /// Discard mode in which a writer that finds its buffer full waits up
    /// to `timeout` for a reader (a recorder draining the ring) to make
    /// room (and one that finds the page it needs still held by a
    /// preempted writer waits for that writer), then gives up: the write
    /// returns [`ReserveError::TimedOut`](crate::ReserveError::TimedOut),
    /// counted as refused ([`Stats::missed`](ringtrace_ring::Stats::missed))
    /// and, of those, as [`Stats::timed_out`](ringtrace_ring::Stats::timed_out):
    /// LTTng's blocking mode. A signal handler must not wait: one that writes
    /// enters a [`SignalScope`](ringtrace_ring::SignalScope) first
    /// (`let _scope = SignalScope::enter();`), and its writes are then
    /// refused at once instead. The ring cannot tell a handler from a
    /// thread by itself: without the scope, a handler's write waits as a
    /// thread's does. At most a minute.
    ///
    /// ```
    /// use std::time::Duration;
    /// let tracer = ringtrace::Tracer::builder().blocking(Duration::from_millis(100)).build()?;
    /// assert_eq!(tracer.ring().geometry().block_for, Some(Duration::from_millis(100)));
    /// # Ok::<(), ringtrace::TracerError>(())
    /// ```
    pub fn blocking(mut self, timeout: Duration) -> Self {
        self.config.mode = Mode::Discard;
        self.mode_chosen = true;
        self.config.block_for = Some(timeout);
        self
    }

    /// Records into the session of the `ringtrace record` that started
    /// this program (or an ancestor), when there is one: a ring file in
    /// the session's `rings/` directory, with the mode, buffer size and
    /// clock the recorder asks for, which the recorder drains to disk as
    /// the program runs and after it exits or dies. Without a session
    /// (the `RINGTRACE_SESSION` variable unset) the builder is unchanged,
    /// so a program calls it unconditionally. Settings made after it
    /// override the session's; the recorder refuses a session whose
    /// processes' clocks cannot be compared.
    ///
    /// The variables: [`SESSION_ENV`](crate::SESSION_ENV) (the directory),
    /// [`SESSION_MODE_ENV`](crate::SESSION_MODE_ENV),
    /// [`SESSION_BUFFER_ENV`](crate::SESSION_BUFFER_ENV) and
    /// [`SESSION_CLOCK_ENV`](crate::SESSION_CLOCK_ENV). A value that means
    /// nothing makes [`build`](TracerBuilder::build) fail, naming the
    /// variable and what it may hold.
    ///
    /// ```
    /// // Outside a session, nothing changes:
    /// let tracer = ringtrace::Tracer::builder().from_env().build()?;
    /// assert!(tracer.ring().file_path().is_none() || std::env::var_os(ringtrace::SESSION_ENV).is_some());
    /// # Ok::<(), ringtrace::TracerError>(())
    /// ```
    pub fn from_env(mut self) -> Self {
        match crate::session_env::SessionEnv::read() {
            Ok(None) => {}
            Ok(Some(session)) => {
                if let Err(problem) = self.check_session(&session) {
                    self.env_error = Some(problem);
                    return self;
                }
                self.config.file = Some(session.ring_path());
                self.config.mode = session.ring_mode();
                self.mode_chosen = true;
                self.config.block_for = match session.mode {
                    crate::session_env::SessionMode::Blocking(wait) => Some(wait),
                    _ => None,
                };
                if let Some(bytes) = session.buffer {
                    self.config.per_cpu_bytes = bytes;
                }
                if let Some(clock) = session.clock {
                    self.clock = ClockChoice::Name(clock);
                    self.clock_from_env = true;
                }
            }
            Err(problem) => self.env_error = Some(problem),
        }
        self
    }

    /// What in `session` cannot make a ring, named by its variable: a
    /// directory that is no recorder's session, a buffer size this ring's
    /// pages cannot make, a clock name that names none.
    fn check_session(
        &self,
        session: &crate::session_env::SessionEnv,
    ) -> Result<(), crate::session_env::EnvProblem> {
        use crate::session_env::{EnvProblem, SESSION_BUFFER_ENV, SESSION_CLOCK_ENV, SESSION_ENV};
        if !session.dir.join("rings").is_dir() {
            return Err(EnvProblem {
                var: SESSION_ENV,
                value: session.dir.display().to_string(),
                valid: "the directory of a running `ringtrace record` session (it holds a rings/ directory), set by the recorder"
                    .into(),
            });
        }
        if let Some(bytes) = session.buffer {
            let config = self
                .config
                .clone()
                .per_cpu_bytes(bytes)
                .file(session.ring_path());
            if let Err(e) = config.validate() {
                return Err(EnvProblem {
                    var: SESSION_BUFFER_ENV,
                    // As given (`1K`), not as parsed.
                    value: std::env::var(SESSION_BUFFER_ENV).unwrap_or_else(|_| bytes.to_string()),
                    valid: format!("a size the ring can make ({e})"),
                });
            }
        }
        if let Some(clock) = &session.clock {
            if let Err(e) = clock.parse::<ClockSpec>() {
                return Err(EnvProblem {
                    var: SESSION_CLOCK_ENV,
                    value: clock.clone(),
                    valid: format!("a clock name ({e})"),
                });
            }
        }
        Ok(())
    }

    /// Streams the ring into the session directory `dir` as the program
    /// records (the `stream` feature, on by default): a consumer thread
    /// drains it in place every few milliseconds into per-CPU chunks, so
    /// that nothing is thrown away as a fixed ring would, until
    /// [`Tracer::finish`] (or the process's normal exit) drains it to the
    /// end and finishes the session; so does dropping the tracer, unless
    /// the ring lives on in a layer, subscriber or [`Tracer::install`],
    /// when the process's normal exit does. `dir` must not exist (its
    /// parent must) or be empty. `ringtrace dump DIR` and `ringtrace
    /// export DIR` read it. The ring is in discard mode unless
    /// [`mode`](Self::mode) says otherwise: a slow disk costs counted
    /// refusals rather than overwritten events ([`blocking`](Self::blocking):
    /// waits); overwrite mode counts what the consumer did not reach as
    /// overwritten. Within a
    /// `ringtrace record` session, use [`from_env`](Self::from_env)
    /// instead: there the recorder drains the ring.
    ///
    /// A program killed (SIGKILL, a crash) takes with it the events its
    /// consumer had not drained yet, which were in its memory. To keep
    /// them, put the ring in a file as well ([`file`](Self::file), outside
    /// `dir`): the session then holds what was drained, and the ring file
    /// what was left (`ringtrace dump FILE`, or
    /// [`ring::file::recover`](crate::ring::file::recover)); the two never
    /// hold the same event. The consumer's last round (the pages it had
    /// read and not yet written, a few per CPU) is in neither: the file
    /// counts those events as read by a consumer (its `read`), beyond
    /// what the session holds. `ringtrace dump DIR FILE` (and `export`)
    /// reads the two as one process, the file's events after the
    /// session's, with that last round counted lost where it was.
    ///
    /// The stream is the process's that built the tracer. A child forked
    /// from it has a copy of the tracer and none of its consumer thread:
    /// with a [`file`](Self::file) ring, which parent and child share,
    /// the child's events are streamed by the parent (while it streams);
    /// with an in-memory ring, the child's copy is its own and nothing
    /// streams it, so the child's `finish` and `finish_stream` say so
    /// (the tracer's stats count what it wrote). Neither the child's drop
    /// nor its exit waits for its parent's thread.
    ///
    /// ```
    /// use ringtrace::{Mode, Tracer};
    /// let dir = std::env::temp_dir().join(format!("ringtrace-stream-doc-{}", std::process::id()));
    /// let tracer = Tracer::builder().mode(Mode::Discard).stream_to(&dir).build()?;
    /// for i in 0..10_000u32 {
    ///     tracer.write(&i.to_le_bytes())?;
    /// }
    /// tracer.finish()?; // drained to the end, the session finished
    /// let session = ringtrace::session::Session::open(&dir)?;
    /// let events: usize = session.recoveries().iter().flat_map(|r| &r.cpus).map(|c| c.events.len()).sum();
    /// assert_eq!(events, 10_000);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "stream")]
    pub fn stream_to(mut self, dir: impl Into<PathBuf>) -> Self {
        let options = self.stream.take().map(|s| s.options).unwrap_or_default();
        self.stream = Some(crate::stream::StreamTarget {
            dir: dir.into(),
            options,
        });
        self
    }

    /// With [`stream_to`](Self::stream_to): how the session's chunks are
    /// made (size and time rotation, the session's size limit, zstd).
    #[cfg(feature = "stream")]
    pub fn stream_options(mut self, options: ringtrace_session::SessionOptions) -> Self {
        match &mut self.stream {
            Some(s) => s.options = options,
            None => {
                self.stream = Some(crate::stream::StreamTarget {
                    dir: PathBuf::new(),
                    options,
                })
            }
        }
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
        if let Some(problem) = self.env_error {
            return Err(problem.into());
        }
        let from_env = match &self.clock {
            ClockChoice::Name(name) if self.clock_from_env => Some(name.clone()),
            _ => None,
        };
        let clock = match (self.clock.build(), from_env) {
            (Ok(clock), _) => clock,
            // A name that parses (checked by `from_env`) for a clock this
            // machine does not have (`cntvct` on x86_64).
            (Err(e), Some(name)) => {
                return Err(crate::session_env::EnvProblem {
                    var: crate::session_env::SESSION_CLOCK_ENV,
                    value: name,
                    valid: format!("a clock this machine has ({e})"),
                }
                .into())
            }
            (Err(e), None) => return Err(e.into()),
        };
        #[cfg(feature = "stream")]
        if let Some(target) = &self.stream {
            if target.dir.as_os_str().is_empty() {
                return Err(TracerError::Stream(
                    "no session directory to stream to (stream_to was given an empty path, or stream_options came without stream_to): name a directory".into(),
                ));
            }
            let mut config = self.config;
            if !self.mode_chosen {
                config.mode = Mode::Discard;
            }
            return Tracer::streaming(config, clock, target);
        }
        Tracer::from_parts(self.config, clock)
    }
}
