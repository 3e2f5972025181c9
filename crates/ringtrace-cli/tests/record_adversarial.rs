//! `ringtrace record` against programs and file systems that do not
//! cooperate: a command that changes directory before its tracer starts,
//! one that outlives the recorder, and a file system that fills up while
//! the session is written. Every
//! event the program fired is in the session or counted lost with a
//! cause, read back by `Session::open` and `ringtrace dump`.

use ringtrace::{trace, tracepoint, Tracer};
use ringtrace_session::{ProcessExit, Session, NOT_WRITTEN};
use ringtrace_testkit::TempDir;
use std::path::Path;
use std::process::{Command, Output};

tracepoint! {
    system = adv;
    /// One event of a traced program.
    pub fn step(seq: u64) = "seq={}";
}

/// Set in a traced program: its role (`steps`: a few events; `flood`:
/// fills the file system the session is on but for 1 MiB, then writes
/// far more than that).
const ROLE: &str = "RINGTRACE_TEST_ADVERSARIAL_ROLE";
/// Set in a `stubborn` traced program: where it says `ready` and `done`
/// and waits for `go`.
const ROLE_DIR: &str = "RINGTRACE_TEST_ADVERSARIAL_DIR";

/// The traced program: does nothing unless started in a role. It prints
/// `FIRED N`: how many events it tried to write (taken or refused).
#[test]
fn traced_program() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let tracer = Tracer::builder().from_env().build().unwrap();
    tracer.install().unwrap();
    ringtrace::tracepoint::registry::enable("adv:step").unwrap();
    let fired: u64 = match role.as_str() {
        "steps" => 500,
        "flood" => {
            // The ring is made (its space taken): fill what is left of
            // the file system but 1 MiB, beside the session.
            let session = std::env::var_os(ringtrace::SESSION_ENV).unwrap();
            let filler = Path::new(&session).parent().unwrap().join("filler");
            fill_but(&filler, 1 << 20);
            200_000
        }
        "stubborn" => {
            // Outlives the recorder: deaf to its SIGTERM, half its
            // events before the recorder stops, half after.
            // SAFETY: ignoring a signal has no preconditions.
            unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            let dir = std::path::PathBuf::from(std::env::var_os(ROLE_DIR).unwrap());
            for seq in 0..500 {
                trace!(step(seq));
            }
            std::fs::write(dir.join("ready"), b"").unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !dir.join("go").exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            for seq in 500..1000 {
                trace!(step(seq));
            }
            std::fs::write(dir.join("done"), b"").unwrap();
            std::process::exit(0);
        }
        other => panic!("unknown role {other}"),
    };
    for seq in 0..fired {
        trace!(step(seq));
        if seq % 1024 == 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
    println!("FIRED {fired}");
    std::process::exit(0);
}

/// Writes `path` until the file system is full, then gives `room` bytes
/// back.
fn fill_but(path: &Path, room: u64) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0xa5u8; 64 << 10];
    let mut len = 0u64;
    loop {
        match f.write(&block) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n as u64,
        }
    }
    f.set_len(len.saturating_sub(room)).unwrap();
}

fn traced(role: &str) -> Command {
    let mut c = ringtrace_testkit::child_test("traced_program");
    c.env(ROLE, role);
    c
}

fn fired(out: &Output) -> u64 {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.split_once("FIRED ")
                .and_then(|(_, n)| n.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("the program says what it fired: {}", said(out)))
}

