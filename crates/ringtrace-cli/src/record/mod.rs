//! `ringtrace record`: a session of one or more traced processes streamed
//! to disk.
//!
//! The recorder makes the session directory, starts the command with the
//! session in its environment (or takes ring files that exist, with
//! `--attach`), and then, every few milliseconds: opens the ring files
//! that appeared in the session's `rings/` directory, drains every ring
//! in place into the session (pages, losses with their cause, metadata
//! records), and notes how each process ended. A ring whose writer
//! closed it (dropped it, or exited normally with it) is drained to its
//! end once its process is gone; one whose
//! process died with it open is drained, then recovered. The session is
//! finished when the command has exited and every ring is done, or when
//! the recorder is asked to stop (SIGINT or SIGTERM, which it passes on
//! first to the command and to every running process of the session).

#[cfg(feature = "otlp")]
mod hold;
mod live;
mod options;
#[cfg(feature = "otlp")]
mod otlp;
pub mod priority;
pub mod rings;
pub mod spawn;
mod stillborn;
mod tracked;
mod watch;

pub use options::{parse_size, RecordOptions, RecordedMode};
use rings::RingFinder;
use ringtrace_session::{SessionSummary, SessionWriter};
use spawn::{Ended, Traced};
use std::time::{Duration, Instant};
use tracked::Tracked;

/// How long the recorder sleeps when a round drained nothing and the
/// writers have been quiet a while (see `ringtrace_session::Pacer`).
const IDLE: Duration = Duration::from_millis(2);
/// Pages a round should find before the next comes at once (or a quarter
/// of the smallest buffer): fewer, and the recorder sleeps for about that
/// many to come first, so that its rounds and writes are fewer and larger
/// (each costs system time of its own, whatever it drains).
const GATHER_PAGES: u64 = 32;
/// After the command exits, how long the recorder keeps looking for ring
/// files of processes it left behind that are still being set up.
const LINGER: Duration = Duration::from_millis(200);
/// How long after a stop request the command may take to exit before the
/// recorder finishes without it.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// A process the recording followed.
#[derive(Debug, Clone)]
pub struct RecordedProcess {
    /// Its pid.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// Its ring's clock.
    pub clock: String,
    /// How it ended.
    pub exit: Option<ringtrace_session::ProcessExit>,
    /// Its ring file.
    pub ring: std::path::PathBuf,
}

/// What a recording did.
#[derive(Debug)]
pub struct Recorded {
    /// The session directory.
    pub dir: std::path::PathBuf,
    /// The session's counts, per process.
    pub summary: SessionSummary,
    /// Each process, in the order its ring was found.
    pub processes: Vec<RecordedProcess>,
    /// How the command ended (none with `--attach`, or when the recorder
    /// stopped first).
    pub command: Option<Ended>,
    /// Ring files the recorder could not drain, and why, rings whose
    /// clocks do not compare with the first's, and processes that died
    /// before they had set up their ring: one line each.
    pub refused: Vec<String>,
    /// The stop signal that ended the recording early, if one did.
    pub stopped_by: Option<i32>,
    /// The recorder's own CPU time (user and system), in ns.
    pub cpu_ns: u64,
    /// With `--endpoint`: what the OTLP stream sent, or why not all.
    #[cfg(feature = "otlp")]
    pub otlp: Option<Result<ringtrace_otlp::OtlpSummary, ringtrace_otlp::OtlpError>>,
}

