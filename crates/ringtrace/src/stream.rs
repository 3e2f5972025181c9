//! A tracer that streams its ring to a session directory as it records
//! ([`TracerBuilder::stream_to`](crate::TracerBuilder::stream_to)): a
//! consumer thread drains the ring in place every few milliseconds
//! (`ringtrace_session::Drainer`), so nothing is thrown away as a fixed
//! ring would, and the tracer's `finish` or drop (or, if the ring lives on
//! in a layer or the installed slot, the process's normal exit) drains it
//! to the end and finishes the session.

use ringtrace_clock::{AnyClock, Clock as _};
use ringtrace_ring::file::ExitTime;
use ringtrace_ring::{register_exit_handler, ExitHandler, RingBuffer};
use ringtrace_session::{
    Drainer, ProcessExit, ProcessInfo, RingRecords, SessionOptions, SessionSummary, SessionWriter,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the consumer sleeps when a round drained nothing: the bound
/// on how late a page reaches the disk while the program records slowly.
const IDLE: Duration = Duration::from_millis(5);
/// How long the exit handler waits for a stream to finish.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Where and how a tracer streams.
#[derive(Debug, Clone)]
pub(crate) struct StreamTarget {
    pub dir: PathBuf,
    pub options: SessionOptions,
}

/// Why streaming failed.
pub type StreamFailure = String;

/// The consumer thread and how to stop it.
#[derive(Debug)]
pub(crate) struct Stream {
    stop: Arc<AtomicBool>,
    /// The ring streamed: the exit handler reads its clock.
    ring: Arc<RingBuffer<AnyClock>>,
    /// Set by the exit handler before it stops the stream: the time of a
    /// normal exit, which the session's `process` file then keeps.
    exited_at: Arc<Mutex<Option<ExitTime>>>,
    thread: Mutex<Option<JoinHandle<Result<SessionSummary, StreamFailure>>>>,
    dir: PathBuf,
    /// The process whose thread streams: a child forked from it has a
    /// copy of this value but not the thread.
    pid: u32,
}

/// Every stream of the process not finished yet: what the exit handler
/// finishes. Strong: a tracer dropped while its ring lives on (in a layer,
/// a subscriber, the installed slot) leaves its stream running, to be
/// finished here.
static LIVE: Mutex<Vec<Arc<Stream>>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

/// The exit handler: finishes every stream still running.
struct FinishAll;

impl ExitHandler for FinishAll {
    /// It never unwinds: it catches a clock's panic, and only takes locks
    /// of its own and joins threads.
    fn exited(code: Option<u8>) {
        finish_all(code);
    }
}

/// Finishes every stream still running, noting the exit (with `code` if
/// known) in each.
fn finish_all(code: Option<u8>) {
    let streams: Vec<Arc<Stream>> =
        std::mem::take(&mut *LIVE.lock().unwrap_or_else(PoisonError::into_inner));
    // A forked child's copies of its parent's streams have no thread here
    // to wait for.
    for s in streams.into_iter().filter(|s| s.is_here()) {
        // A clock that panics loses the ticks, not the exit (nothing may
        // unwind out of an exit handler).
        let ticks =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.ring.clock().read()));
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| u64::try_from(d.as_nanos()).ok());
        *s.exited_at.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(ExitTime::new(ticks.ok(), wall).with_code(code));
        // Release: the thread that sees the stop (Acquire) sees the time.
        s.stop.store(true, Ordering::Release);
        let deadline = std::time::Instant::now() + EXIT_WAIT;
        let handle = s
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            while !handle.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }
}