fn said(out: &Output) -> String {
    format!(
        "{:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Events read back plus every loss counted, over every process and CPU.
fn events_and_losses(session: &Session) -> (u64, u64) {
    let mut events = 0;
    let mut lost = 0;
    for r in session.recoveries() {
        for c in &r.cpus {
            events += c.events.len() as u64;
            lost += c.loss_notes.iter().map(|n| n.count).sum::<u64>();
        }
    }
    (events, lost)
}

#[test]
fn a_command_that_changes_directory_still_records_into_a_relative_session() {
    let tmp = TempDir::new("rec-adv-chdir");
    let program = traced("steps");
    // `sh -c 'cd / && exec PROGRAM ARGS...'`, the session named relative
    // to the recorder's directory.
    let mut args = vec![
        "record".into(),
        "-o".into(),
        "session".into(),
        "--".into(),
        "sh".into(),
        "-c".into(),
        "cd / && exec \"$0\" \"$@\"".into(),
        program.get_program().to_owned(),
    ];
    args.extend(program.get_args().map(ToOwned::to_owned));
    let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(&args)
        .env(ROLE, "steps")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", said(&out));
    let session = Session::open(tmp.path().join("session")).unwrap();
    assert_eq!(session.processes().len(), 1, "{}", said(&out));
    assert_eq!(events_and_losses(&session), (fired(&out), 0));
}

#[test]
fn a_full_file_system_reads_back_what_was_not_written_and_how_the_process_ended() {
    // Large enough for any machine's ring: the program fills it.
    ringtrace_testkit::on_tmpfs("rec-adv-full", "256m", |mount| {
        let dir = mount.join("s");
        let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .arg("record")
            .arg("-o")
            .arg(&dir)
            .args(["--buffer-size", "64K", "--"])
            .arg(traced("flood").get_program())
            .args(traced("flood").get_args())
            .env(ROLE, "flood")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}", said(&out));
        assert!(stderr.contains("no space left"), "{}", said(&out));
        assert!(stderr.contains("NOT WRITTEN"), "{}", said(&out));
        let session = Session::open(&dir).unwrap();
        assert_eq!(
            session.processes()[0].exit,
            Some(ProcessExit::Exited(0)),
            "the session says how the process ended, full as it is"
        );
        // What the recorder counted: every event fired is written,
        // counted lost with its cause, or counted not written.
        let t = session.processes()[0].written_totals;
        let lost: u64 = ringtrace_session::LossCause::ALL
            .iter()
            .map(|c| t.lost(*c))
            .sum::<u64>()
            + t.page_lost;
        assert_eq!(
            t.events + lost + t.unwritten.events,
            fired(&out),
            "every event fired is written or counted: {}",
            said(&out)
        );
        // What a reader finds: the events written, the losses whose
        // entries were written, and as notes after the last event the
        // events not written and the losses whose record was not.
        let (events, noted) = events_and_losses(&session);
        assert_eq!(events, t.events);
        assert_eq!(noted, lost + t.unwritten.events, "{}", said(&out));
        let not_written: u64 = session
            .recoveries()
            .iter()
            .flat_map(|r| r.cpus.iter())
            .flat_map(|c| c.loss_notes.iter())
            .filter(|n| n.why == NOT_WRITTEN)
            .map(|n| n.count)
            .sum();
        assert_eq!(
            not_written,
            session.processes()[0].written_totals.unwritten.events
        );
        assert!(not_written > 0);
        let dump = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .arg("dump")
            .arg(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&dump.stdout);
        assert!(dump.status.success(), "{}", said(&dump));
        assert!(text.contains(NOT_WRITTEN), "{}", said(&dump));
        assert!(text.contains("# writer: exited"), "{}", said(&dump));
    });
}

/// A command deaf to SIGTERM outlives its recorder: the summary says
/// where its ring stays, `dump` of the session says so too, and the
/// session read with that ring holds every event, once.
#[test]
fn a_command_that_outlives_the_recorder_leaves_its_ring_named() {
    let tmp = TempDir::new("rec-adv-stubborn");
    let dir = tmp.path().join("s");
    let program = traced("stubborn");
    // To a file, not a pipe: the program, which outlives the recorder,
    // holds the recorder's stderr open.
    let log = tmp.path().join("recorder.err");
    let mut recorder = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .arg("record")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(program.get_program())
        .args(program.get_args())
        .env(ROLE, "stubborn")
        .env(ROLE_DIR, tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let wait_for = |name: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !tmp.path().join(name).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "no {name} within 60 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    wait_for("ready");
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(recorder.id() as i32, libc::SIGTERM) };
    recorder.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    std::fs::write(tmp.path().join("go"), b"").unwrap();
    wait_for("done");
    let rings: Vec<_> = std::fs::read_dir(dir.join("rings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let [ring] = &rings[..] else {
        panic!("one ring left: {rings:?}; {stderr}");
    };
    assert!(
        stderr.contains(&format!("its ring stays at {}", ring.display())),
        "{stderr}"
    );
    let dump = |inputs: &[&Path]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
            .arg("dump")
            .args(inputs)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", said(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let alone = dump(&[&dir]);
    assert!(alone.contains("the rest is in its ring"), "{alone}");
    let both = dump(&[&dir, ring]);
    let mut seqs: Vec<u64> = both
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            l.split_once("seq=")
                .and_then(|(_, n)| n.trim().parse().ok())
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..1000).collect::<Vec<u64>>(), "{both}");
}