/// This process's CPU time so far (user and system), in ns.
fn own_cpu_ns() -> u64 {
    // SAFETY: getrusage fills the struct we own; a zeroed rusage is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

impl Recorded {
    /// The recording in words, a line per process and one for the
    /// session.
    pub fn lines(&self) -> Vec<String> {
        use ringtrace_session::LossCause;
        let mut lines = Vec::new();
        let mut events = 0;
        let mut disk = 0;
        for (p, s) in self.processes.iter().zip(&self.summary.processes) {
            let t = &s.totals;
            events += t.events;
            disk += t.disk_bytes;
            let lost: Vec<String> = LossCause::ALL
                .iter()
                .filter(|c| t.lost(**c) > 0)
                .map(|c| format!("{} {c}", t.lost(*c)))
                .collect();
            let lost = if lost.is_empty() {
                "none lost".to_owned()
            } else {
                format!("lost {}", lost.join(", "))
            };
            let unwritten = if t.unwritten.events + t.unwritten.pages + t.unwritten.lost > 0 {
                format!(
                    "; NOT WRITTEN: {} pages ({} events), the records of {} events lost",
                    t.unwritten.pages, t.unwritten.events, t.unwritten.lost
                )
            } else {
                String::new()
            };
            let mut exit = p
                .exit
                .map_or_else(|| "not finished".to_owned(), |e| e.to_string());
            // Still writing: what it writes from now on is in its ring,
            // which is left for a recorder to go on with.
            if p.exit == Some(ringtrace_session::ProcessExit::Running) && p.ring.exists() {
                exit.push_str(&format!(
                    "; its ring stays at {} (`ringtrace record -o DIR --attach {}` drains the rest into another session)",
                    p.ring.display(),
                    p.ring.display()
                ));
            }
            lines.push(format!(
                "{}-{} (clock {}): {} events in {} pages, {} bytes on disk, {lost}{unwritten}; {exit}",
                ringtrace_export::text::escape(&p.comm),
                p.pid,
                p.clock,
                t.events,
                t.pages,
                t.disk_bytes
            ));
        }
        for r in &self.refused {
            lines.push(r.clone());
        }
        let failed = self
            .command
            .filter(|c| !matches!(c, Ended::Code(0)))
            .map(|c| format!(" (the command {c} without making one: see what it printed)"))
            .unwrap_or_default();
        if self.processes.is_empty() && self.refused.is_empty() {
            lines.push(format!(
                "no process recorded{failed}: a program records into the session when its tracer is built with `Tracer::builder().from_env()`"
            ));
        } else if self.processes.is_empty() {
            lines.push("no process recorded (see above)".to_owned());
        }
        let per_million = if events > 0 {
            format!(
                ", {:.1} ms of the recorder's CPU per million events",
                self.cpu_ns as f64 / 1e6 / (events as f64 / 1e6)
            )
        } else {
            String::new()
        };
        let n = self.processes.len();
        lines.push(format!(
            "{} events of {n} {} in {} ({disk} bytes{per_million})",
            events,
            if n == 1 { "process" } else { "processes" },
            self.dir.display()
        ));
        if let Some(line) = rotated_out_line(&self.summary.rotated_out) {
            lines.push(line);
        }
        lines
    }
}

/// What `--max-size` deleted, in words, if anything: the events drained
/// but no longer in the session (not lost: kept out by the size limit).
pub fn rotated_out_line(r: &ringtrace_session::RotatedOut) -> Option<String> {
    (r.chunks > 0).then(|| {
        format!(
            "rotated out to keep the session under --max-size: {} events in {} chunks ({} pages, {} bytes on disk), the oldest; the counts above include them, the session no longer holds them",
            r.events, r.chunks, r.pages, r.disk_bytes
        ) + &rotated_losses(r)
    })
}

/// The losses the rotated-out chunks recorded, which readers still count
/// (before the first event kept), as a clause: empty when there were none.
pub fn rotated_losses(r: &ringtrace_session::RotatedOut) -> String {
    match r.lost_total() {
        0 => String::new(),
        n => format!(
            "; the {n} events they recorded as lost are still counted, before the first event kept"
        ),
    }
}

/// A ring file given to `--attach`, as far as telling it from another.
struct Attached<'a> {
    path: &'a std::path::Path,
    /// Its device and inode.
    inode: (u64, u64),
    /// Its process and the moment it was opened: pid, the wall-clock
    /// anchor's ns and ticks.
    ring: (u32, u64, u64),
}