impl Stream {
    /// Makes the session at `target.dir` and starts draining `ring` into
    /// it.
    pub(crate) fn start(
        target: &StreamTarget,
        ring: &Arc<RingBuffer<AnyClock>>,
        metadata: Vec<u8>,
    ) -> Result<Arc<Stream>, StreamFailure> {
        let session = SessionWriter::create(&target.dir, target.options.clone())
            .map_err(|e| e.to_string())?;
        let pid = std::process::id();
        let header = ring.snapshot(Vec::new()).header;
        let info = ProcessInfo {
            pid,
            start: crate::session_env::process_start(pid).unwrap_or(0),
            // SAFETY: getppid cannot fail and touches no memory.
            ppid: u32::try_from(unsafe { libc::getppid() }).unwrap_or(0),
            comm: header.comm.clone(),
            header,
            metadata,
        };
        let mut out = session.add_process(info).map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let exited_at = Arc::new(Mutex::new(None));
        let thread = {
            let (ring, stop) = (Arc::clone(ring), Arc::clone(&stop));
            let exited = Arc::clone(&exited_at);
            std::thread::Builder::new()
                .name("ringtrace-stream".into())
                .spawn(move || -> Result<SessionSummary, StreamFailure> {
                    let mut drainer = Drainer::new(ring.cpus());
                    let mut records = RingRecords::new(&ring);
                    let mut pacer = ringtrace_session::Pacer::new(IDLE).gather(32);
                    pacer.capacity(ring.geometry().pages_per_cpu as u64);
                    let failed = |e: ringtrace_session::WriteError| e.to_string();
                    // A full disk is counted by the session writer (what
                    // it could not write, in the summary and the index),
                    // which tries again at each append: the stream goes on.
                    let unless_full = |r: Result<_, ringtrace_session::WriteError>| match r {
                        Err(ringtrace_session::WriteError::NoSpace { .. }) => Ok(()),
                        Err(e) => Err(failed(e)),
                        Ok(_) => Ok(()),
                    };
                    loop {
                        // Read before the round: once it is set, the round
                        // after it sees every event committed before.
                        let stopping = stop.load(Ordering::Acquire);
                        let drained = drainer
                            .round(ring.cpu_buffers(), &mut records, &mut out, |_, _| {})
                            .map_err(failed)?;
                        unless_full(out.tick())?;
                        if stopping && drained.pages == 0 {
                            break;
                        }
                        if let Some(sleep) = pacer.after_round(drained.pages) {
                            std::thread::sleep(sleep);
                        }
                    }
                    let at = *exited.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(at) = at {
                        out.exited_at(at);
                    }
                    // The exit code, where the exit handler was told it.
                    let how = at
                        .and_then(|a| a.code)
                        .map_or(ProcessExit::Closed, |c| ProcessExit::Exited(c.into()));
                    unless_full(out.finish(how).map(drop))?;
                    session.finish().map_err(failed)
                })
                .map_err(|e| format!("cannot start the stream's thread: {e}"))?
        };
        let stream = Arc::new(Stream {
            stop,
            ring: Arc::clone(ring),
            exited_at,
            thread: Mutex::new(Some(thread)),
            dir: target.dir.clone(),
            pid,
        });
        AT_EXIT.call_once(|| {
            // By `on_exit` where glibc has it (the exit code then goes into
            // each session), else by `atexit`.
            register_exit_handler::<FinishAll>();
        });
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&stream));
        Ok(stream)
    }

    /// The session directory.
    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Whether the stream's thread is in this process (not in the parent
    /// this process was forked from).
    pub(crate) fn is_here(&self) -> bool {
        self.pid == std::process::id()
    }

    /// Why a forked child cannot finish its parent's stream, and what
    /// became of what it wrote: a file ring's events reach the session
    /// through the parent's stream, while an in-memory ring's copy is
    /// the child's alone.
    pub(crate) fn not_here(&self, shared_ring: bool) -> StreamFailure {
        let written = if shared_ring {
            "what it writes into the file ring they share is streamed by the parent while the parent streams"
        } else {
            "what it writes into its copy of the in-memory ring is not streamed (the tracer's stats count it); build a tracer of its own in the child"
        };
        format!(
            "this tracer streams to {} from process {}; this process ({}) is a child forked from it, with no stream of its own: {written}",
            self.dir.display(),
            self.pid,
            std::process::id()
        )
    }

    /// Drains the ring to its end, finishes the session, and says what it
    /// holds; an error if it was finished already or writing failed, or
    /// in a forked child (the stream is its parent's).
    pub(crate) fn finish(&self) -> Result<SessionSummary, StreamFailure> {
        if !self.is_here() {
            return Err(self.not_here(self.ring.file_path().is_some()));
        }
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s| !std::ptr::eq(Arc::as_ptr(s), self));
        self.stop.store(true, Ordering::Release);
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| "the stream was finished already".to_string())?;
        handle
            .join()
            .map_err(|_| "the stream's thread panicked".to_string())?
    }
}
