//! A trace of two processes: two ring files written by two child
//! processes (this test binary run again), each with its own pid, command
//! name and tracepoints (one name shared with another layout), on the
//! `mono` clock, their events interleaved in time. The dump and every
//! exporter merge them in time order, each event with its own process.

mod common;

use common::TempDir;
use ringtrace_export::export::{export, export_trace, Format};
use ringtrace_export::{
    Alignment, Dump, DumpOptions, FieldDesc, Trace, TraceError, TraceMetadata, TracepointDesc,
};
use ringtrace_ring::file::{self, Recovery};
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_tracepoint::FieldKind;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Set in a child: its command name, its ring file and its clock.
const CHILD: &str = "RINGTRACE_PROCESSES_TEST_COMM";
const RING: &str = "RINGTRACE_PROCESSES_TEST_RING";
const CLOCK: &str = "RINGTRACE_PROCESSES_TEST_CLOCK";

/// The two programs' command names.
const ALPHA: &str = "proc-alpha";
const BETA: &str = "proc-beta";

/// Each program's tracepoints: both have `app:request`, with other
/// fields; each has one of its own.
fn metadata(comm: &str) -> TraceMetadata {
    let tp = |name: &str, id: u32, fields: &[(&str, FieldKind)], format: &str| TracepointDesc {
        name: name.into(),
        id,
        fields: fields.iter().map(|(n, k)| FieldDesc::new(n, *k)).collect(),
        format: format.into(),
    };
    if comm == ALPHA {
        TraceMetadata::new(vec![
            tp(
                "app:request",
                0x0a0a_0001,
                &[("path", FieldKind::Str), ("status", FieldKind::U32)],
                "path={} status={}",
            ),
            tp("alpha:tick", 0x0a0a_0002, &[("n", FieldKind::U64)], "n={}"),
        ])
    } else {
        TraceMetadata::new(vec![
            tp(
                "app:request",
                0x0b0b_0001,
                &[("bytes", FieldKind::U64)],
                "bytes={}",
            ),
            tp(
                "beta:job",
                0x0b0b_0002,
                &[("job", FieldKind::U32)],
                "job={}",
            ),
        ])
    }
}

/// The payload of event `i` of program `comm`: `app:request` on even
/// `i`, its own tracepoint on odd.
fn payload(comm: &str, i: u32) -> Vec<u8> {
    let meta = metadata(comm);
    let tp = &meta.tracepoints[(i % 2) as usize];
    let mut p = tp.id.to_le_bytes().to_vec();
    p.extend_from_slice(&std::process::id().to_le_bytes());
    match (comm, i % 2) {
        (ALPHA, 0) => {
            let path = format!("/a/{i}");
            p.extend_from_slice(&(path.len() as u16).to_le_bytes());
            p.extend_from_slice(path.as_bytes());
            p.extend_from_slice(&200u32.to_le_bytes());
        }
        (ALPHA, _) => p.extend_from_slice(&u64::from(i).to_le_bytes()),
        (_, 0) => p.extend_from_slice(&(u64::from(i) * 100).to_le_bytes()),
        _ => p.extend_from_slice(&i.to_le_bytes()),
    }
    p
}

/// The child: names itself, opens its ring, then writes event `i` for
/// each line `i` read, answering `done`, until its input ends.
fn child(comm: &str, ring: &Path, clock: &str) {
    std::fs::write("/proc/self/comm", comm).unwrap();
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(16 * 1024)
        .quarantine_pages(1)
        .file(ring)
        .metadata(metadata(comm).to_bytes());
    let clock = clock.parse::<ringtrace_clock::ClockSpec>().unwrap();
    let ring = RingBuffer::new(config, clock.build().unwrap()).unwrap();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(i) = line.unwrap().trim().parse::<u32>() else {
            continue;
        };
        ring.cpu_writer(0).write(&payload(comm, i)).unwrap();
        writeln!(out, "done {i}").unwrap();
        out.flush().unwrap();
    }
}

/// A running child program.
struct Program {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Program {
    fn start(comm: &str, ring: &Path, clock: &str) -> Program {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "a_child_program_writes_its_ring",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, comm)
            .env(RING, ring)
            .env(CLOCK, clock)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Program {
            child,
            input,
            output,
        }
    }

