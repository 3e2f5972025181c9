//! Crash recovery. A child process (this test binary, run again on the
//! single test `child_entry`) records numbered, checksummed events from two
//! threads into a file ring, and reports on a pipe how far each thread has
//! committed; it is then killed with SIGKILL at a random moment, aborts
//! while holding a half-written reservation, or panics in the middle of
//! one. The parent recovers the file: nothing torn, invented or out of
//! order comes back, every event the child reported committed is there,
//! and a reservation that never ended is counted, never returned. The
//! same of metadata records a third thread appends while it is killed,
//! and of events written in one call (`CpuWriter::write`) stamped by the TSC,
//! which on the rseq path take the whole-event path.

mod common;
mod file_support;

use file_support::{config, file_error, len_for, CounterFrom, Scratch};
use ringtrace_clock::{AnyClock, Counter};
use ringtrace_ring::file::{self, ExitTime, FileError, Recovery, WriterState};
use ringtrace_ring::{Mode, ReserveError, RingBuffer};
use std::io::{BufRead, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Set in the child: the scenario it plays.
const SCENARIO: &str = "RINGTRACE_FILE_CRASH_SCENARIO";
/// Set in the child: the ring file.
const PATH: &str = "RINGTRACE_FILE_CRASH_PATH";
/// Set in the child: `overwrite` or `discard`.
const MODE: &str = "RINGTRACE_FILE_CRASH_MODE";
/// Seeds the kill times; printed, so that a failure can be repeated.
const SEED: &str = "RINGTRACE_FILE_CRASH_SEED";

/// The writer id of a reservation the child never finishes: none of its
/// events may ever be recovered.
const DOOMED: u32 = 7;
/// Each writer reports its last committed seq every this many events.
const REPORT_EVERY: u64 = 8;
/// The writer id of the metadata records' payloads.
const RECORDS: u32 = 50;

/// The child's ring: two CPU buffers of 1024-byte pages; 16 KB each in
/// overwrite mode, so that it wraps many times. In discard mode 64 KB each
/// when the parent kills it, so that a kill lands while it is still
/// filling about as often as after it filled up; 1 MB when it ends by
/// itself, so that the writers are still at work when it does.
/// With metadata records appended, an annex of 64 KiB: room for about
/// 1,500, filled in about a tenth of a second.
fn child_config(path: &Path, mode: Mode, scenario: &str) -> ringtrace_ring::RingConfig {
    let pages = match (mode, scenario) {
        (Mode::Overwrite, _) => 16,
        (Mode::Discard, "kill" | "kill_whole" | "kill_records" | "stay") => 64,
        (Mode::Discard, _) => 1024,
    };
    let config = config(path, mode, 2, 1024, pages);
    if scenario == "kill_records" {
        config.metadata_capacity(64 * 1024)
    } else {
        config
    }
}

/// Metadata record `seq`: checksummed, 16 to 63 bytes.
fn annex_record(seq: u64) -> Vec<u8> {
    common::payload(RECORDS, seq, 16 + (seq % 48) as usize)
}

/// Appends records 0, 1, 2, ... a few tens of microseconds apart, and
/// reports each (`M seq`) once it is in, until the annex is full (`MF`).
fn append_records(shared: &Shared) {
    for seq in 0.. {
        if shared.ring.append_metadata(&annex_record(seq)).is_err() {
            say("MF");
            return;
        }
        say(&format!("M {seq}"));
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// A line on the child's stdout, whole (a pipe write of under PIPE_BUF
/// bytes is atomic), behind a newline in case the test harness left its
/// own line unfinished.
fn say(line: &str) {
    let line = format!("\n{line}\n");
    // SAFETY: writes a buffer we own to stdout; a failure (the parent
    // gone) only loses the line.
    unsafe { libc::write(1, line.as_ptr().cast(), line.len()) };
}

/// What the child's writers share.
struct Shared {
    ring: RingBuffer<AnyClock>,
    /// Every other event in one call, each writer on its buffer's CPU:
    /// with the TSC on the rseq path, the whole-event path.
    whole: bool,
    stop: AtomicBool,
    committed: [AtomicU64; 2],
    /// Asks writer `t` to wait between two events...
    pause: [AtomicBool; 2],
    /// ...and says it does.
    paused: [AtomicBool; 2],
    /// Slow down after the first events (see `writer`).
    throttle: bool,
}

/// Writer `t`: events 0, 1, 2, ... on buffer `t`, each payload written in
/// two halves (a kill may land between them), committed, and reported
/// every few events. In discard mode it stops when the buffer is full.
fn writer(shared: &Shared, t: u32) {
    let i = t as usize;
    let mut seq = 0u64;
    let mut full = false;
    if shared.whole {
        common::move_to_cpu(i);
    }
    while !shared.stop.load(Ordering::Relaxed) {
        if shared.pause[i].load(Ordering::Acquire) {
            shared.paused[i].store(true, Ordering::Release);
            while shared.pause[i].load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            shared.paused[i].store(false, Ordering::Release);
            continue;
        }
        if full {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        // A discard-mode child that ends by itself must not fill its 1 MB
        // before the scenario reserves the doomed event (on a loaded host
        // it did: that reservation then failed with Full): past the first
        // events, the writers keep writing, slowly.
        if shared.throttle && seq >= 1_000 {
            std::thread::sleep(Duration::from_micros(100));
        }
        let p = common::payload(t, seq, len_for(t, seq));
        let written = if shared.whole && seq % 2 == 1 {
            shared.ring.cpu_writer(i).write(&p).map(drop)
        } else {
            shared.ring.cpu_writer(i).reserve(p.len()).map(|mut r| {
                let half = (p.len() / 2) & !3;
                r.write_at(0, &p[..half]);
                r.write_at(half, &p[half..]);
                r.commit();
            })
        };
        match written {
            Ok(()) => {
                shared.committed[i].store(seq + 1, Ordering::Release);
                if seq % REPORT_EVERY == 0 {
                    say(&format!("R {t} {seq}"));
                }
                seq += 1;
            }
            Err(ReserveError::Full) => {
                if seq > 0 {
                    say(&format!("R {t} {}", seq - 1));
                }
                say(&format!("F {t}"));
                full = true;
            }
            // A reservation left open on this buffer: wait for it.
            Err(ReserveError::Busy | ReserveError::Preparing) => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Waits until both writers have committed `n` events.
fn wait_for_writers(shared: &Shared, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while shared
        .committed
        .iter()
        .any(|c| c.load(Ordering::Acquire) < n)
    {
        assert!(Instant::now() < deadline, "the writers did not start");
        std::thread::yield_now();
    }
}

/// A reservation for `DOOMED` on buffer `cpu`, half its payload written,
/// made while that buffer's writer waits between two events; the writer
/// then goes on, after it. (Made while the writer is in the middle of a
/// reservation of its own, between its space and its first store, the
/// doomed one could lie behind a hole a recovery cannot step over, and go
/// uncounted.)
fn doom(shared: &Shared, cpu: usize) -> ringtrace_ring::Reservation<'_> {
    shared.pause[cpu].store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !shared.paused[cpu].load(Ordering::Acquire) {
        assert!(Instant::now() < deadline, "writer {cpu} did not pause");
        std::thread::yield_now();
    }
    let p = common::payload(DOOMED, 0, 64);
    let r = shared.ring.cpu_writer(cpu).reserve(p.len());
    if r.is_err() {
        // Let the writer go before failing, or joining it would hang.
        shared.pause[cpu].store(false, Ordering::Release);
    }
    let mut r = r.unwrap();
    r.write_at(0, &p[..32]);
    shared.pause[cpu].store(false, Ordering::Release);
    r
}

/// Stops and joins the writers when dropped, before the ring is dropped:
/// so that a panic unwinding the child's test closes the ring cleanly.
struct StopWriters {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for StopWriters {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The child: plays the scenario named in its environment. A no-op in the
/// ordinary run of the tests.
#[test]
fn child_entry() {
    let Ok(scenario) = std::env::var(SCENARIO) else {
        return;
    };
    let path = PathBuf::from(std::env::var(PATH).unwrap());
    let mode = Mode::parse(&std::env::var(MODE).unwrap()).unwrap();
    // Dropped last, after the writers are joined: the ring closes only if
    // this test unwinds (the other scenarios end the process first).
    let whole = scenario == "kill_whole";
    let clock = if whole {
        common::tsc_or_local()
    } else {
        AnyClock::custom(Counter::new())
    };
    let shared = Arc::new(Shared {
        ring: RingBuffer::new(child_config(&path, mode, &scenario), clock).unwrap(),
        whole,
        stop: AtomicBool::new(false),
        committed: [AtomicU64::new(0), AtomicU64::new(0)],
        pause: [AtomicBool::new(false), AtomicBool::new(false)],
        paused: [AtomicBool::new(false), AtomicBool::new(false)],
        throttle: mode == Mode::Discard
            && !matches!(
                scenario.as_str(),
                "kill" | "kill_whole" | "kill_records" | "stay"
            ),
    });
    if whole {
        // Before the writers start, so that it comes before their first
        // report, after which the parent may kill at once.
        say(&format!(
            "PATH {} {}",
            shared.ring.write_path(),
            shared.ring.clock_info().name
        ));
    }
    let threads = (0..2)
        .map(|t| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || writer(&shared, t))
        })
        .collect();
    let writers = StopWriters {
        shared: Arc::clone(&shared),
        threads,
    };
    match scenario.as_str() {
        // Killed by the parent at a moment of its choosing.
        "kill" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        // The same, writing every other event in one call, stamped by
        // the TSC (it said which write path and clock it has).
        "kill_whole" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        // The same, while a third thread appends metadata records.
        "kill_records" => {
            let appender = Arc::clone(&shared);
            std::thread::spawn(move || append_records(&appender));
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        // abort() while this thread holds a half-written reservation on
        // buffer 0, writer 0 writing around it.
        "abort_holding" => {
            wait_for_writers(&shared, 50);
            let r = doom(&shared, 0);
            std::thread::sleep(Duration::from_millis(3));
            say("H");
            std::mem::forget(r);
            std::process::abort();
        }
        // A panic hook that aborts, as with panic = "abort": a thread
        // panics mid-reservation and nothing unwinds.
        "panic_abort_hook" => {
            wait_for_writers(&shared, 50);
            std::panic::set_hook(Box::new(|info| {
                eprintln!("{info}");
                std::process::abort()
            }));
            let doomed = Arc::clone(&shared);
            std::thread::spawn(move || {
                let _r = doom(&doomed, 1);
                std::thread::sleep(Duration::from_millis(2));
                panic!("mid-reservation");
            });
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        // A thread panics mid-reservation and unwinds (its reservation
        // becomes a discard record); then the process ends without
        // dropping the ring, the writers still at it: by exit(), whose exit
        // handler marks the ring closed, or by abort(), which leaves it open.
        "panic_then_exit" | "panic_then_abort" => {
            wait_for_writers(&shared, 50);
            std::panic::set_hook(Box::new(|_| {}));
            let doomed = Arc::clone(&shared);
            let panicked = std::thread::spawn(move || {
                let _r = doom(&doomed, 1);
                std::thread::sleep(Duration::from_millis(2));
                panic!("mid-reservation");
            })
            .join();
            assert!(panicked.is_err());
            say("P");
            std::thread::sleep(Duration::from_millis(2));
            if scenario == "panic_then_exit" {
                std::process::exit(0);
            }
            std::process::abort();
        }
        // This thread panics mid-reservation and unwinds through the test:
        // the writers are stopped and the ring dropped on the way out.
        "panic_unwinds" => {
            wait_for_writers(&shared, 50);
            let _writers = writers;
            let _r = doom(&shared, 1);
            std::thread::sleep(Duration::from_millis(2));
            panic!("mid-reservation, on purpose");
        }
        // Stays alive, writing, until killed.
        "stay" => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        other => panic!("unknown scenario {other}"),
    }
}

/// How a child run ended and what it reported.
#[derive(Debug)]
struct Run {
    pid: u32,
    status: ExitStatus,
    /// Per writer, the last seq it reported committed.
    last: [Option<u64>; 2],
    /// Its stdout lines other than the reports.
    said: Vec<String>,
    stderr: String,
}

/// A child playing `scenario` on `path`, with its stdout parsed as it
/// comes (reports, and a signal when the first arrives).
struct Running {
    child: Child,
    last: Arc<Mutex<[Option<u64>; 2]>>,
    first: mpsc::Receiver<()>,
    stdout: std::thread::JoinHandle<Vec<String>>,
    stderr: std::thread::JoinHandle<String>,
}

fn spawn(scenario: &str, path: &Path, mode: Mode) -> Running {
    let mut child = ringtrace_testkit::self_command()
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(SCENARIO, scenario)
        .env(PATH, path)
        .env(MODE, mode.name())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let last = Arc::new(Mutex::new([None; 2]));
    let (tx, first) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    let seen = Arc::clone(&last);
    let stdout = std::thread::spawn(move || {
        let mut said = Vec::new();
        for line in std::io::BufReader::new(out).lines() {
            let line = line.unwrap_or_default();
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["R", t, seq] = words[..] {
                let (t, seq): (usize, u64) = (t.parse().unwrap(), seq.parse().unwrap());
                let mut last = seen.lock().unwrap();
                assert!(
                    last[t].is_none_or(|l| l <= seq),
                    "writer {t} reported {seq} after {:?}",
                    last[t]
                );
                last[t] = Some(seq);
                let _ = tx.send(());
            } else if !line.is_empty() {
                said.push(line);
            }
        }
        said
    });
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    Running {
        child,
        last,
        first,
        stdout,
        stderr,
    }
}

/// Each thread of process `pid` as "name state wchan", for a hung child.
fn thread_states(pid: u32) -> String {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "unknown".into();
    };
    let read = |task: &Path, file: &str| {
        std::fs::read_to_string(task.join(file))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    dir.flatten()
        .map(|task| {
            let task = task.path();
            let stat = read(&task, "stat");
            let state = stat
                .rsplit(") ")
                .next()
                .unwrap_or("?")
                .split(' ')
                .next()
                .unwrap_or("?")
                .to_string();
            format!(
                "[{} {} {}]",
                read(&task, "comm"),
                state,
                read(&task, "wchan")
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Running {
    /// Waits for the child's first report. (A minute: under qemu-user,
    /// with the other tests' children starting beside it on a loaded
    /// 2-core host, a child once took more than 20 s to say anything.)
    fn started(mut self) -> Running {
        if self.first.recv_timeout(Duration::from_secs(60)).is_err() {
            self.kill();
            panic!("the child never reported: {:?}", self.finish());
        }
        self
    }

    fn kill(&mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: signals our own child, not yet waited for.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    }

    /// Waits for the child to end (killing it after 30 s) and collects
    /// what it said.
    fn finish(mut self) -> Run {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let threads = thread_states(self.child.id());
                self.kill();
                let _ = self.child.wait();
                panic!(
                    "the child did not end within 30 s; its threads (name state wchan): {threads}"
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let said = self.stdout.join().unwrap();
        let stderr = self.stderr.join().unwrap();
        let last = *self.last.lock().unwrap();
        Run {
            pid: self.child.id(),
            status,
            last,
            said,
            stderr,
        }
    }
}

/// A small pseudo-random generator (xorshift64*), seeded and printed so a
/// failing run can be repeated with `RINGTRACE_FILE_CRASH_SEED`.
struct Rng(u64);

impl Rng {
    fn from_env(test: &str) -> Rng {
        let seed = ringtrace_testkit::seed(SEED, test);
        Rng(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// What must hold of any recovery of a child's file, whatever stopped it:
/// every event whole (checksum and length right) and its writer's; each
/// buffer's times strictly increasing; each writer's seqs gap-free,
/// from 0 in discard mode, and reaching at least its last report. Returns
/// per writer the (first, last) seq recovered.
fn check_recovery(rec: &Recovery, mode: Mode, run: &Run) -> [Option<(u64, u64)>; 2] {
    check_recovery_timed(rec, mode, run, true)
}

/// [`check_recovery`], with each buffer's times only non-decreasing
/// unless `strict` (a real clock read twice within a tick, or held back
/// by a fixup, gives one time twice; the counter never does).
fn check_recovery_timed(
    rec: &Recovery,
    mode: Mode,
    run: &Run,
    strict: bool,
) -> [Option<(u64, u64)>; 2] {
    let mut spans = [None; 2];
    for (t, span) in spans.iter_mut().enumerate() {
        let c = &rec.cpus[t];
        let what = format!("{mode} mode, buffer {t}, reported {:?}", run.last[t]);
        let mut previous: Option<(u64, u64)> = None; // (ts, seq)
        for e in &c.events {
            let (w, seq) = common::check(&e.payload)
                .unwrap_or_else(|err| panic!("{what}: a torn event: {err}"));
            assert_eq!(
                w, t as u32,
                "{what}: an event of writer {w} (never written here)"
            );
            assert_eq!(
                e.payload.len(),
                len_for(w, seq),
                "{what}: seq {seq} has the wrong length"
            );
            if let Some((ts, s)) = previous {
                assert!(
                    e.ts > ts || (!strict && e.ts == ts),
                    "{what}: time went from {ts} to {} at seq {seq}",
                    e.ts
                );
                assert_eq!(seq, s + 1, "{what}: seq {s} followed by {seq}");
            }
            previous = Some((e.ts, seq));
        }
        let first = c
            .events
            .first()
            .map(|e| common::check(&e.payload).unwrap().1);
        let last = previous.map(|(_, s)| s);
        if mode == Mode::Discard && first.is_some() {
            assert_eq!(
                first,
                Some(0),
                "{what}: discard mode lost the oldest events"
            );
        }
        if let Some(reported) = run.last[t] {
            assert!(
                last.is_some_and(|l| l >= reported),
                "{what}: recovered up to {last:?}"
            );
        }
        // One writer per buffer: only its last reservation can be open,
        // and nothing committed lies behind it. (In overwrite mode a kill
        // between the first two steps of a page claim leaves the oldest
        // page unread, counted here: see
        // a_kill_between_the_first_two_steps_of_a_claim_loses_no_event.)
        if mode == Mode::Discard {
            assert_eq!(
                c.counts.skipped_unreadable, 0,
                "{what}: {:?} {:?}",
                c.counts, c.problems
            );
        }
        assert_eq!(c.counts.changed_while_read, 0, "{what}: the writer is dead");
        assert!(
            !c.problems.iter().any(|p| p.contains("damaged")),
            "{what}: a crash is not damage: {:?}",
            c.problems
        );
        *span = first.zip(last);
    }
    spans
}

fn recover_after(path: &Path, run: &Run, want: WriterState) -> Recovery {
    let rec = file::recover(path)
        .unwrap_or_else(|e| panic!("{e}; child said {:?}, stderr:\n{}", run.said, run.stderr));
    // An exit's time is the child's: the state's kind is what is wanted.
    assert_eq!(
        std::mem::discriminant(&rec.writer),
        std::mem::discriminant(&want),
        "{:?}, {run:?}",
        rec.writer
    );
    assert_eq!(rec.header.pid, run.pid, "the header names the writer");
    rec
}

/// SIGKILLs `kills` children at random moments and checks each file.
fn killed_at_random(mode: Mode, kills: usize) {
    killed_at_random_playing("kill", mode, kills);
}

/// [`killed_at_random`], the children playing `scenario` ("kill", or
/// "kill_whole": events in one call stamped by the TSC).
fn killed_at_random_playing(scenario: &str, mode: Mode, kills: usize) {
    let scratch = Scratch::new(scenario);
    let mut rng = Rng::from_env(&format!("killed_at_random({scenario}, {mode})"));
    let mut pending_seen = 0;
    for i in 0..kills {
        let path = scratch.path(&format!("{i}.ring"));
        let child = spawn(scenario, &path, mode);
        let mut child = child.started();
        let wait = 1 + rng.below(30);
        std::thread::sleep(Duration::from_millis(wait));
        child.kill();
        let run = child.finish();
        assert_eq!(run.status.signal(), Some(libc::SIGKILL), "{run:?}");
        let rec = recover_after(&path, &run, WriterState::Died);
        check_recovery_timed(&rec, mode, &run, scenario == "kill");
        if scenario == "kill_whole" {
            check_whole_path(&run);
        }
        for c in &rec.cpus {
            // One writer per buffer: at most its one open reservation.
            assert!(c.counts.skipped_pending <= 1, "{:?}", c.counts);
            pending_seen += c.counts.skipped_pending;
        }
        std::fs::remove_file(&path).unwrap();
    }
    eprintln!("{scenario}, {mode}: {kills} kills, {pending_seen} caught mid-event");
}

/// A "kill_whole" child said its write path and clock: where the rseq
/// path is required (RINGTRACE_REQUIRE_RSEQ=1, as CI sets on x86_64) and
/// not overridden (`RINGTRACE_WRITE_PATH=cas`, the suite's CAS pass), it
/// must have had the rseq path and the TSC, or its one-call writes did not
/// take the whole-event path this test is for.
fn check_whole_path(run: &Run) {
    let said = run
        .said
        .iter()
        .find_map(|l| l.strip_prefix("PATH "))
        .unwrap_or_else(|| panic!("the child did not say its path: {run:?}"));
    let required = cfg!(target_arch = "x86_64")
        && std::env::var("RINGTRACE_REQUIRE_RSEQ").as_deref() == Ok("1")
        && std::env::var(ringtrace_ring::rseq::WRITE_PATH_ENV).as_deref() != Ok("cas");
    if required {
        assert_eq!(said, "rseq tsc", "RINGTRACE_REQUIRE_RSEQ=1: {run:?}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn sigkill_at_random_moments_in_overwrite_mode_loses_nothing_committed() {
    killed_at_random(Mode::Overwrite, 12);
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn sigkill_while_events_are_written_whole_loses_nothing_committed_in_either_mode() {
    killed_at_random_playing("kill_whole", Mode::Overwrite, 8);
    killed_at_random_playing("kill_whole", Mode::Discard, 8);
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn sigkill_at_random_moments_in_discard_mode_loses_nothing_committed() {
    killed_at_random(Mode::Discard, 12);
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn sigkill_while_metadata_records_are_appended_keeps_every_record_reported() {
    let scratch = Scratch::new("kill-records");
    let mut rng = Rng::from_env("sigkill_while_metadata_records_are_appended");
    for i in 0..8 {
        let mode = [Mode::Overwrite, Mode::Discard][i % 2];
        let path = scratch.path(&format!("{i}.ring"));
        let mut child = spawn("kill_records", &path, mode).started();
        std::thread::sleep(Duration::from_millis(1 + rng.below(30)));
        child.kill();
        let run = child.finish();
        assert_eq!(run.status.signal(), Some(libc::SIGKILL), "{run:?}");
        let rec = recover_after(&path, &run, WriterState::Died);
        check_recovery(&rec, mode, &run);
        assert!(
            rec.annex_problems().is_empty(),
            "{:?}",
            rec.annex_problems()
        );
        let records = rec.metadata_records();
        for (seq, r) in records.iter().enumerate() {
            assert_eq!(*r, annex_record(seq as u64), "record {seq} is torn");
        }
        let reported = run
            .said
            .iter()
            .filter_map(|l| l.strip_prefix("M ")?.parse::<u64>().ok())
            .max();
        if let Some(last) = reported {
            assert!(
                records.len() as u64 > last,
                "record {last} was reported, {} recovered",
                records.len()
            );
        }
        eprintln!(
            "{mode}: killed after {reported:?} reported, {} recovered",
            records.len()
        );
        std::fs::remove_file(&path).unwrap();
    }
}

/// Runs `scenario` to its end in both modes and checks the file: the
/// doomed reservation never comes back, and is counted pending on
/// `pending_on` if it never ended, or discarded if it unwound.
fn ends_by_itself(
    scenario: &str,
    unwound: bool,
    want_status: impl Fn(&ExitStatus) -> bool,
    want: WriterState,
) {
    let scratch = Scratch::new(scenario);
    for mode in [Mode::Overwrite, Mode::Discard] {
        let path = scratch.path(&format!("{mode}.ring"));
        let child = spawn(scenario, &path, mode);
        let child = child.started();
        let run = child.finish();
        assert!(want_status(&run.status), "{scenario}, {mode}: {run:?}");
        let rec = recover_after(&path, &run, want);
        check_recovery(&rec, mode, &run);
        let doomed_on = if scenario == "abort_holding" { 0 } else { 1 };
        let c = &rec.cpus[doomed_on];
        if unwound {
            assert_eq!(
                c.file_stats.discarded, 1,
                "{scenario}, {mode}: the unwound reservation is a discard"
            );
            assert!(
                c.counts.skipped_pending <= 1,
                "{scenario}, {mode}: {:?}",
                c.counts
            );
        } else {
            // The doomed reservation, and perhaps the writer's own.
            assert!(
                (1..=2).contains(&c.counts.skipped_pending),
                "{scenario}, {mode}: {:?}",
                c.counts
            );
            assert_eq!(c.file_stats.discarded, 0);
        }
        if scenario == "panic_unwinds" {
            // Writers stopped before the ring was dropped: everything adds up.
            // (At `exit()` they are still at it: the ring is marked exited
            // by the exit handler, but a writer may be mid-event as the
            // process ends, as in a crash.)
            assert!(
                !rec.has_problems(),
                "{:?}",
                rec.cpus.iter().map(|c| &c.problems).collect::<Vec<_>>()
            );
            assert_eq!(rec.totals().skipped_pending, 0);
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn abort_while_holding_a_half_written_reservation_counts_it_pending() {
    ends_by_itself(
        "abort_holding",
        false,
        |s| s.signal() == Some(libc::SIGABRT),
        WriterState::Died,
    );
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn a_panic_that_aborts_mid_reservation_counts_it_pending() {
    ends_by_itself(
        "panic_abort_hook",
        false,
        |s| s.signal() == Some(libc::SIGABRT),
        WriterState::Died,
    );
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn a_thread_panicking_mid_reservation_then_exit_leaves_a_discard() {
    // exit() runs the exit handlers: the ring, never dropped, is marked
    // exited.
    ends_by_itself(
        "panic_then_exit",
        true,
        |s| s.code() == Some(0),
        WriterState::Exited(ExitTime::new(None, None)),
    );
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn a_thread_panicking_mid_reservation_then_abort_leaves_a_discard() {
    ends_by_itself(
        "panic_then_abort",
        true,
        |s| s.signal() == Some(libc::SIGABRT),
        WriterState::Died,
    );
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn a_panic_unwinding_through_the_ring_closes_it_with_a_discard() {
    ends_by_itself(
        "panic_unwinds",
        true,
        |s| s.code() == Some(101),
        WriterState::Closed,
    );
}

#[test]
#[cfg_attr(miri, ignore = "processes and signals")]
fn append_waits_for_the_writer_to_be_gone_then_goes_on_after_its_events() {
    let scratch = Scratch::new("append-live");
    for mode in [Mode::Overwrite, Mode::Discard] {
        let path = scratch.path(&format!("{mode}.ring"));
        let child = spawn("stay", &path, mode);
        let mut child = child.started();
        // The child is alive and writing: not ours to write.
        let live = file::recover(&path).unwrap();
        assert_eq!(live.writer, WriterState::Live);
        let made = RingBuffer::new(
            child_config(&path, mode, "stay").append(true),
            Counter::new(),
        );
        match file_error(made) {
            FileError::Mismatch { what, .. } => {
                assert!(what.contains(&child.child.id().to_string()), "{what}")
            }
            other => panic!("{other:?}"),
        }
        child.kill();
        let run = child.finish();
        let dead = recover_after(&path, &run, WriterState::Died);
        let spans = check_recovery(&dead, mode, &run);
        // Now it is: the events go on after the child's, in time too.
        let after_ts = dead.merged().last().map_or(0, |e| e.ts) + 1000;
        let clock = CounterFrom(AtomicU64::new(after_ts));
        let ring = RingBuffer::new(child_config(&path, mode, "stay").append(true), clock).unwrap();
        let mut added = [0u64; 2];
        for (t, span) in spans.iter().enumerate() {
            let next = span.map_or(0, |(_, last)| last + 1);
            for seq in next..next + 10 {
                let p = common::payload(t as u32, seq, len_for(t as u32, seq));
                match ring.cpu_writer(t).write(&p) {
                    Ok(_) => added[t] += 1,
                    // Discard mode full, or overwrite mode come round to
                    // the dead writer's open reservation.
                    Err(ReserveError::Full | ReserveError::Busy | ReserveError::Preparing) => break,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        drop(ring);
        let rec = file::recover(&path).unwrap();
        assert_eq!(rec.writer, WriterState::Closed);
        // The child's events as they were, then what was added: each
        // recovered, or counted unreadable (see
        // append_after_a_kill_mid_reservation_keeps_the_new_events).
        for t in 0..2 {
            let at = format!("{mode}, buffer {t}");
            let c = &rec.cpus[t];
            let seqs: Vec<u64> = c
                .events
                .iter()
                .map(|e| common::check(&e.payload).unwrap_or_else(|err| panic!("{at}: {err}")))
                .map(|(w, seq)| {
                    assert_eq!(w, t as u32, "{at}");
                    seq
                })
                .collect();
            let next = spans[t].map_or(0, |(_, last)| last + 1);
            let (old, new) = seqs.split_at(seqs.partition_point(|&s| s < next));
            let was: Vec<u64> = dead.cpus[t]
                .events
                .iter()
                .map(|e| common::check(&e.payload).unwrap().1)
                .collect();
            assert_eq!(
                old,
                &was[was.len() - old.len()..],
                "{at}: the child's events changed: {:?} {:?}",
                c.problems,
                c.counts
            );
            if mode == Mode::Discard {
                assert_eq!(old, was, "{at}: discard mode lost the child's events");
            }
            assert!(
                new.windows(2).all(|w| w[0] < w[1]) && new.iter().all(|&s| s < next + added[t]),
                "{at}: {new:?}"
            );
            if mode == Mode::Discard {
                let unreadable =
                    c.counts.skipped_unreadable - dead.cpus[t].counts.skipped_unreadable;
                assert_eq!(
                    new.len() as u64 + unreadable,
                    added[t],
                    "{at}: {:?} {:?}",
                    c.counts,
                    c.problems
                );
            }
        }
    }
}
