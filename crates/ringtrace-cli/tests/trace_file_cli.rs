//! `ringtrace hammer --file`, `recover` and `dump` as a user runs them:
//! the hammer's events shown with their fields, errors that name the file
//! or the valid range, the JSON, and a writer seen live and then dead.

mod common;

use common::TempDir;

use common::ringtrace;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A short hammer without a consumer into `path`, so the file keeps all
/// the ring holds.
fn hammer_into(path: &str) {
    let stdout = common::hammer_file(path, "0.2");
    assert!(stdout.contains(&format!("Trace:    {path} (")), "{stdout}");
}

#[test]
fn hammer_file_then_dump_shows_the_hammer_events_with_producer_and_seq() {
    let dir = TempDir::new("hammer");
    let path = dir.file("h.ring");
    hammer_into(&path);

    let out = ringtrace(&["dump", &path]);
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(stdout.contains("# writer: closed"), "{stdout}");
    assert!(stdout.contains("untagged layout `hammer`"), "{stdout}");
    // ftrace's marker of what was overwritten before the first event kept.
    let lost: Vec<u64> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("CPU:0 [LOST "))
        .map(|l| l.trim_end_matches(" EVENTS]").parse().unwrap())
        .collect();
    let seqs: Vec<u64> = stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("CPU:"))
        .map(|l| {
            let fields = l
                .split_once(": hammer: producer=0 seq=")
                .unwrap_or_else(|| panic!("not a hammer event: {l:?}"))
                .1;
            let (seq, check) = fields.split_once(" check=0x").unwrap();
            assert!(u32::from_str_radix(check, 16).is_ok(), "{l:?}");
            seq.parse().unwrap()
        })
        .collect();
    assert!(!seqs.is_empty(), "{stdout}");
    // One producer: its sequence numbers, oldest kept to newest, with none
    // missing (overwriting takes whole pages from the front).
    let expected: Vec<u64> = (seqs[0]..seqs[0] + seqs.len() as u64).collect();
    assert_eq!(seqs, expected);
    // The producer counted from 0: every event before the first kept was
    // overwritten, and the marker says how many.
    assert_eq!(lost, if seqs[0] > 0 { vec![seqs[0]] } else { vec![] });

    let out = ringtrace(&["dump", "--json", &path]);
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["event"], "hammer");
    assert_eq!(first["kind"], "untagged");
    assert_eq!(first["fields"]["producer"], 0);
    assert_eq!(first["fields"]["seq"], seqs[0]);
    assert!(first["ns"].is_u64() && first["wall_ns"].is_u64(), "{first}");
    assert_eq!(first["lost_before"], seqs[0], "{first}");

    let out = ringtrace(&["dump", "--raw", "--cpu", "0", &path]);
    let (stdout, _) = text(&out);
    let line = stdout
        .lines()
        .find(|l| !l.starts_with('#') && !l.starts_with("CPU:"))
        .unwrap();
    let hex = line.split_once(": hammer: ").unwrap().1;
    assert_eq!(hex.len(), 20, "10 bytes as hex: {line:?}");
    assert!(hex.starts_with("0000"), "producer 0 first: {line:?}");
}

#[test]
fn dump_with_a_cpu_out_of_range_is_an_error_naming_the_valid_range() {
    let dir = TempDir::new("cpu");
    let path = dir.file("h.ring");
    hammer_into(&path);
    let cpus = ringtrace::ring::file::recover(&path).unwrap().cpus.len();
    let out = ringtrace(&["dump", "--cpu", &cpus.to_string(), &path]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        err.contains(&format!(
            "--cpu: CPU {cpus} is out of range: {path} has CPU buffers 0 to {}",
            cpus - 1
        )),
        "{err}"
    );
}