    /// Has the program write event `i`, and waits until it has.
    fn event(&mut self, i: u32) {
        writeln!(self.input, "{i}").unwrap();
        let want = format!("done {i}");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.output.read_line(&mut line).unwrap() > 0, "child ended");
            // The harness's `test NAME ... ` may come first on the line.
            if line.trim_end().ends_with(&want) {
                return;
            }
        }
    }

    fn finish(self) {
        drop(self.input);
        let out = self.child.wait_with_output().unwrap();
        assert!(out.status.success(), "{:?}", out.status);
    }
}

/// The child programs' entry point: only does something in a child.
#[test]
fn a_child_program_writes_its_ring() {
    if let (Some(comm), Some(ring), Some(clock)) = (
        std::env::var_os(CHILD),
        std::env::var_os(RING),
        std::env::var_os(CLOCK),
    ) {
        child(
            comm.to_str().unwrap(),
            Path::new(&ring),
            clock.to_str().unwrap(),
        );
    }
}

/// Events per program.
const EVENTS: u32 = 4;

/// Two ring files, alpha's on `alpha_clock`, beta's on `mono`; the
/// events alternate: alpha 0, beta 0, alpha 1, beta 1...
fn two_rings(dir: &TempDir, alpha_clock: &str) -> (Vec<Recovery>, [PathBuf; 2]) {
    let paths = [
        PathBuf::from(dir.file("alpha.ring")),
        PathBuf::from(dir.file("beta.ring")),
    ];
    let mut alpha = Program::start(ALPHA, &paths[0], alpha_clock);
    let mut beta = Program::start(BETA, &paths[1], "mono");
    for i in 0..EVENTS {
        alpha.event(i);
        beta.event(i);
    }
    alpha.finish();
    beta.finish();
    let recoveries = paths.iter().map(|p| file::recover(p).unwrap()).collect();
    (recoveries, paths)
}

/// The (comm, pid) of each program, alpha's first.
fn who(r: &[Recovery]) -> [(String, u32); 2] {
    [0, 1].map(|i| (r[i].header.comm.clone(), r[i].header.pid))
}

#[test]
fn the_dump_merges_two_processes_in_time_order_each_line_with_its_process() {
    let dir = TempDir::new("processes-dump");
    let (r, _) = two_rings(&dir, "mono");
    let [(a, a_pid), (b, b_pid)] = who(&r);
    assert_eq!((a.as_str(), b.as_str()), (ALPHA, BETA));
    assert_ne!(a_pid, b_pid);
    let trace = Trace::new(&r, Alignment::SharedClock).unwrap();
    let dump = Dump::for_trace(trace, DumpOptions::default()).unwrap();
    let lines: Vec<String> = dump.events().into_iter().map(|e| dump.line(e)).collect();
    assert_eq!(lines.len(), 2 * EVENTS as usize, "{lines:#?}");
    for (n, line) in lines.iter().enumerate() {
        let i = n / 2;
        let want = if n % 2 == 0 {
            let what = if i % 2 == 0 {
                format!("app:request: path=/a/{i} status=200")
            } else {
                format!("alpha:tick: n={i}")
            };
            (format!("{a:>16}-{a_pid:<7} [000]"), what)
        } else {
            let what = if i % 2 == 0 {
                format!("app:request: bytes={}", i * 100)
            } else {
                format!("beta:job: job={i}")
            };
            (format!("{b:>16}-{b_pid:<7} [000]"), what)
        };
        assert!(
            line.starts_with(&want.0) && line.ends_with(&want.1),
            "line {n}: {line}, want {want:?}"
        );
    }
    let comments = dump.comments().join("\n");
    for (comm, pid, path) in [(&a, a_pid, "alpha.ring"), (&b, b_pid, "beta.ring")] {
        assert!(
            comments.contains(&format!("# process {pid} ({comm}): ")) && comments.contains(path),
            "{comments}"
        );
    }
    assert!(
        comments.contains("# ringtrace dump of 2 processes"),
        "{comments}"
    );
    assert_eq!(comments.matches("#   clock: mono").count(), 2, "{comments}");
    assert_eq!(
        comments
            .matches("#   events (every CPU): 4 recovered")
            .count(),
        2,
        "{comments}"
    );
    let json = dump.json(dump.events()[1]);
    assert_eq!(
        (json["pid"].as_u64(), json["comm"].as_str()),
        (Some(u64::from(b_pid)), Some(BETA))
    );
}

