//! One traced process's ring, as the recorder follows it: drained while
//! its writer runs, drained to its end when the writer closes it, and
//! recovered when its process dies with it open.

use super::spawn::Ended;
use super::watch::Watch;
use ringtrace_ring::file::{self, LiveFile, WriterState};
use ringtrace_session::{
    Drainer, FileRecords, ProcessExit, ProcessInfo, ProcessWriter, SessionWriter, WriteError,
};
use std::time::{Duration, Instant};

/// How often the writer's state (a read of the file and of /proc) is
/// looked at while it runs.
const STATE_EVERY: Duration = Duration::from_millis(20);

/// How long a ring may read closed or exited while its process still runs
/// (threads still writing as it exits) before it is drained to its end
/// anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Why following a ring failed: one line.
pub type Failure = String;

/// A ring being drained into the session.
pub struct Tracked {
    live: LiveFile,
    out: Option<ProcessWriter>,
    drainer: Drainer,
    closed_since: Option<Instant>,
    keep_ring: bool,
    exit: Option<ProcessExit>,
    /// When the writer's state was last looked at.
    state_at: Option<Instant>,
    /// The metadata records as last read.
    records: FileRecords,
    /// When another process was last seen mapping the ring, or not.
    elsewhere: Option<(Instant, bool)>,
    /// Whether a full file system has been said for this process.
    full_said: bool,
}

impl Tracked {
    /// Adds the process writing `live` to `session`.
    pub fn open(
        session: &SessionWriter,
        live: LiveFile,
        start: u64,
        keep_ring: bool,
    ) -> Result<Tracked, Failure> {
        let header = live.header().clone();
        let info = ProcessInfo {
            pid: header.pid,
            start,
            ppid: super::rings::parent_of(header.pid).unwrap_or(0),
            comm: header.comm.clone(),
            metadata: live.metadata().map(<[u8]>::to_vec).unwrap_or_default(),
            header,
        };
        let cpus = info.header.cpus;
        let out = session.add_process(info).map_err(|e| e.to_string())?;
        Ok(Tracked {
            live,
            out: Some(out),
            drainer: Drainer::new(cpus),
            closed_since: None,
            keep_ring,
            exit: None,
            state_at: None,
            records: FileRecords::new(),
            elsewhere: None,
            full_said: false,
        })
    }

    /// The process in words, for the summary.
    pub fn described(&self) -> super::RecordedProcess {
        let h = self.live.header();
        super::RecordedProcess {
            pid: h.pid,
            comm: h.comm.clone(),
            clock: h.clock.name.clone(),
            exit: self.exit,
            ring: self.live.path().to_owned(),
        }
    }

    /// The writing process.
    pub fn pid(&self) -> u32 {
        self.live.header().pid
    }

    /// Its ring file's header.
    pub fn header(&self) -> &file::FileHeader {
        self.live.header()
    }

    /// Its ring file.
    pub fn path(&self) -> &std::path::Path {
        self.live.path()
    }

    /// Whether its ring is drained to the end and its process noted.
    pub fn is_done(&self) -> bool {
        self.out.is_none()
    }

    /// Sends `sig` to the process writing this ring, if its ring is not
    /// done and the process still runs as the command that made the ring
    /// (so a pid reused by another command is left alone). Returns whether
    /// the signal was sent.
    pub fn signal_writer(&self, sig: i32) -> bool {
        if self.is_done() || !self.live.writer_running() {
            return false;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid()) else {
            return false;
        };
        if pid <= 0 || pid == std::process::id() as libc::pid_t {
            return false;
        }
        // SAFETY: kill(2) reads no memory of ours; the pid is a process of
        // the session, checked running as the ring's command just above.
        unsafe { libc::kill(pid, sig) == 0 }
    }