#[test]
fn dump_and_recover_of_a_file_that_is_not_a_ring_file_name_it() {
    let dir = TempDir::new("notring");
    let text_file = dir.file("notes.txt");
    std::fs::write(&text_file, "hello, world\n").unwrap();
    let empty = dir.file("empty");
    std::fs::write(&empty, "").unwrap();
    let missing = dir.file("missing.ring");
    for cmd in ["dump", "recover"] {
        let out = ringtrace(&[cmd, &text_file]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{text_file} is not a ringtrace file")),
            "{err}"
        );
        let out = ringtrace(&[cmd, &empty]);
        let (_, err) = text(&out);
        assert!(err.contains(&format!("{empty} is empty")), "{err}");
        let out = ringtrace(&[cmd, &missing]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&missing), "{err}");
        let out = ringtrace(&[cmd, dir.0.to_str().unwrap()]);
        let (_, err) = text(&out);
        assert!(err.contains("is a directory, not a regular file"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn recover_json_parses_and_its_counts_match_the_text() {
    let dir = TempDir::new("recover");
    let path = dir.file("h.ring");
    hammer_into(&path);
    let out = ringtrace(&["recover", "--json", &path]);
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["file"], path.as_str());
    assert_eq!(json["writer"]["state"], "closed");
    assert_eq!(json["clock"]["name"], "local");
    assert_eq!(json["metadata"]["usable"], true);
    // The hammer registers nothing at run time: an empty, undamaged annex.
    assert_eq!(json["metadata_records"]["count"], 0);
    assert!(json["metadata_records"]["annex_capacity"].as_u64().unwrap() > 0);
    let cpus = json["cpus"].as_array().unwrap();
    assert_eq!(
        cpus.len() as u64,
        json["geometry"]["cpus"].as_u64().unwrap()
    );
    let sum: u64 = cpus
        .iter()
        .map(|c| c["counts"]["recovered"].as_u64().unwrap())
        .sum();
    assert!(sum > 0);
    assert_eq!(json["total"]["counts"]["recovered"], sum);
    // Nothing was read, so every hit was overwritten or is still there.
    let acc = &json["total"]["accounting"];
    assert_eq!(
        acc["hit"].as_u64().unwrap(),
        acc["overrun"].as_u64().unwrap() + sum,
        "{json}"
    );
    assert_eq!(json["has_problems"], false, "{json}");

    let out = ringtrace(&["recover", &path]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains(&format!("file:      {path}\n")), "{stdout}");
    assert!(stdout.contains("writer:    closed"), "{stdout}");
    assert!(
        stdout.contains(&format!("total:     recovered {sum}, skipped pending 0")),
        "{stdout}"
    );
}

#[test]
fn hammer_refuses_an_existing_file_and_appends_when_asked() {
    let dir = TempDir::new("append");
    let path = dir.file("h.ring");
    hammer_into(&path);
    let out = ringtrace(&["hammer", "--seconds", "0.1", "--file", &path]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{path} already exists; append to it")),
        "{err}"
    );
    let out = ringtrace(&[
        "hammer",
        "--seconds",
        "0.1",
        "--disable-reader",
        "--buffer-size",
        "65536",
        "--file",
        &path,
        "--append",
    ]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let link = dir.file("link.ring");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let out = ringtrace(&["hammer", "--seconds", "0.1", "--file", &link, "--append"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
}

#[test]
fn a_running_writer_dumps_as_a_live_snapshot_and_a_killed_one_as_died() {
    let dir = TempDir::new("live");
    let path = dir.file("h.ring");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args([
            "hammer",
            "--seconds",
            "60",
            "--disable-reader",
            "--buffer-size",
            "65536",
            "--file",
            &path,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let live = loop {
        let out = ringtrace(&["dump", &path]);
        let (stdout, _) = text(&out);
        if out.status.success() && stdout.lines().any(|l| l.contains(": hammer: producer=")) {
            break stdout;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no events after 20 s: {stdout}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(live.contains("# writer: live snapshot"), "{live}");
    assert!(
        live.contains(&format!("process {} (ringtrace)", child.id())),
        "{live}"
    );
    assert!(live.contains("# live: a snapshot; it may miss"), "{live}");
    child.kill().unwrap(); // SIGKILL: no drop, the status word stays open
    child.wait().unwrap();

    let out = ringtrace(&["recover", "--json", &path]);
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["writer"]["state"], "died", "{json}");
    assert!(json["total"]["counts"]["recovered"].as_u64().unwrap() > 0);
    let out = ringtrace(&["dump", &path]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("# writer: died"), "{stdout}");
    assert!(!stdout.contains("# live:"), "{stdout}");
}

#[test]
fn report_refuses_a_trace_directory_that_is_a_file_before_running() {
    let dir = TempDir::new("keep");
    let not_dir = dir.file("plain");
    std::fs::write(&not_dir, "").unwrap();
    let out = ringtrace(&["report", "--quick", "--keep-trace", &not_dir]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(stdout.is_empty(), "ran anyway: {stdout}");
    assert!(
        err.contains(&format!(
            "--keep-trace {not_dir} is a file, not a directory"
        )),
        "{err}"
    );
    std::fs::create_dir(dir.0.join("t")).unwrap();
    std::fs::write(dir.0.join("t/hammer.ring"), "").unwrap();
    let out = ringtrace(&["report", "--quick", "--keep-trace", &dir.file("t")]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("hammer.ring already exists"), "{err}");
}

#[test]
fn export_text_writes_the_dump_and_refuses_bad_formats_and_outputs_cleanly() {
    let dir = TempDir::new("export");
    let path = dir.file("h.ring");
    hammer_into(&path);
    let out_file = dir.file("h.txt");
    let out = ringtrace(&["export", &path, "--format", "text", "-o", &out_file]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let dumped = text(&ringtrace(&["dump", &path])).0;
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), dumped);

    let out = ringtrace(&["export", &path, "--format", "pdf", "-o", &out_file]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown export format `pdf`; valid formats: text, trace-cmd, chrome, ctf"),
        "{err}"
    );

    // An output in a directory that does not exist: an error naming it,
    // and nothing left behind.
    let missing = format!("{}/no/such/dir/h.txt", dir.0.display());
    let out = ringtrace(&["export", &path, "-o", &missing]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("cannot write {missing}")), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "only the ring and the good export: {left:?}");
}

#[test]
fn export_to_stdout_into_a_closed_pipe_ends_quietly_as_dump_does() {
    let dir = TempDir::new("export-pipe");
    let path = dir.file("h.ring");
    hammer_into(&path);
    for (command, format) in [
        (vec!["export", "--format", "text", "-o", "-"], "text"),
        (vec!["export", "--format", "chrome", "-o", "-"], "chrome"),
        (
            vec!["export", "--format", "trace-cmd", "-o", "-"],
            "trace-cmd",
        ),
        (vec!["dump"], "dump"),
    ] {
        let mut args = command.clone();
        args.push(&path);
        let out = common::ringtrace_into_closed_pipe(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        // 141: what a shell reports for a program SIGPIPE ended, and no
        // error message for what is not an error.
        assert_eq!(out.status.code(), Some(141), "{format}: {err}");
        assert!(!err.contains("cannot write"), "{format}: {err}");
        assert!(!err.contains("panicked"), "{format}: {err}");
    }
}

#[test]
fn export_chrome_writes_trace_event_json_with_the_hammer_events_and_their_losses() {
    let dir = TempDir::new("export-chrome");
    let path = dir.file("h.ring");
    hammer_into(&path);
    let out_file = dir.file("trace.json");
    let out = ringtrace(&["export", &path, "--format", "chrome", "-o", &out_file]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(chrome)"), "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(json["displayTimeUnit"], "ns");
    let events = json["traceEvents"].as_array().unwrap();
    let hammer: Vec<_> = events.iter().filter(|e| e["name"] == "hammer").collect();
    assert!(!hammer.is_empty());
    assert!(hammer
        .iter()
        .all(|e| e["ph"] == "i" && e["args"]["seq"].is_u64()));
    // The producer counted from 0: what came before the first event kept
    // was overwritten, and a `lost` instant says how much.
    let first_seq = hammer[0]["args"]["seq"].as_u64().unwrap();
    let lost: u64 = events
        .iter()
        .filter(|e| e["name"] == "lost")
        .map(|e| e["args"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(lost, first_seq);
    assert_eq!(json["otherData"]["lost_marked"], first_seq);
}

#[test]
fn export_trace_cmd_writes_what_trace_cmd_reports_as_the_dump_with_its_losses() {
    if Command::new("trace-cmd").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "trace-cmd is not installed and RINGTRACE_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: trace-cmd is not installed (Debian: apt-get install trace-cmd)");
        return;
    }
    let dir = TempDir::new("export-trace-cmd");
    let path = dir.file("h.ring");
    hammer_into(&path);
    let dat = dir.file("h.dat");
    let out = ringtrace(&["export", &path, "--format", "trace-cmd", "-o", &dat]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("(trace-cmd)") && !err.contains("warning"),
        "{err}"
    );

    let dumped = text(&ringtrace(&["dump", &path])).0;
    let out = Command::new("trace-cmd")
        .args(["report", "-i", &dat])
        .output()
        .unwrap();
    let (reported, err) = text(&out);
    assert!(out.status.success(), "{err}");
    // Every hammer event, with the same fields.
    let fields = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_once("hammer:"))
            .map(|(_, f)| f.trim().to_owned())
            .collect()
    };
    assert!(!fields(&dumped).is_empty(), "{dumped}");
    assert_eq!(fields(&reported), fields(&dumped));
    // ftrace's `CPU:N [LOST M EVENTS]` is trace-cmd's `CPU:N [M EVENTS DROPPED]`.
    let lost: Vec<String> = dumped
        .lines()
        .filter_map(|l| l.strip_prefix("CPU:"))
        .map(|l| {
            l.replace("[LOST ", "[")
                .replace(" EVENTS]", " EVENTS DROPPED]")
        })
        .collect();
    let dropped: Vec<String> = reported
        .lines()
        .filter_map(|l| l.strip_prefix("CPU:"))
        .map(str::to_owned)
        .collect();
    assert_eq!(dropped, lost);
}

#[test]
fn export_of_a_file_that_is_not_a_ring_is_an_error_naming_it_and_writes_nothing() {
    let dir = TempDir::new("export-bad");
    let not_ring = dir.file("notes.txt");
    std::fs::write(&not_ring, "not a ring file at all").unwrap();
    for format in ["text", "trace-cmd", "chrome", "ctf"] {
        let out_path = dir.file(&format!("out-{format}"));
        let out = ringtrace(&["export", &not_ring, "--format", format, "-o", &out_path]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{format}: {err}");
        assert!(
            err.contains(&format!("{not_ring} is not a ringtrace file")),
            "{format}: {err}"
        );
        assert!(!std::path::Path::new(&out_path).exists(), "{format}");
    }
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "only the input: {left:?}");
}