/// Whether `tool` runs; without it a check is skipped, or fails when
/// `RINGTRACE_REQUIRE_TOOLS` is set (CI).
fn have(tool: &str) -> bool {
    ringtrace_testkit::have_tool(tool)
}

fn run(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn trace_cmd_report_shows_both_processes_with_their_pid_and_comm_and_every_event() {
    if !have("trace-cmd") {
        return;
    }
    let dir = TempDir::new("processes-trace-cmd");
    let (r, _) = two_rings(&dir, "mono");
    let [(a, a_pid), (b, b_pid)] = who(&r);
    let out = PathBuf::from(dir.file("both.dat"));
    let trace = Trace::new(&r, Alignment::SharedClock).unwrap();
    let done = export_trace(&trace, Format::TraceCmd, &out).unwrap();
    assert_eq!((done.events, done.warnings.len()), (8, 0), "{done:?}");
    let report = run("trace-cmd", &["report", "-i", out.to_str().unwrap()]);
    let lines: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(&format!("-{a_pid} ")) || l.contains(&format!("-{b_pid} ")))
        .collect();
    assert_eq!(lines.len(), 8, "{report}");
    for (n, line) in lines.iter().enumerate() {
        let i = n / 2;
        let (who, what) = if n % 2 == 0 {
            let what = if i % 2 == 0 {
                format!("request: path=/a/{i} status=200")
            } else {
                format!("tick: n={i}")
            };
            (format!("{a}-{a_pid} [000] "), what)
        } else {
            // Beta's `app:request` has another layout: its own format.
            let what = if i % 2 == 0 {
                format!("request_{b_pid}: bytes={}", i * 100)
            } else {
                format!("job: job={i}")
            };
            (format!("{b}-{b_pid} [000] "), what)
        };
        // trace-cmd pads the event's name.
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            line.starts_with(&who) && line.contains(&what),
            "line {n}: {line}, want {who} ... {what}\n{report}"
        );
    }
}