/// Records the session `options` describe. Errors are one line naming
/// what is wrong.
pub fn record(options: &RecordOptions) -> Result<Recorded, String> {
    // Files to attach are checked before the session is made: a file
    // that cannot be drained is an error, with nothing written.
    let mut attached: Vec<Attached<'_>> = Vec::new();
    for file in options.attach.iter().flatten() {
        let live = ringtrace_ring::file::LiveFile::open(file)
            .map_err(|e| format!("--attach {}: {e}", file.display()))?;
        // One ring twice (a link, or a copy: one process's ring opened at
        // one moment) would be one process added twice.
        let id = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(file).map_or((0, 0), |m| (m.dev(), m.ino()))
        };
        let h = live.header();
        let ring = (h.pid, h.wall_ns, h.anchor_ticks);
        if let Some(first) = attached.iter().find(|a| a.inode == id || a.ring == ring) {
            return Err(format!(
                "--attach {}: the same ring as {} (process {}): give each ring once",
                file.display(),
                first.path.display(),
                h.pid
            ));
        }
        attached.push(Attached {
            path: file,
            inode: id,
            ring,
        });
    }
    // Before the session is made: a priority refused is an error with
    // nothing written. Reset on fork, so the command runs as usual.
    if let Some(priority) = options.realtime {
        priority::run_realtime(priority)?;
    }
    let existed = options.output.exists();
    let session = SessionWriter::create(&options.output, options.session.clone())
        .map_err(|e| e.to_string())?;
    let rings_dir = session.rings_dir();
    let (mut finder, mut command) = match &options.attach {
        Some(files) => (RingFinder::named(files.clone()), None),
        None => {
            let env = options.environment(&session);
            match Traced::start(&options.command, &env) {
                Ok(traced) => (RingFinder::watching(&rings_dir), Some(traced)),
                Err(e) => {
                    // Nothing was recorded: take back what was made, so
                    // that the directory can be given again.
                    drop(session);
                    unmake(&options.output, existed);
                    return Err(e);
                }
            }
        }
    };
    let _ = crate::stop::install();
    let mut tracked: Vec<Tracked> = Vec::new();
    let mut noted = stillborn::Noted {
        keep_rings: options.keep_rings || options.attach.is_some(),
        ..stillborn::Noted::default()
    };
    // Rings whose process died setting them up, waiting for it to be
    // reaped.
    let mut unborn: Vec<rings::Stillborn> = Vec::new();
    let mut watch = watch::Watch {
        printer: options.live.then(live::Printer::default),
        #[cfg(feature = "otlp")]
        otlp: options.otlp.clone().map(otlp::OtlpStream::start),
    };
    let mut ended_at: Option<Instant> = None;
    let mut stop_at: Option<Instant> = None;
    let mut forwarded = false;
    // The pids the stop signal was passed on to.
    let mut signalled: Vec<u32> = Vec::new();
    let mut pacer = ringtrace_session::Pacer::new(IDLE).gather(GATHER_PAGES);
    // Clocks said not to compare across processes.
    let mut said_clocks: Vec<String> = Vec::new();
    loop {
        let found = finder.look();
        for (live, start) in found.opened {
            // A ring the user named (`--attach`) is theirs: never removed.
            let keep = options.keep_rings || options.attach.is_some();
            // Processes whose clocks do not compare are recorded, but
            // merge only aligned by their wall-clock anchors: said now,
            // once per clock that compares with no other process's, and
            // once per process whose clock differs from the first's.
            let clock = &live.header().clock;
            let alone = ringtrace_export::clocks_incomparable(clock, clock);
            let line = match (alone, tracked.first()) {
                // `--clock` named it: said when the recording started.
                (Some(_), _) if options.clock.is_some() => None,
                (Some(why), _) if !said_clocks.contains(&clock.name) => {
                    said_clocks.push(clock.name.clone());
                    Some(format!(
                        "clock `{}` does not compare across processes ({why}): `ringtrace dump` and `export` read this session's processes together only with --align-wall-clock; give the programs a global clock (--clock mono, boot or tsc-ordered) to merge them by time",
                        clock.name
                    ))
                }
                (None, Some(first)) => {
                    ringtrace_export::clocks_incomparable(&first.header().clock, clock).map(|why| {
                        format!(
                            "{}: its clock does not compare with {}'s: {why}; `ringtrace dump` and `export` read this session with --align-wall-clock (give every program one global clock with --clock)",
                            live.path().display(),
                            first.path().display()
                        )
                    })
                }
                _ => None,
            };
            if let Some(line) = line {
                eprintln!("ringtrace record: {line}");
                noted.lines.push(line);
            }
            tracked.push(Tracked::open(&session, live, start, keep)?);
            noted.order.push(None);
        }
        for (path, why) in found.refused {
            noted.refused(path, &why);
        }
        let command_ended = command.as_mut().and_then(Traced::ended);
        if command_ended.is_some() && ended_at.is_none() {
            ended_at = Some(Instant::now());
        }
        // A stillborn ring of the command itself waits for the command to
        // be reaped (its other threads may still be exiting after its
        // main one), to be noted with how it ended.
        unborn.extend(found.stillborn);
        for ring in std::mem::take(&mut unborn) {
            let exit = match (&command, command_ended) {
                (Some(c), None) if c.pid() == ring.pid => {
                    unborn.push(ring);
                    continue;
                }
                (Some(c), Some(ended)) if c.pid() == ring.pid => Some(ended),
                _ => None,
            };
            noted.stillborn(&session, ring, exit)?;
        }
        let mut pages = 0;
        for t in tracked.iter_mut().filter(|t| !t.is_done()) {
            let exit = match (&command, command_ended) {
                (Some(c), Some(ended)) if c.pid() == t.pid() => Some(ended),
                _ => None,
            };
            pages += t.step(exit, &mut watch).map_err(|e| e.to_string())?;
        }
        watch.round();
        if crate::stop::requested() {
            let signal = crate::stop::first_signal().unwrap_or(libc::SIGTERM);
            if !forwarded {
                forwarded = true;
                stop_at = Some(Instant::now());
                if let Some(c) = command.as_mut() {
                    c.signal(signal);
                    signalled.push(c.pid());
                }
            }
            // The processes the command started, which trace into the
            // session (a shell's children, a server's workers), are asked
            // too, those whose rings are found while the recorder stops
            // included: the session ends when they do. Rings named with
            // --attach are not the recorder's to stop.
            if command.is_some() {
                for t in &tracked {
                    if !signalled.contains(&t.pid()) && t.signal_writer(signal) {
                        signalled.push(t.pid());
                    }
                }
            }
        }
        let all_done =
            tracked.iter().all(Tracked::is_done) && finder.settled() && unborn.is_empty();
        let finished = match (&command, ended_at) {
            // The command's processes may still be making their rings.
            (Some(_), Some(at)) => all_done && at.elapsed() >= LINGER,
            (Some(_), None) => false,
            (None, _) => all_done,
        };
        let given_up = stop_at.is_some_and(|at| at.elapsed() >= STOP_WAIT)
            || (stop_at.is_some() && command.is_none());
        if finished || given_up {
            break;
        }
        // The smallest buffer being drained bounds the sleeps.
        let smallest = tracked
            .iter()
            .filter(|t| !t.is_done())
            .map(|t| t.header().pages_per_cpu as u64)
            .min();
        if let Some(pages) = smallest {
            pacer.capacity(pages);
        }
        if let Some(sleep) = pacer.after_round(pages) {
            std::thread::sleep(sleep);
        }
    }
    for t in tracked.iter_mut().filter(|t| !t.is_done()) {
        t.stop(&mut watch).map_err(|e| e.to_string())?;
    }
    for ring in unborn {
        noted.stillborn(&session, ring, None)?;
    }
    #[cfg(feature = "otlp")]
    let otlp = watch.otlp.take().map(otlp::OtlpStream::finish);
    let summary = session.finish().map_err(|e| e.to_string())?;
    if command.is_some() {
        // The session is finished: a process of the command that starts
        // its ring now finds no rings/ directory, and its tracer says the
        // session is not running, rather than writing where nobody reads.
        let _ = std::fs::remove_dir(&rings_dir);
        let drained: Vec<&std::path::Path> = tracked.iter().map(|t| t.path()).collect();
        for late in std::fs::read_dir(&rings_dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = late.path();
            if path.extension().is_some_and(|e| e == "ring")
                && !drained.contains(&path.as_path())
                && !noted.reported.contains(&path)
            {
                noted.lines.push(format!(
                    "{}: not drained: made after the command and its processes had ended (a process the command left running); `ringtrace record --attach` drains it",
                    path.display()
                ));
            }
        }
    }
    Ok(Recorded {
        dir: session.dir().to_owned(),
        summary,
        processes: {
            let mut tracked = tracked.iter();
            noted
                .order
                .into_iter()
                .filter_map(|p| p.or_else(|| tracked.next().map(Tracked::described)))
                .collect()
        },
        command: command.as_mut().and_then(Traced::ended),
        refused: noted.lines,
        stopped_by: crate::stop::first_signal(),
        cpu_ns: own_cpu_ns(),
        #[cfg(feature = "otlp")]
        otlp,
    })
}

/// Removes the session made at `dir` for a recording that never started:
/// the directory's contents, and the directory too unless it `existed`
/// (empty) before.
fn unmake(dir: &std::path::Path, existed: bool) {
    if existed {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}