    /// One round: drains what is readable and, if the writer is gone,
    /// everything left, then notes the end (`exit`: how the process ended,
    /// when the recorder started it). Returns the pages (or pieces) drained.
    pub fn step(&mut self, exit: Option<Ended>, watch: &mut Watch) -> Result<u64, Failure> {
        // The writer's state before the drain: if it is gone now, the
        // drain below sees every event it committed. Looked at every
        // STATE_EVERY, and whenever the command has ended.
        let due = self.state_at.is_none_or(|at| at.elapsed() >= STATE_EVERY);
        let state = if due || exit.is_some() || self.closed_since.is_some() {
            self.state_at = Some(Instant::now());
            self.live.writer()
        } else {
            WriterState::Live
        };
        let drained = self.round(watch)?;
        match state {
            // Dropped, or marked at a normal exit: the process ends (or
            // goes on without the ring) with nothing more to write.
            WriterState::Closed | WriterState::Exited(_) => {
                if let (WriterState::Exited(at), Some(out)) = (state, self.out.as_mut()) {
                    out.exited_at(at);
                }
                let since = *self.closed_since.get_or_insert_with(Instant::now);
                let gone = !self.live.writer_running() || since.elapsed() >= CLOSE_WAIT;
                // A child forked with the ring writes on after the writer.
                if gone && !self.mapped_elsewhere() {
                    self.drain_to_end(watch)?;
                    let how = match (exit, state) {
                        (Some(Ended::Code(code)), _) => ProcessExit::Exited(code),
                        (Some(Ended::Signal(sig)), _) => ProcessExit::Signaled(sig),
                        // Not the recorder's child: the code its ring's
                        // exit record kept, if it did.
                        (None, WriterState::Exited(at)) => at
                            .code
                            .map_or(ProcessExit::Closed, |c| ProcessExit::Exited(c.into())),
                        (None, _) => ProcessExit::Closed,
                    };
                    self.finish(how)?;
                }
            }
            // Its process is gone, but a child forked with the ring still
            // writes into it: drained as a live ring until it is done.
            WriterState::Died if self.mapped_elsewhere() => {}
            WriterState::Died => {
                self.drain_to_end(watch)?;
                let recovery = file::recover(self.live.path()).map_err(|e| e.to_string())?;
                let page_size = self.live.header().page_size;
                if let Some(out) = self.out.as_mut() {
                    let recovered = self.drainer.recovered(&recovery, page_size, out);
                    self.unless_full(recovered)?;
                }
                let how = match exit {
                    Some(Ended::Signal(sig)) => ProcessExit::Signaled(sig),
                    _ => ProcessExit::DiedWithRing,
                };
                self.finish(how)?;
            }
            _ => {}
        }
        Ok(drained)
    }

    /// Whether another process maps the ring (see `rings::mapped_elsewhere`),
    /// looked at most every STATE_EVERY: it reads every process's maps.
    fn mapped_elsewhere(&mut self) -> bool {
        match self.elsewhere {
            Some((at, mapped)) if at.elapsed() < STATE_EVERY => mapped,
            _ => {
                let mapped = super::rings::mapped_elsewhere(self.live.path());
                self.elsewhere = Some((Instant::now(), mapped));
                mapped
            }
        }
    }

    /// The recorder stops with the process still running: what is
    /// readable now is drained, and the process noted as running.
    pub fn stop(&mut self, watch: &mut Watch) -> Result<(), Failure> {
        self.round(watch)?;
        self.finish(ProcessExit::Running)
    }

    fn round(&mut self, watch: &mut Watch) -> Result<u64, Failure> {
        let Some(out) = self.out.as_mut() else {
            return Ok(0);
        };
        let header = self.live.header();
        let metadata = self.live.metadata().unwrap_or_default();
        let drained = self
            .drainer
            .round(
                self.live.cpu_buffers(),
                &mut self.records.of(&self.live),
                out,
                |page, records| watch.page(header, metadata, records, page),
            )
            .map_err(|e| e.to_string())?;
        if let Some(e) = self.records.take_error() {
            return Err(e.to_string());
        }
        let ticked = out.tick();
        if drained.no_space {
            self.say_full(None);
        }
        self.unless_full(ticked)?;
        Ok(drained.pages)
    }

    /// `result`, unless the file system was full: the session writer
    /// counts what it could not write and tries again at each append, so
    /// the recording goes on (said once).
    fn unless_full<T>(&mut self, result: Result<T, WriteError>) -> Result<(), Failure> {
        match result {
            Ok(_) => Ok(()),
            Err(e @ WriteError::NoSpace { .. }) => {
                self.say_full(Some(&e));
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Says, once, that the file system is full and the recording goes on.
    fn say_full(&mut self, e: Option<&WriteError>) {
        if !std::mem::replace(&mut self.full_said, true) {
            let what = e.map_or_else(
                || {
                    format!(
                        "no space left to write process {}'s session files",
                        self.pid()
                    )
                },
                ToString::to_string,
            );
            eprintln!(
                "ringtrace record: {what}; the recording goes on, counting what is not written (see the summary's NOT WRITTEN)"
            );
        }
    }

    fn drain_to_end(&mut self, watch: &mut Watch) -> Result<(), Failure> {
        while self.round(watch)? > 0 {}
        Ok(())
    }

    fn finish(&mut self, how: ProcessExit) -> Result<(), Failure> {
        if let Some(mut out) = self.out.take() {
            self.exit = Some(how);
            let finished = out.finish(how);
            self.unless_full(finished)?;
            if how != ProcessExit::Running && !self.keep_ring && !self.full_said {
                // Everything it held is in the session now. (Not so when
                // the disk was full: the ring is left for `recover`.)
                let _ = std::fs::remove_file(self.live.path());
            }
        }
        Ok(())
    }
}