#[test]
fn babeltrace2_prints_every_event_with_its_process() {
    if !have("babeltrace2") {
        return;
    }
    let dir = TempDir::new("processes-ctf");
    let (r, _) = two_rings(&dir, "mono");
    let [(a, a_pid), (b, b_pid)] = who(&r);
    let out = PathBuf::from(dir.file("both.ctf"));
    let trace = Trace::new(&r, Alignment::SharedClock).unwrap();
    export_trace(&trace, Format::Ctf, &out).unwrap();
    let text = run("babeltrace2", &[out.to_str().unwrap()]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    for (n, line) in lines.iter().enumerate() {
        let i = n / 2;
        let what = if n % 2 == 0 {
            if i % 2 == 0 {
                format!("app:request: {{ cpu_id = 0 }}, {{ tid = {a_pid}, pid = {a_pid}, procname = \"{a}\" }}, {{ path = \"/a/{i}\", status = 200 }}")
            } else {
                format!("alpha:tick: {{ cpu_id = 0 }}, {{ tid = {a_pid}, pid = {a_pid}, procname = \"{a}\" }}, {{ n = {i} }}")
            }
        } else {
            if i % 2 == 0 {
                format!("app:request: {{ cpu_id = 0 }}, {{ tid = {b_pid}, pid = {b_pid}, procname = \"{b}\" }}, {{ bytes = {} }}", i * 100)
            } else {
                format!("beta:job: {{ cpu_id = 0 }}, {{ tid = {b_pid}, pid = {b_pid}, procname = \"{b}\" }}, {{ job = {i} }}")
            }
        };
        assert!(line.ends_with(&what), "line {n}: {line}\nwant {what}");
    }
}

#[test]
fn the_chrome_trace_has_each_events_pid_and_a_process_name_for_each() {
    let dir = TempDir::new("processes-chrome");
    let (r, _) = two_rings(&dir, "mono");
    let [(a, a_pid), (b, b_pid)] = who(&r);
    let out = PathBuf::from(dir.file("both.json"));
    let trace = Trace::new(&r, Alignment::SharedClock).unwrap();
    export_trace(&trace, Format::Chrome, &out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let names: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            (u64::from(a_pid), a.as_str()),
            (u64::from(b_pid), b.as_str())
        ]
    );
    let instants: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| (e["pid"].as_u64().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    let (a, b) = (u64::from(a_pid), u64::from(b_pid));
    assert_eq!(
        instants,
        [
            (a, "app:request"),
            (b, "app:request"),
            (a, "alpha:tick"),
            (b, "beta:job"),
            (a, "app:request"),
            (b, "app:request"),
            (a, "alpha:tick"),
            (b, "beta:job"),
        ]
    );
    let ts: Vec<f64> = events
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    assert_eq!(json["otherData"]["processes"].as_array().unwrap().len(), 2);
}

#[test]
fn incomparable_clocks_are_refused_naming_both_and_aligned_by_wall_clock_when_asked() {
    let dir = TempDir::new("processes-clocks");
    let (r, _) = two_rings(&dir, "counter");
    let [(a, a_pid), (b, b_pid)] = who(&r);
    let err = Trace::new(&r, Alignment::SharedClock).unwrap_err();
    assert!(
        matches!(err, TraceError::IncomparableClocks { .. }),
        "{err}"
    );
    let text = err.to_string();
    for want in [
        format!("process {a_pid} ({a}, "),
        format!("process {b_pid} ({b}, "),
        "`counter`".into(),
        "`mono`".into(),
        "--align-wall-clock".into(),
    ] {
        assert!(text.contains(&want), "{want} not in: {text}");
    }

    let trace = Trace::new(&r, Alignment::WallClock).unwrap();
    let out = PathBuf::from(dir.file("aligned.txt"));
    let done = export_trace(&trace, Format::Text, &out).unwrap();
    assert_eq!(done.events, 8);
    assert!(
        done.warnings
            .iter()
            .any(|w| w.contains("wall-clock anchors"))
            && done.warnings.iter().any(|w| w.contains("`counter`")),
        "{:?}",
        done.warnings
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("# processes aligned by their wall-clock anchors"),
        "{text}"
    );
    // Beta's events, on `mono`, keep their order among themselves.
    let beta: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!("{b}-{b_pid} ")))
        .collect();
    assert_eq!(beta.len(), 4, "{text}");
    assert!(
        beta[0].ends_with("bytes=0") && beta[3].ends_with("job=3"),
        "{beta:?}"
    );
}

#[test]
fn a_single_files_export_is_what_export_of_its_recovery_writes() {
    let dir = TempDir::new("processes-single");
    let (r, _) = two_rings(&dir, "mono");
    for format in [Format::Text, Format::TraceCmd, Format::Chrome] {
        let one = PathBuf::from(dir.file(&format!("one.{}", format.name())));
        let via_trace = PathBuf::from(dir.file(&format!("trace.{}", format.name())));
        export(&r[0], format, &one).unwrap();
        let trace = Trace::new(&r[..1], Alignment::SharedClock).unwrap();
        export_trace(&trace, format, &via_trace).unwrap();
        assert_eq!(
            std::fs::read(&one).unwrap(),
            std::fs::read(&via_trace).unwrap(),
            "{}",
            format.name()
        );
    }
}

#[test]
fn no_process_writes_over_any_of_the_ring_files() {
    let dir = TempDir::new("processes-guard");
    let (r, paths) = two_rings(&dir, "mono");
    let trace = Trace::new(&r, Alignment::SharedClock).unwrap();
    let before = std::fs::read(&paths[1]).unwrap();
    let err = export_trace(&trace, Format::Text, &paths[1]).unwrap_err();
    assert!(err.to_string().contains("beta.ring"), "{err}");
    assert_eq!(std::fs::read(&paths[1]).unwrap(), before);
}
