//! `ringtrace record`: programs (this test binary, started again in a
//! traced role) record through `Tracer::builder().from_env()`, the
//! recorder streams their rings into a session, and the session reads
//! back whole: two processes merged, read by `dump`, trace-cmd and
//! babeltrace2; every committed event of a program killed at a random
//! moment; bad input refused with one clear line.

use ringtrace::{trace, tracepoint, Tracer};
use ringtrace_session::Session;
use ringtrace_testkit::TempDir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

tracepoint! {
    system = rec;
    /// One step of a traced thread.
    pub fn step(thread: u32, seq: u64) = "thread={} seq={}";
}

/// Set in a traced program: its role (`steps`, `parent`, `burst`: steps
/// without pauses, `forever`, `quick`).
const ROLE: &str = "RINGTRACE_TEST_TRACED_ROLE";
/// Events per thread (roles `steps` and `parent`).
const EVENTS: u64 = 2_000;

/// The traced program: does nothing unless started in a role.
#[test]
fn traced_program() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    if role == "dies-setting-up" {
        die_setting_up();
    }
    let tracer = Tracer::builder().from_env().build().unwrap();
    match role.as_str() {
        "quick" => {}
        "live" => {
            tracer.install().unwrap();
            ringtrace::tracepoint::registry::enable("rec:step").unwrap();
            trace!(step(0, 0));
            eprintln!("FIRED {}", ringtrace::clock::monotonic_ns());
            std::thread::sleep(Duration::from_millis(1500));
            trace!(step(0, 1));
        }
        "burst" => {
            // Each thread writes until the ring has refused some (at
            // least EVENTS each, at most 50 times as many), then, once
            // the recorder has made room, one event after the refusals,
            // which marks them; it says how many it fired. Each thread
            // stays on one CPU, so that its marking event goes to the
            // buffer that refused (a thread moved during its sleep would
            // leave that buffer's refusals after its last event).
            tracer.install().unwrap();
            ringtrace::tracepoint::registry::enable("rec:step").unwrap();
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            let threads: Vec<_> = (0..2u32)
                .map(|w| {
                    std::thread::spawn(move || {
                        pin_to_cpu(w as usize % cpus);
                        let mut fired = 0u64;
                        while fired < EVENTS
                            || (ringtrace::tracepoint::dropped() == 0 && fired < 50 * EVENTS)
                        {
                            trace!(step(w, fired));
                            fired += 1;
                        }
                        std::thread::sleep(Duration::from_millis(200));
                        trace!(step(w, fired));
                        fired + 1
                    })
                })
                .collect();
            let fired: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
            println!("FIRED {fired}");
        }
        "steps" | "parent" => {
            tracer.install().unwrap();
            ringtrace::tracepoint::registry::enable("rec:step").unwrap();
            let child = (role == "parent").then(|| {
                traced_command("steps")
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            });
            let threads: Vec<_> = (0..2u32)
                .map(|w| {
                    std::thread::spawn(move || {
                        for seq in 0..EVENTS {
                            trace!(step(w, seq));
                            if seq % 64 == 0 {
                                std::thread::sleep(Duration::from_micros(200));
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            if let Some(mut child) = child {
                assert!(child.wait().unwrap().success());
            }
        }
        "fork" => {
            // The parent writes, forks and exits at once; the child,
            // sharing its ring, writes after the parent is gone.
            tracer.install().unwrap();
            ringtrace::tracepoint::registry::enable("rec:step").unwrap();
            for seq in 0..EVENTS {
                trace!(step(0, seq));
            }
            // SAFETY: this process has one thread here (the test harness
            // runs with --test-threads=1 and no thread was spawned); the
            // child only writes tracepoints, sleeps and exits.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                std::thread::sleep(Duration::from_millis(300));
                for seq in 0..EVENTS {
                    trace!(step(1, seq));
                    if seq % 64 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
        "forever" => {
            // Numbered raw events from two threads, each written again
            // until the ring takes it: the ones committed are gap-free.
            // Once both have committed one, `<session>.started` is made.
            let tracer = std::sync::Arc::new(tracer);
            let started = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
            let threads: Vec<_> = (0..2u32)
                .map(|w| {
                    let tracer = std::sync::Arc::clone(&tracer);
                    let started = std::sync::Arc::clone(&started);
                    std::thread::spawn(move || {
                        for seq in 0u64.. {
                            let mut payload = [0u8; 12];
                            payload[..4].copy_from_slice(&w.to_le_bytes());
                            payload[4..].copy_from_slice(&seq.to_le_bytes());
                            while tracer.write(&payload).is_err() {
                                std::thread::sleep(Duration::from_micros(20));
                            }
                            if seq == 0 {
                                started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            }
                            if seq % 256 == 0 {
                                std::thread::sleep(Duration::from_micros(100));
                            }
                        }
                    })
                })
                .collect();
            while started.load(std::sync::atomic::Ordering::SeqCst) < 2 {
                std::thread::sleep(Duration::from_micros(200));
            }
            let mut marker = std::env::var_os(ringtrace::SESSION_ENV).unwrap();
            marker.push(".started");
            std::fs::write(marker, b"").unwrap();
            for t in threads {
                t.join().unwrap();
            }
        }
        "starter" => {
            // Starts a traced process of its own, then idles: a process of
            // the session that is not the recorder's child.
            let mut child = traced_command("idle")
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_secs(60));
            let _ = child.wait();
        }
        "idle" => std::thread::sleep(Duration::from_secs(60)),
        "code" => {
            tracer.write(b"last words").unwrap();
            std::process::exit(3);
        }
        "dropper" => {
            // Drops its ring, then goes on a while and exits normally.
            tracer.write(b"done with it").unwrap();
            drop(tracer);
            std::thread::sleep(Duration::from_millis(50));
            std::process::exit(0);
        }
        "code_parent" => {
            // Its child, which the recorder did not start, exits with 3.
            let status = traced_command("code")
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert_eq!(status.code(), Some(3));
        }
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

/// Keeps the calling thread on `cpu` (the `cpu`-th CPU this process may
/// use), or leaves it free to move when that cannot be done.
fn pin_to_cpu(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; `allowed` is ours to fill.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) }
        != 0
    {
        return;
    }
    // SAFETY: CPU_ISSET reads a set we own, with indices below its size.
    let Some(target) = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
        .nth(cpu)
    else {
        return;
    };
    // SAFETY: as above; a zeroed set is empty, CPU_SET adds one CPU.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `target` is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(target, &mut one) };
    // SAFETY: pid 0 is this thread; `one` is a valid set.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) };
}

/// This test binary, to be started in `role`.
fn traced_command(role: &str) -> Command {
    let mut c = ringtrace_testkit::child_test("traced_program");
    c.env(ROLE, role);
    c
}

/// Leaves in the session the ring file a process killed while its tracer
/// sets the ring up leaves (made, its header written, never opened), and
/// aborts; and before, the empty one of a child killed before it had
/// written its header.
fn die_setting_up() -> ! {
    use std::io::{Seek, Write};
    let session = PathBuf::from(std::env::var_os(ringtrace::SESSION_ENV).unwrap());
    let mut child = Command::new("true").spawn().unwrap();
    while ringtrace::process_start(child.id()).is_none() {}
    let child_ring = format!(
        "{}-{}.ring",
        child.id(),
        ringtrace::process_start(child.id()).unwrap()
    );
    child.wait().unwrap();
    std::fs::write(session.join("rings").join(child_ring), b"").unwrap();
    let pid = std::process::id();
    let name = format!("{pid}-{}.ring", ringtrace::process_start(pid).unwrap());
    let made = std::env::temp_dir().join(format!("ringtrace-test-setting-up-{name}"));
    let _ = std::fs::remove_file(&made);
    drop(Tracer::builder().file(&made).build().unwrap());
    let mut file = std::fs::OpenOptions::new().write(true).open(&made).unwrap();
    file.seek(std::io::SeekFrom::Start(
        ringtrace::ring::file::layout::STATUS_OFFSET as u64,
    ))
    .unwrap();
    file.write_all(&ringtrace::ring::file::STATUS_SETTING_UP.to_ne_bytes())
        .unwrap();
    drop(file);
    std::fs::copy(&made, session.join("rings").join(name)).unwrap();
    let _ = std::fs::remove_file(&made);
    std::process::abort();
}

/// `ringtrace record -o DIR ARGS -- <this binary in role>`.
fn record_command(dir: &Path, args: &[&str], role: &str) -> Command {
    let traced = traced_command(role);
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringtrace"));
    c.arg("record").arg("-o").arg(dir).args(args).arg("--");
    c.arg(traced.get_program()).args(traced.get_args());
    for (k, v) in traced.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c
}

/// Records this binary in `role` into `session` with `args`, which must
/// succeed: its output, and its stderr as text.
fn recorded(session: &Path, args: &[&str], role: &str) -> (Output, String) {
    let out = record_command(session, args, role).output().unwrap();
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    (out, said)
}

/// `ringtrace record -o SESSION --attach RINGS...`, run to its end.
fn attach(session: &Path, rings: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .arg("record")
        .arg("-o")
        .arg(session)
        .arg("--attach")
        .args(rings)
        .output()
        .unwrap()
}

fn ringtrace(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A tool's name, if it is on the PATH; `None` (the test skips, unless CI
/// requires the tools) otherwise.
fn tool(name: &str) -> Option<&str> {
    ringtrace_testkit::have_tool(name).then_some(name)
}

#[test]
fn a_program_and_its_child_are_recorded_and_read_back_by_every_reader() {
    let dir = TempDir::new("record-two");
    let session = dir.path().join("trace");
    let (_, said) = recorded(&session, &["--clock", "mono"], "parent");
    assert!(said.contains("exited with code 0"), "{said}");

    // The library's view: two processes, every step of each thread.
    let s = Session::open(&session).unwrap();
    let recoveries = s.recoveries();
    assert_eq!(recoveries.len(), 2, "{said}");
    let pids: Vec<u32> = recoveries.iter().map(|r| r.header.pid).collect();
    assert_ne!(pids[0], pids[1]);

    // dump merges both in time order, each line with its process.
    let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    let dump = text(&dump.stdout);
    let steps = dump.lines().filter(|l| l.contains("rec:step")).count() as u64;
    assert_eq!(steps, 4 * EVENTS, "{}", &dump[..dump.len().min(2000)]);
    // Both returned from main: each ring was marked exited, with a time,
    // and the session says so.
    let exited = dump
        .lines()
        .filter(|l| {
            l.starts_with("#   writer: exited: process ") && l.contains("exited normally at 20")
        })
        .count();
    assert_eq!(exited, 2, "{}", &dump[..dump.len().min(2000)]);
    let json = ringtrace(&["dump".as_ref(), session.as_os_str(), "--json".as_ref()]);
    assert!(json.status.success(), "{}", text(&json.stderr));
    let mut last_ns = 0;
    let mut by_pid: BTreeMap<u64, u64> = BTreeMap::new();
    for line in text(&json.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["event"] == "rec:step" {
            *by_pid.entry(v["pid"].as_u64().unwrap()).or_default() += 1;
        }
        let ns = v["ns"].as_u64().unwrap();
        assert!(ns >= last_ns, "not in time order: {line}");
        last_ns = ns;
    }
    let want: BTreeMap<u64, u64> = pids.iter().map(|p| (u64::from(*p), 2 * EVENTS)).collect();
    assert_eq!(by_pid, want);

    if let Some(trace_cmd) = tool("trace-cmd") {
        let dat = dir.path().join("trace.dat");
        let out = ringtrace(&[
            "export".as_ref(),
            session.as_os_str(),
            "--format".as_ref(),
            "trace-cmd".as_ref(),
            "-o".as_ref(),
            dat.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report = Command::new(trace_cmd)
            .arg("report")
            .arg("-i")
            .arg(&dat)
            .output()
            .unwrap();
        let report = text(&report.stdout);
        let lines: Vec<&str> = report.lines().filter(|l| l.contains("step")).collect();
        assert_eq!(
            lines.len() as u64,
            4 * EVENTS,
            "{}",
            &report[..report.len().min(2000)]
        );
    }
    if let Some(babeltrace) = tool("babeltrace2") {
        let ctf = dir.path().join("ctf");
        let out = ringtrace(&[
            "export".as_ref(),
            session.as_os_str(),
            "--format".as_ref(),
            "ctf".as_ref(),
            "-o".as_ref(),
            ctf.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let read = Command::new(babeltrace).arg(&ctf).output().unwrap();
        assert!(read.status.success(), "{}", text(&read.stderr));
        let read = text(&read.stdout);
        assert_eq!(
            read.lines().filter(|l| l.contains("step")).count() as u64,
            4 * EVENTS
        );
    }
}

/// The numbered events of each thread a session holds, in order.
fn numbered(session: &Path) -> BTreeMap<u32, Vec<u64>> {
    let s = Session::open(session).unwrap();
    let mut by_thread: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for r in s.recoveries() {
        for c in &r.cpus {
            for e in &c.events {
                if e.payload.len() == 12 {
                    let w = u32::from_le_bytes(e.payload[..4].try_into().unwrap());
                    let seq = u64::from_le_bytes(e.payload[4..].try_into().unwrap());
                    by_thread.entry(w).or_default().push(seq);
                }
            }
        }
    }
    for seqs in by_thread.values_mut() {
        seqs.sort_unstable();
    }
    by_thread
}

/// SIGKILL of the traced program at random moments, in discard and
/// blocking modes: the session holds, for each thread, every event it
/// committed, 0 to the last, none twice, or counts it lost with the
/// writer that died.
/// A program that forks with its ring and exits: its child goes on
/// writing into the ring, and the recorder drains it until no process
/// maps the ring, so every event of both is in the session.
#[test]
fn a_child_forked_with_the_ring_is_drained_after_its_parent_exits() {
    let dir = TempDir::new("record-fork");
    let session = dir.path().join("trace");
    let (_, said) = recorded(&session, &[], "fork");
    let json = ringtrace(&["dump".as_ref(), session.as_os_str(), "--json".as_ref()]);
    assert!(json.status.success(), "{}", text(&json.stderr));
    let mut by_thread: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for line in text(&json.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["event"] == "rec:step" {
            let f = &v["fields"];
            by_thread
                .entry(f["thread"].as_u64().unwrap())
                .or_default()
                .push(f["seq"].as_u64().unwrap());
        }
    }
    let all: Vec<u64> = (0..EVENTS).collect();
    assert_eq!(by_thread.get(&0), Some(&all), "{said}");
    assert_eq!(by_thread.get(&1), Some(&all), "the child's: {said}");
}

#[test]
fn a_program_that_dies_setting_up_its_ring_is_in_the_session_with_nothing() {
    let dir = TempDir::new("record-stillborn");
    let session = dir.path().join("trace");
    let out = record_command(&session, &[], "dies-setting-up")
        .output()
        .unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGABRT), "{said}");
    assert!(
        said.contains(&format!(
            "killed by signal {} before it had set up its ring: it recorded nothing",
            libc::SIGABRT
        )),
        "{said}"
    );
    assert!(
        said.contains("died before it had set up its ring: it recorded nothing"),
        "the child's: {said}"
    );
    assert!(!said.contains("not drained"), "{said}");
    assert!(!said.contains("no process recorded"), "{said}");
    assert!(said.contains("0 events of 1 process"), "{said}");
    assert!(
        !session.join("rings").exists(),
        "nothing left in rings/: {said}"
    );
    let read = Session::open(&session).unwrap();
    let [process] = read.processes() else {
        panic!("one process: {:?}", read.processes());
    };
    assert_eq!(
        process.exit,
        Some(ringtrace_session::ProcessExit::Signaled(libc::SIGABRT))
    );
    assert_eq!(process.written_totals.events, 0);
    let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));
}

#[test]
fn a_program_killed_at_random_moments_leaves_every_committed_event() {
    let dir = TempDir::new("record-kill");
    let seed = ringtrace_testkit::seed(
        "RINGTRACE_KILL_SEED",
        "a_program_killed_at_random_moments_leaves_every_committed_event",
    );
    let mut state = seed | 1;
    for run in 0..20 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mode: &[&str] = if run % 2 == 0 {
            &["--mode", "discard"]
        } else {
            &["--mode", "blocking", "--blocking-timeout", "2000"]
        };
        let session = dir.path().join(format!("run{run}"));
        let mut args = mode.to_vec();
        args.extend(["--buffer-size", "64K"]);
        let mut recorder = record_command(&session, &args, "forever")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The program's ring appears once it runs; kill it then, after
        // 5 to 200 ms.
        let pid = traced_pid(&session);
        std::thread::sleep(Duration::from_millis(5 + state % 196));
        // SAFETY: kill(2) on the traced program's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let status = recorder.wait().unwrap();
        let mut said = String::new();
        use std::io::Read;
        recorder
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert_eq!(status.code(), Some(128 + 9), "run {run}: {said}");
        let seqs = numbered(&session);
        if said.contains("before it had set up its ring: it recorded nothing") {
            // Killed while its tracer set the ring up (a loaded machine
            // can take that long): nothing was written, the recorder says
            // how it ended, and so does the session once the ring's header
            // was written (before, nothing says what the process was).
            assert!(seqs.is_empty(), "run {run} ({mode:?}): {said}");
            assert!(
                said.contains("killed by signal 9 before it had set up its ring"),
                "run {run}: {said}"
            );
            let read = Session::open(&session).unwrap();
            for p in read.processes() {
                assert_eq!(
                    p.exit,
                    Some(ringtrace_session::ProcessExit::Signaled(9)),
                    "run {run}: {said}"
                );
            }
            continue;
        }
        // Both threads had committed an event (the program said so): both
        // are in the session. Killed earlier, a thread may have none.
        let mut started = session.clone().into_os_string();
        started.push(".started");
        if Path::new(&started).exists() {
            assert_eq!(seqs.len(), 2, "run {run} ({mode:?}): {said}");
        } else {
            assert!(seqs.len() <= 2, "run {run} ({mode:?}): {said}");
        }
        // Events the session says a dead writer took with it.
        let died: u64 = Session::open(&session)
            .unwrap()
            .losses()
            .iter()
            .filter(|l| l.cause == ringtrace_session::LossCause::WriterDied)
            .map(|l| l.count)
            .sum();
        let mut missing = 0;
        for (w, seqs) in &seqs {
            let mut unique = seqs.clone();
            unique.dedup();
            assert_eq!(
                unique.len(),
                seqs.len(),
                "run {run} ({mode:?}, seed {seed}): thread {w} has an event twice: {said}"
            );
            let last = seqs.last().copied().unwrap_or(0);
            missing += last + 1 - seqs.len() as u64;
        }
        // Gap-free, but for committed events a killed reservation hid: one
        // killed between its reservation and its header's first store
        // leaves a hole the recovery cannot step over, and the committed
        // events after it on that page are counted lost (writer died).
        assert!(
            missing <= died,
            "run {run} ({mode:?}, seed {seed}): {missing} events missing, {died} counted lost by a writer that died: {said}"
        );
    }
}

/// The pid of the traced program whose ring is in `session`, once it
/// appears (up to 30 s).
fn traced_pid(session: &Path) -> i32 {
    let rings = session.join("rings");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = std::fs::read_dir(&rings).ok().and_then(|d| {
            d.flatten().find_map(|e| {
                e.file_name()
                    .to_str()?
                    .split('-')
                    .next()?
                    .parse::<i32>()
                    .ok()
            })
        });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < deadline, "no ring appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The pids of the rings in `session`'s rings/ directory, once there are
/// `n` of them.
fn ring_pids(session: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids: Vec<i32> = std::fs::read_dir(session.join("rings"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.ends_with(".ring").then_some(())?;
                name.split('-').next()?.parse().ok()
            })
            .collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{} rings appeared, not {n}",
            pids.len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether `pid` runs (a zombie, killed and not yet reaped, does not).
fn running(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, r)| r.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// SIGTERM to the recorder is passed on to every process of the session,
/// not only to its command: a process the command started ends too, and
/// the session holds both.
#[test]
fn a_stop_signal_reaches_every_process_of_the_session() {
    let dir = TempDir::new("record-stop");
    let session = dir.path().join("trace");
    // The recorder's stderr goes to a file: a pipe would stay open as long
    // as any process of the session runs.
    let log = dir.path().join("recorder.log");
    let mut recorder = record_command(&session, &[], "starter")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pids = ring_pids(&session, 2);
    // SAFETY: kill(2) on the recorder, our child.
    unsafe { libc::kill(recorder.id() as i32, libc::SIGTERM) };
    let status = recorder.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{said}");
    assert!(said.contains("of 2 processes"), "{said}");
    // The grandchild is reaped by whoever adopted it: give that a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| running(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&p| running(p)).collect();
    for &p in &left {
        // SAFETY: kill(2) on a process this test started.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(
        left.is_empty(),
        "still running after the stop: {left:?}; {said}"
    );
    let json = ringtrace(&["dump".as_ref(), session.as_os_str(), "--json".as_ref()]);
    assert!(json.status.success(), "{}", text(&json.stderr));
}

/// SIGKILL of the recorder at random moments while it rotates chunks
/// every 16 KiB: the session it leaves opens, every chunk reads whole (no
/// problem anywhere: a finish cut short leaves a whole chunk), and each
/// thread's events are there once each, in order.
#[test]
fn a_recorder_killed_at_random_moments_leaves_a_readable_session() {
    let dir = TempDir::new("record-killed");
    let seed = ringtrace_testkit::seed(
        "RINGTRACE_RECORDER_KILL_SEED",
        "a_recorder_killed_at_random_moments_leaves_a_readable_session",
    );
    let mut state = seed | 1;
    for run in 0..8 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let session = dir.path().join(format!("run{run}"));
        let args = ["--rotate-size", "16K", "--buffer-size", "64K"];
        let mut recorder = record_command(&session, &args, "forever")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = traced_pid(&session);
        std::thread::sleep(Duration::from_millis(20 + state % 300));
        recorder.kill().unwrap();
        recorder.wait().unwrap();
        // SAFETY: kill(2) on the traced program's pid, which the recorder
        // no longer waits for.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let s = Session::open(&session).unwrap_or_else(|e| panic!("run {run} (seed {seed}): {e}"));
        for p in s.processes() {
            assert!(
                !p.has_problems(),
                "run {run} (seed {seed}): {:?} {:?}",
                p.problems,
                p.recovery()
                    .cpus
                    .iter()
                    .map(|c| &c.problems)
                    .collect::<Vec<_>>()
            );
        }
        assert!(!s.has_problems(), "run {run}: {:?}", s.problems());
        let mut by_thread: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for r in s.recoveries() {
            for c in &r.cpus {
                for e in c.events.iter().filter(|e| e.payload.len() == 12) {
                    let w = u32::from_le_bytes(e.payload[..4].try_into().unwrap());
                    let seq = u64::from_le_bytes(e.payload[4..].try_into().unwrap());
                    by_thread.entry(w).or_default().push(seq);
                }
            }
        }
        for (w, mut seqs) in by_thread {
            let n = seqs.len();
            seqs.sort_unstable();
            seqs.dedup();
            assert_eq!(seqs.len(), n, "run {run}: thread {w} has an event twice");
        }
        let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
        assert!(dump.status.success(), "run {run}: {}", text(&dump.stderr));
        // Its processes are said not ended, not read as live rings.
        let header = text(&dump.stdout);
        for p in s.processes() {
            assert!(
                p.exit.is_some() || header.contains("not ended: process"),
                "run {run}: {header}"
            );
        }
        assert!(!header.contains("live snapshot"), "run {run}: {header}");
        assert!(!header.contains("is a directory"), "run {run}: {header}");
    }
}

/// A process's exit code is in the session, whether the recorder saw it
/// (its command) or only the ring's exit record kept it (a process the
/// command started), and `dump` says it.
#[test]
fn a_sessions_processes_keep_their_exit_codes() {
    let dir = TempDir::new("record-code");
    for (role, recorder_code) in [("code", 3), ("code_parent", 0)] {
        let session = dir.path().join(role);
        let out = record_command(&session, &[], role).output().unwrap();
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(recorder_code), "{said}");
        let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
        let shown = text(&dump.stdout);
        assert!(dump.status.success(), "{}", text(&dump.stderr));
        let writers: Vec<&str> = shown.lines().filter(|l| l.contains("writer: ")).collect();
        assert!(
            writers.iter().any(|l| l.contains("exited with code 3")),
            "{role}: {writers:?}"
        );
    }
}

/// No export writes into the session it reads: not over its index, a
/// chunk or a process's file, not a new file or directory among them.
#[test]
fn export_never_writes_into_the_session_it_reads() {
    let dir = TempDir::new("record-export-into");
    let session = dir.path().join("trace");
    recorded(&session, &[], "steps");
    let files: Vec<PathBuf> = walk(&session);
    let chunk = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "chunk"))
        .expect("a chunk")
        .clone();
    let process = files
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == "process"))
        .expect("a process file")
        .clone();
    let before: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let index = session.join("session");
    let dotted = session.join("..").join("trace").join("new.txt");
    for (format, target) in [
        ("text", index.clone()),
        ("text", chunk.clone()),
        ("chrome", process.clone()),
        ("text", session.join("new.txt")),
        ("text", dotted),
        ("ctf", session.join("ctf")),
        ("parquet", session.join("tables")),
    ] {
        let out = ringtrace(&[
            "export".as_ref(),
            session.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
            "-o".as_ref(),
            target.as_os_str(),
        ]);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {said}", target.display());
        assert!(said.contains("inside the session directory"), "{said}");
    }
    let after: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(before == after, "a file of the session changed");
    assert_eq!(walk(&session), files, "a file was added to the session");
    let fine = dir.path().join("out.txt");
    let out = ringtrace(&[
        "export".as_ref(),
        session.as_os_str(),
        "-o".as_ref(),
        fine.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Every file under `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            all.extend(walk(&p));
        } else {
            all.push(p);
        }
    }
    all.sort();
    all
}

/// A program that drops its ring and then exits reads as having closed
/// it, not as an exit the ring did not see.
#[test]
fn a_ring_dropped_before_its_program_exits_reads_closed() {
    let dir = TempDir::new("record-dropper");
    let session = dir.path().join("trace");
    recorded(&session, &[], "dropper");
    let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
    let shown = text(&dump.stdout);
    let writer = shown.lines().find(|l| l.contains("writer: ")).unwrap();
    assert!(writer.contains("writer: closed"), "{writer}");
}

#[test]
fn a_program_that_exits_at_once_makes_a_session_with_its_process() {
    let dir = TempDir::new("record-quick");
    let session = dir.path().join("trace");
    let out = record_command(&session, &[], "quick").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = Session::open(&session).unwrap();
    assert_eq!(s.processes().len(), 1);
    // Finished, the session has no rings/ directory: a process started
    // late by the command is told the session is not running, rather
    // than writing a ring nobody drains.
    assert!(!session.join("rings").exists());
    let late = traced_command("quick")
        .env(ringtrace::SESSION_ENV, &session)
        .output()
        .unwrap();
    let said = text(&late.stderr);
    assert!(!late.status.success());
    assert!(
        said.contains("RINGTRACE_SESSION") && said.contains("running"),
        "{said}"
    );
    // `recover` names a session for what it is.
    let out = ringtrace(&["recover".as_ref(), session.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(said.contains("is a session directory"), "{said}");
}

#[test]
fn bad_sessions_and_commands_are_refused_with_one_line() {
    let dir = TempDir::new("record-bad");
    let mut cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("no/such/dir").into(),
            ],
            "no command",
        ),
        (
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("no/such/dir").into(),
                "--".into(),
                "true".into(),
            ],
            "no/such",
        ),
        (
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("x").into(),
                "--rotate-size".into(),
                "4Q".into(),
                "--".into(),
                "true".into(),
            ],
            "K, M or G",
        ),
        (
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("y").into(),
                "--clock".into(),
                "sundial".into(),
                "--".into(),
                "true".into(),
            ],
            "sundial",
        ),
        (
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("z").into(),
                "--".into(),
                "/no/such/program".into(),
            ],
            "/no/such/program",
        ),
        (
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("w").into(),
                "--blocking-timeout".into(),
                "5".into(),
                "--".into(),
                "true".into(),
            ],
            "only with --mode blocking",
        ),
    ];
    // Out-of-range values are named by their flags, with what is valid.
    for (flag, value, want) in [
        (
            "--rotate-size",
            "0",
            "--rotate-size 0: a chunk rotates at 1 to",
        ),
        ("--max-size", "1", "--max-size 1: keep at least 65536 bytes"),
        ("--zstd", "30", "--zstd 30: a level from 1 to 22"),
        ("--zstd", "99999999999", "give a whole number from 1 to 22"),
        (
            "--buffer-size",
            "4096",
            "--buffer-size 4096: a CPU buffer needs at least two pages",
        ),
    ] {
        cases.push((
            vec![
                "record".into(),
                "-o".into(),
                dir.path().join("v").into(),
                flag.into(),
                value.into(),
                "--".into(),
                "true".into(),
            ],
            want,
        ));
    }
    for (args, want) in cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let out = ringtrace(&args);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // Nothing is left where nothing was recorded (a command that cannot
    // start included): the directory can be given again.
    for name in ["x", "y", "z", "w", "v"] {
        assert!(!dir.path().join(name).exists(), "{name} left behind");
    }
    // A directory holding another session is never written over.
    let first = dir.path().join("first");
    let out = record_command(&first, &[], "quick").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = Session::open(&first).unwrap().processes().len();
    let out = record_command(&first, &[], "quick").output().unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("session"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(Session::open(&first).unwrap().processes().len(), before);
}

/// A ring too small for the rate: refusals are counted, and the dump
/// marks them where they happened, with their cause.
/// Chunks `--max-size` deletes are said by the recorder and by every
/// reader of the session, with their events: drained, counted, no longer
/// held.
#[test]
fn what_max_size_rotates_out_is_said_with_its_events() {
    let dir = TempDir::new("record-rotated");
    let session = dir.path().join("trace");
    let args = ["--rotate-size", "16K", "--max-size", "64K"];
    let (_, said) = recorded(&session, &args, "steps");
    let number_after = |text: &str, marker: &str| -> u64 {
        let at = text
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker:?}: {text}"));
        text[at + marker.len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let rotated = number_after(&said, "--max-size: ");
    assert!(rotated > 0, "{said}");
    let dump = ringtrace(&["dump".as_ref(), session.as_os_str(), "--json".as_ref()]);
    let told = text(&dump.stderr);
    assert!(dump.status.success(), "{told}");
    assert!(
        told.contains(&format!("{rotated} events in")) && told.contains("rotated out"),
        "{told}"
    );
    let held = text(&dump.stdout)
        .lines()
        .filter(|l| l.contains("rec:step"))
        .count() as u64;
    assert_eq!(held + rotated, 2 * EVENTS, "{said}");
}

#[test]
fn refusals_are_shown_where_they_happened_with_their_cause() {
    let dir = TempDir::new("record-lost");
    let session = dir.path().join("trace");
    let (out, said) = recorded(&session, &["--buffer-size", "8K"], "burst");
    let fired: u64 = text(&out.stdout)
        .lines()
        .find_map(|l| l.split("FIRED ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no FIRED line: {}", text(&out.stdout)));
    let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
    let dump = text(&dump.stdout);
    let marked: u64 = dump
        .lines()
        .filter_map(|l| l.strip_prefix("CPU:"))
        .filter(|l| l.contains("refused"))
        .map(|l| {
            let n = l.split("[LOST ").nth(1).unwrap();
            n.split(' ').next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    let steps = dump.lines().filter(|l| l.contains("rec:step")).count() as u64;
    assert!(said.contains("refused"), "{said}");
    assert!(
        marked > 0,
        "no loss marked: {}",
        &dump[..dump.len().min(3000)]
    );
    assert!(
        dump.contains("# lost on CPU"),
        "{}",
        &dump[..dump.len().min(3000)]
    );
    // Every step is either in the session or counted as refused.
    let totals: u64 = dump
        .lines()
        .filter_map(|l| l.strip_prefix("# lost on CPU "))
        .flat_map(|l| l.split(": ").nth(1).map(str::to_owned))
        .map(|l| {
            l.split(", ")
                .filter(|w| w.contains("refused"))
                .map(|w| w.split(' ').next().unwrap().trim().parse::<u64>().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(steps + totals, fired, "{}", &dump[..dump.len().min(3000)]);
}

/// `--attach` drains ring files that exist: a closed one to its end, and
/// the same file attached twice in one session is refused once.
#[test]
fn attach_drains_an_existing_ring_file() {
    use ringtrace_ring::{RingBuffer, RingConfig};
    let dir = TempDir::new("record-attach");
    let ring_path = dir.path().join("app.ring");
    {
        let config = RingConfig::default()
            .cpus(2)
            .per_cpu_bytes(64 * 1024)
            .file(&ring_path);
        let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
        for i in 0..500u32 {
            ring.cpu_writer((i % 2) as usize)
                .write(&i.to_le_bytes())
                .unwrap();
        }
    }
    let session = dir.path().join("trace");
    let out = attach(&session, &[&ring_path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(said.contains("500 events"), "{said}");
    let s = Session::open(&session).unwrap();
    let events: usize = s
        .recoveries()
        .iter()
        .flat_map(|r| &r.cpus)
        .map(|c| c.events.len())
        .sum();
    assert_eq!(events, 500);
    assert!(ring_path.exists(), "an attached ring was removed");
}

/// Rings whose clocks do not compare are drained, with a warning that the
/// session reads only aligned by wall clock; `dump` then says the same.
#[test]
fn attaching_rings_whose_clocks_do_not_compare_says_so() {
    use ringtrace_ring::{RingBuffer, RingConfig};
    let dir = TempDir::new("record-attach-clocks");
    let counter = dir.path().join("counter.ring");
    let mono = dir.path().join("mono.ring");
    for (path, clock) in [(&counter, "counter"), (&mono, "mono")] {
        let clock = clock
            .parse::<ringtrace_clock::ClockSpec>()
            .unwrap()
            .build()
            .unwrap();
        let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(path);
        let ring = RingBuffer::new(config, clock).unwrap();
        ring.cpu_writer(0).write(b"tick").unwrap();
    }
    let session = dir.path().join("trace");
    let out = attach(&session, &[&counter, &mono]);
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("of 2 processes"), "{said}");
    assert!(
        said.contains("does not compare") && said.contains("--align-wall-clock"),
        "{said}"
    );
    let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
    assert_eq!(dump.status.code(), Some(2));
    assert!(
        text(&dump.stderr).contains("--align-wall-clock"),
        "{}",
        text(&dump.stderr)
    );
}

#[test]
fn attaching_what_cannot_be_drained_is_refused_before_anything_is_written() {
    let dir = TempDir::new("record-attach-bad");
    let junk = dir.path().join("junk.ring");
    std::fs::write(&junk, vec![1u8; 5000]).unwrap();
    for file in [dir.path().join("missing.ring"), junk] {
        let session = dir.path().join("trace");
        let out = attach(&session, &[&file]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(file.file_name().unwrap().to_str().unwrap()),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!session.exists(), "a session was made");
    }
}

#[test]
fn a_program_that_does_not_record_is_said_so() {
    let dir = TempDir::new("record-none");
    let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .arg("record")
        .arg("-o")
        .arg(dir.path().join("trace"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("from_env"),
        "{}",
        text(&out.stderr)
    );
}

/// A file in the session's rings/ that is not a ring (another version, a
/// corrupt header) is refused with a line naming it; the real rings are
/// drained all the same.
#[test]
fn a_corrupt_ring_in_the_session_is_refused_and_the_others_drained() {
    let dir = TempDir::new("record-junk");
    let session = dir.path().join("trace");
    let recorder = record_command(&session, &[], "steps")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rings = session.join("rings");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rings.exists() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::write(rings.join("1-1.ring"), vec![0x55u8; 8192]).unwrap();
    let out = recorder.wait_with_output().unwrap();
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1-1.ring: not drained"), "{said}");
    let s = Session::open(&session).unwrap();
    let steps: usize = s
        .recoveries()
        .iter()
        .flat_map(|r| &r.cpus)
        .map(|c| c.events.len())
        .sum();
    assert_eq!(steps as u64, 2 * EVENTS, "{said}");
}

/// `--live` prints an event within 100 ms of its commit, while the
/// program is still running.
#[test]
fn live_prints_an_event_within_100_ms_of_its_commit() {
    use std::io::BufRead;
    let dir = TempDir::new("record-live");
    let mut recorder = record_command(&dir.path().join("trace"), &["--live"], "live")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = recorder.stderr.take().unwrap();
    let fired = std::thread::spawn(move || {
        // To the end, as stdout below.
        let lines: Vec<String> = std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect();
        lines
            .iter()
            .find_map(|l| l.strip_prefix("FIRED ").and_then(|n| n.parse::<u64>().ok()))
    });
    let stdout = std::io::BufReader::new(recorder.stdout.take().unwrap());
    // Read to the end (a reader that went away would end the recorder
    // and the program by SIGPIPE), noting when the event came.
    let mut shown = None;
    for line in stdout.lines().map_while(Result::ok) {
        if shown.is_none() && line.contains("rec:step") && line.contains("seq=0") {
            shown = Some(ringtrace::clock::monotonic_ns());
        }
    }
    let shown = shown.expect("the event was never printed");
    assert!(recorder.wait().unwrap().success());
    let fired = fired.join().unwrap().expect("the program said nothing");
    let late_ms = shown.saturating_sub(fired) as f64 / 1e6;
    assert!(late_ms < 100.0, "printed {late_ms:.1} ms after its commit");
}

/// The policy number in `/proc/PID/stat` (field 41): 0 is SCHED_OTHER, 1
/// SCHED_FIFO.
const POLICY_OF_SH: &str = "awk '{ sub(/^.*\\) /, \"\"); print \"POLICY \" $39 }' /proc/$$/stat";

#[test]
fn realtime_runs_the_recorder_under_fifo_and_the_command_as_usual() {
    let dir = TempDir::new("record-realtime");
    // Out of range: refused by the parser, nothing made.
    for bad in ["0", "100", "-1", "high"] {
        let session = dir.path().join(format!("bad-{bad}"));
        let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .args(["record", "-o"])
            .arg(&session)
            .arg(format!("--realtime={bad}"))
            .args(["--", "true"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "--realtime {bad}");
        assert!(
            text(&out.stderr).contains("--realtime"),
            "--realtime {bad}: {}",
            text(&out.stderr)
        );
        assert!(!session.exists(), "--realtime {bad} made {session:?}");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Without the privilege: one line saying what it needs, nothing
        // made.
        let session = dir.path().join("unprivileged");
        let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .args(["record", "-o"])
            .arg(&session)
            .args(["--realtime", "5", "--", "true"])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        if !out.status.success() {
            assert!(err.contains("CAP_SYS_NICE"), "{err}");
            assert!(!session.exists());
            return;
        }
    }
    // The recorder runs under SCHED_FIFO (its pid is the command's
    // parent); the command, reset on fork, under SCHED_OTHER.
    let session = dir.path().join("fifo");
    let script = format!(
        "{POLICY_OF_SH}; awk '{{ sub(/^.*\\) /, \"\"); print \"PARENT \" $39 }}' /proc/$PPID/stat"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["record", "-o"])
        .arg(&session)
        .args(["--realtime", "5", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("POLICY 0"), "the command: {stdout}");
    assert!(stdout.contains("PARENT 1"), "the recorder: {stdout}");
}

/// A file system that fills while recording: the recorder goes on,
/// counting what it could not write, until the program ends, and the
/// session reads back.
#[test]
fn a_full_file_system_is_said_and_the_recording_goes_on() {
    ringtrace_testkit::on_tmpfs("record-full", "12m", |mount| {
        let session = mount.join("s");
        let mut recorder = record_command(&session, &["--buffer-size", "16K"], "forever")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = traced_pid(&session);
        // Long enough to write far more than the file system holds.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            recorder.try_wait().unwrap().is_none(),
            "the recorder gave up while its program ran"
        );
        // SAFETY: kill(2) on the traced program's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let out = recorder.wait_with_output().unwrap();
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + 9), "{said}");
        assert!(said.contains("the recording goes on"), "{said}");
        assert!(said.contains("NOT WRITTEN"), "{said}");
        let dump = ringtrace(&["dump".as_ref(), session.as_os_str()]);
        assert!(dump.status.success(), "{}", text(&dump.stderr));
    });
}

/// One ring given twice, as a hard link or a copy, to `record --attach`,
/// `dump` or `stats`: refused with both names, nothing written.
#[test]
fn one_ring_given_twice_by_link_or_copy_is_refused_naming_both() {
    use ringtrace_ring::{RingBuffer, RingConfig};
    let dir = TempDir::new("record-twice");
    let ring_path = dir.path().join("app.ring");
    {
        let config = RingConfig::default()
            .cpus(1)
            .per_cpu_bytes(16 * 1024)
            .file(&ring_path);
        let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
        ring.write(b"once").unwrap();
    }
    let copy = dir.path().join("copy.ring");
    let link = dir.path().join("link.ring");
    std::fs::copy(&ring_path, &copy).unwrap();
    std::fs::hard_link(&ring_path, &link).unwrap();
    for other in [&copy, &link] {
        let session = dir.path().join("trace");
        let out = attach(&session, &[&ring_path, other]);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains("the same ring as"), "{said}");
        assert!(
            said.contains("app.ring")
                && said.contains(other.file_name().unwrap().to_str().unwrap()),
            "{said}"
        );
        assert!(!session.exists(), "nothing is made: {said}");
        for command in ["dump", "stats"] {
            let out = ringtrace(&[command.as_ref(), ring_path.as_os_str(), other.as_os_str()]);
            let said = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command}: {said}");
            assert!(
                said.contains("given twice") || said.contains("holds the same ring as"),
                "{command}: {said}"
            );
        }
    }
}

/// What only a started command can take is refused with --attach, rather
/// than silently doing nothing.
#[test]
fn options_for_the_command_are_refused_with_attach() {
    let dir = TempDir::new("record-attach-flags");
    let session = dir.path().join("s");
    for flag in [
        &["--clock", "mono"][..],
        &["--buffer-size", "1M"],
        &["--mode", "overwrite"],
        &["--blocking-timeout", "5"],
    ] {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["record".as_ref(), "-o".as_ref(), session.as_os_str()];
        for a in flag.iter().chain(&["--attach", "/etc/hostname"]) {
            args.push(a.as_ref());
        }
        let out = ringtrace(&args);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {said}");
        assert!(
            said.contains("cannot be used with '--attach"),
            "{flag:?}: {said}"
        );
        assert!(!session.exists(), "{flag:?}");
    }
}
