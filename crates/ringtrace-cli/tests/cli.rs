//! The `ringtrace` command's behaviour: exit codes, the kernel's output
//! lines, the JSON keys and the totals invariant, on short runs.

mod common;

use common::ringtrace;

fn field(text: &str, label: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{text}"));
    line[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in `{line}`"))
}

#[test]
fn hammer_prints_the_kernel_lines_in_order_and_total_equals_hit() {
    let out = ringtrace(&common::short_hammer("0.3"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let order = [
        "Starting ring buffer hammer",
        "Running Consumer at nice: 0",
        "Running Producer at nice: 0",
        "End ring buffer hammer",
        "Time:",
        "Overruns:",
        "Read:",
        "Entries:",
        "Total:",
        "Missed:",
        "Hit:",
        "Entries per millisec:",
    ];
    let mut at = 0;
    for want in order {
        let found = text[at..]
            .find(want)
            .unwrap_or_else(|| panic!("`{want}` missing or out of order in:\n{text}"));
        at += found;
    }
    assert!(text.contains("ns per entry"), "{text}");
    assert!(text.contains("(by events and pages)"), "{text}");
    assert!(text.contains("Clock: local  Mode: overwrite"), "{text}");
    let hit = field(&text, "Hit:");
    assert!(hit > 0);
    assert_eq!(field(&text, "Total:"), hit, "{text}");
    assert_eq!(
        field(&text, "Entries:") + field(&text, "Overruns:") + field(&text, "Read:"),
        hit,
        "{text}"
    );
    assert!(!text.contains("[ERROR!]"), "{text}");
}

#[test]
fn hammer_json_has_every_key_and_its_totals_add_up() {
    let out = ringtrace(&[
        "hammer",
        "--seconds",
        "0.3",
        "--json",
        "--read",
        "pages",
        "--mode",
        "discard",
        "--producers",
        "2",
        "--clock",
        "mono@preempt",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "time_us",
        "overruns",
        "read",
        "entries",
        "total",
        "missed",
        "missed_full",
        "missed_busy",
        "missed_preparing",
        "pages_stepped_over",
        "hit",
        "entries_per_ms",
        "ns_per_entry",
        "clock",
        "mode",
        "producers",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert!(v["ns_per_entry"].is_f64());
    // No progress bar when stderr is not a terminal.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["total"], v["hit"]);
    assert_eq!(v["overruns"], 0, "discard mode overran: {v}");
    assert_eq!(v["mode"], "discard");
    assert_eq!(v["clock"], "mono@preempt");
    assert_eq!(v["producers"], 2);
}

#[test]
fn hammer_on_both_write_paths_runs_each_and_says_which_ran() {
    let out = ringtrace(&[
        "hammer",
        "--seconds",
        "0.2",
        "--write-path",
        "both",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("rseq write path is unavailable")
        && std::env::var("RINGTRACE_REQUIRE_RSEQ").as_deref() != Ok("1")
    {
        eprintln!("skipped: {err}");
        return;
    }
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v.as_array().expect("two runs, as an array");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["write_path"], "rseq");
    assert_eq!(runs[1]["write_path"], "cas");
    for run in runs {
        assert_eq!(run["total"], run["hit"], "{run}");
        assert!(run["remote_updates"].is_u64(), "{run}");
        assert!(run["shared_mode_entries"].is_u64(), "{run}");
    }
}

#[test]
fn a_write_path_that_cannot_be_had_is_an_error_naming_the_valid_ones() {
    let out = ringtrace(&["hammer", "--seconds", "0.1", "--write-path", "lockfree"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lockfree") && err.contains("rseq") && err.contains("cas"),
        "{err}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["hammer", "--seconds", "0.1"])
        .env("RINGTRACE_WRITE_PATH", "fast")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RINGTRACE_WRITE_PATH=\"fast\"") && err.contains("auto, rseq and cas"),
        "{err}"
    );

    // Asked for by name where glibc registers no rseq area: refused, and
    // the reason named; `auto` falls back to cas and says why.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["hammer", "--seconds", "0.1", "--write-path", "rseq"])
        .env("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rseq write path is unavailable"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["hammer", "--seconds", "0.1"])
        .env("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Write path: cas") && text.contains("rseq unavailable"),
        "{text}"
    );
}

#[test]
fn hammer_reads_by_events_when_asked() {
    let out = ringtrace(&["hammer", "--seconds", "0.2", "--read", "events"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(by events)"), "{text}");
    assert_eq!(field(&text, "Total:"), field(&text, "Hit:"), "{text}");
}

#[test]
fn hammer_without_a_reader_reports_it_and_still_adds_up() {
    let out = ringtrace(&["hammer", "--seconds", "0.2", "--disable-reader"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Read:     (reader disabled)"), "{text}");
    assert!(!text.contains("Running Consumer"), "{text}");
    assert_eq!(field(&text, "Total:"), field(&text, "Hit:"), "{text}");
}

#[test]
fn bad_arguments_exit_non_zero_with_a_message_naming_what_is_valid() {
    let out = ringtrace(&["hammer", "--seconds", "0.1", "--clock", "tsc@nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope") && err.contains("irq-soft"), "{err}");

    let out = ringtrace(&["hammer", "--seconds", "0.1", "--producer-fifo", "7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("7 is not in 0..=2"));

    let out = ringtrace(&["hammer", "--seconds", "-1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seconds -1 is invalid"));

    let out = ringtrace(&["hammer", "--buffer-size", "100"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("from 2"));

    // Sizes as `record` takes them: K, M and G suffixes, and no other.
    let out = ringtrace(&["hammer", "--buffer-size", "4K"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--buffer-size 4096:"));
    let out = ringtrace(&["hammer", "--buffer-size", "8X"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("K, M or G"));
}

#[test]
fn every_subcommand_has_help() {
    for sub in [
        vec!["--help"],
        vec!["hammer", "--help"],
        vec!["clocks", "--help"],
        vec!["recover", "--help"],
        vec!["dump", "--help"],
        vec!["export", "--help"],
    ] {
        let out = ringtrace(&sub);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage"));
    }
}

#[test]
fn clocks_json_has_a_row_per_available_clock_and_protection_and_both_trace_clock_local_halves() {
    let out = ringtrace(&[
        "clocks",
        "--json",
        "--run-ms",
        "10",
        "--update-hz",
        "5000",
        "--rounds",
        "3",
        "--tear-seconds",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let available = ringtrace::clock::ClockSpec::all()
        .iter()
        .filter(|s| s.build().is_ok())
        .count();
    assert_eq!(rows.len(), available);
    for protection in ["raw", "preempt", "irq-soft", "irq", "irq-hard"] {
        let row = rows
            .iter()
            .find(|r| r["clock"] == "mono" && r["protection"] == protection)
            .unwrap_or_else(|| panic!("no mono@{protection} row"));
        assert!(row["read_ns"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["record_ns"].as_f64().unwrap() > 0.0, "{row}");
        let update = &row["update"]["Ok"];
        assert!(update["events"].as_u64().unwrap() > 0, "{row}");
        // mono is a single read: nothing to check against the sched data.
        assert!(update["wrong_recorded"].is_null(), "{row}");
        assert!(update["flattened"].is_null(), "{row}");
    }
    let sched = rows
        .iter()
        .find(|r| r["clock"] == "sched" && r["protection"] == "irq")
        .expect("a sched@irq row");
    assert!(
        sched["update"]["Ok"]["wrong_recorded"]["ahead"].is_u64(),
        "{sched}"
    );
    assert!(
        sched["update_write"]["Ok"]["handler"] == "update-and-write",
        "{sched}"
    );
    let both = &v["clock_local"];
    assert!(
        both["cost"]["Ok"]["ratio"]["p50"].as_f64().unwrap() > 0.0,
        "{both}"
    );
    // Reads that cannot tear, in both handler modes, and none counted wrong.
    let controls = both["controls"].as_array().unwrap();
    assert_eq!(controls.len(), 12, "{both}");
    assert!(controls.iter().all(|c| c["wrong"]["Ok"] == 0), "{both}");
    for half in ["faithful", "amplified"] {
        let run = &both[half]["Ok"];
        assert!(
            run["source"]["updates"].as_u64().unwrap() > 0,
            "{half}: {both}"
        );
        let rate = &run["rate"];
        assert!(
            rate["low"].as_f64().unwrap() <= rate["high"].as_f64().unwrap(),
            "{half}: {both}"
        );
    }
    assert_eq!(both["amplified"]["Ok"]["amplified"], true, "{both}");
    assert_eq!(both["faithful"]["Ok"]["amplified"], false, "{both}");
    // A clock monotonic across CPUs shows no step back between CPUs.
    let global = rows
        .iter()
        .find(|r| r["clock"] == "global" && r["protection"] == "raw")
        .unwrap();
    assert_eq!(global["skew_ns"].as_f64(), Some(0.0), "{global}");
}

#[test]
fn pairs_json_has_every_pair_strategy_and_metric() {
    let out = ringtrace(&[
        "pairs",
        "--samples",
        "2000",
        "--cpus",
        "1",
        "--highest",
        "10",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for pair in ["irq", "irq_save", "preempt"] {
        for strategy in ["baseline", "call-always", "early-key"] {
            let m = &v[pair][strategy];
            for metric in ["average", "max_avg", "median", "percentile"] {
                let x = m[metric]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{pair}/{strategy}/{metric}: {v}"));
                assert!(x >= 0.0 && x.is_finite());
            }
            assert!(
                m["max_avg"].as_f64() >= m["median"].as_f64(),
                "{pair}/{strategy}: {m}"
            );
        }
    }
    assert!(v["timer_overhead_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn pairs_text_prints_the_patch_tables() {
    let out = ringtrace(&["pairs", "--samples", "1000", "--cpus", "1", "--irq", "hard"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for title in ["IRQ Metrics", "IRQ save/restore Metrics", "Preempt Metrics"] {
        assert!(text.contains(title), "{text}");
    }
    assert_eq!(text.matches("Combined Metric").count(), 3, "{text}");
    assert!(text.contains("subtracted"), "{text}");
    // The timing tables name each strategy once per pair; the code-size
    // table after them has a row per pair and strategy too.
    let (timing, code) = text
        .split_once("Code per call site")
        .expect("the code-size table follows the timing tables");
    for strategy in ["baseline", "call-always", "early-key"] {
        assert_eq!(timing.matches(strategy).count(), 3, "{text}");
        for pair in ["irq ", "irq_save ", "preempt "] {
            assert!(code.contains(&format!("{pair:<11}{strategy}")), "{code}");
        }
    }
}

#[test]
fn pairs_rejects_impossible_settings() {
    for (args, says) in [
        (&["pairs", "--cpus", "999"][..], "--cpus 999"),
        (&["pairs", "--samples", "0"], "--samples 0"),
        (&["pairs", "--samples", "18446744073709551615"], "--samples"),
        (&["pairs", "--percentile", "101"], "101 is not in 0..=100"),
        (&["pairs", "--percentile", "-1"], "-1 is not in 0..=100"),
    ] {
        let out = ringtrace(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn out_of_range_settings_are_errors_naming_the_flag_not_panics_or_hangs() {
    for (args, says) in [
        (&["hammer", "--producers", "0"][..], "0 is not in 1..=1024"),
        (
            &["hammer", "--producers", "18446744073709551615"],
            "--producers",
        ),
        (
            &["hammer", "--write-iteration", "0"],
            "0 is not in 1..=1000000",
        ),
        (
            &["hammer", "--write-iteration", "-1"],
            "-1 is not in 1..=1000000",
        ),
        (
            &["hammer", "--write-iteration", "4294967295"],
            "--write-iteration",
        ),
        (&["hammer", "--seconds", "1e20"], "--seconds"),
        (
            &["hammer", "--seconds", "1e19"],
            "the most is 31536000 (a year)",
        ),
        (&["hammer", "--seconds", "31536001"], "the most is 31536000"),
        (
            &[
                "record",
                "-o",
                "/nonexistent/s",
                "--buffer-size",
                "1G",
                "--",
                "true",
            ],
            "at most 32768 pages",
        ),
        (
            &["export", "x.ring", "--format", "json", "-o", "x"],
            "valid formats: text, trace-cmd, chrome, ctf, perfetto, parquet, otlp",
        ),
        (
            &["export", "x.ring", "--format", "ctf"],
            "writes a directory: give it with -o DIR",
        ),
        (&["hammer", "--consumer-fifo", "3"], "3 is not in 0..=2"),
        (
            &["hammer", "--producer-nice", "20"],
            "20 is not in -20..=19",
        ),
        (
            &["hammer", "--wakeup-interval", "-5"],
            "-5 is not in 1..=1000000",
        ),
        (&["clocks", "--run-ms", "0"], "--run-ms"),
        (&["clocks", "--update-hz", "0"], "--update-hz"),
        (&["clocks", "--update-hz", "20001"], "--update-hz"),
        (&["clocks", "--tear-seconds", "0"], "--tear-seconds"),
        (&["report", "--update-hz", "abc"], "--update-hz"),
        (
            &["report", "--quick", "--update-hz", "10"],
            "too slow for the report's clock rows",
        ),
    ] {
        let out = ringtrace(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn quick_report_writes_a_patches_table_markdown_json_and_a_plot() {
    let dir = std::env::temp_dir().join(format!("ringtrace-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace_dir = dir.join("trace"); // made by the report
    let out = ringtrace(&[
        "report",
        "--quick",
        "--out",
        dir.to_str().unwrap(),
        "--keep-trace",
        trace_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8(out.stdout).unwrap();
    for section in [
        "## The patches",
        "tracing: do not disable interrupts for trace_clock_local",
        "## Every clock under every protection, under clock updates",
        "## ring_buffer_benchmark per clock, repeated",
        "## The kept trace",
        "## Legend",
    ] {
        assert!(md.contains(section), "{section} missing:\n{md}");
    }
    // The kept trace: where the report says, private, and readable.
    let ring = trace_dir.join("hammer.ring");
    assert!(
        md.contains(&format!("The hammer's trace is in {}.", ring.display())),
        "{md}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&trace_dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let dumped = ringtrace(&["dump", ring.to_str().unwrap()]);
    let dumped = String::from_utf8_lossy(&dumped.stdout);
    assert!(dumped.contains(": hammer: producer=0 seq="), "{dumped}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let patches = json["patches"].as_array().unwrap();
    assert_eq!(patches.len(), 5, "{json}");
    for patch in patches {
        let verdict = patch["verdict"]["verdict"].as_str().unwrap_or_default();
        assert!(
            ["reproduced", "not-reproduced", "seen", "not-measurable"].contains(&verdict),
            "{patch}"
        );
    }
    for h in json["hammer"].as_array().unwrap() {
        for run in h["runs"].as_array().unwrap() {
            let run = &run["Ok"];
            assert_eq!(run["total"], run["hit"], "{h}");
        }
    }
    assert!(!json["clocks"].as_array().unwrap().is_empty());
    assert_eq!(json["kept_trace"]["path"], ring.to_str().unwrap());
    assert!(
        json["kept_trace"]["events"]["Ok"].as_u64().unwrap() > 0,
        "{json}"
    );
    let svg = std::fs::read_to_string(dir.join("report.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("trace_clock_local"),
        "not the plot"
    );
    // Written through a temporary name: none is left behind.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_report_stopped_by_sigint_prints_what_it_measured_and_exits_non_zero() {
    let dir = std::env::temp_dir().join(format!("ringtrace-sigint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(["report", "--quick", "--out", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    // SAFETY: kill with a pid we spawned and a valid signal.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(md.contains("Stopped before the end"), "{md}");
    assert!(
        md.contains("## The patches") && md.contains("not run"),
        "{md}"
    );
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_closed_pipe_on_stdout_ends_quietly_with_a_non_zero_exit() {
    let out = common::ringtrace_into_closed_pipe(&[
        "clocks",
        "--run-ms",
        "1",
        "--update-hz",
        "5000",
        "--rounds",
        "1",
        "--tear-seconds",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn help_that_cannot_be_written_is_not_a_success() {
    // A full disk: an error naming it.
    let full = std::fs::File::options().write(true).open("/dev/full");
    if let Ok(full) = full {
        for args in [vec!["--help"], vec!["hammer", "--help"], vec!["--version"]] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringtrace"))
                .args(&args)
                .stdout(full.try_clone().unwrap())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("cannot write to stdout"), "{args:?}: {err}");
        }
    }
    // A closed pipe: quietly, with a shell's code for SIGPIPE.
    let out = common::ringtrace_into_closed_pipe(&["--help"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(err.is_empty(), "{err}");
    // And written, help is still a success and a usage error still 2.
    let out = ringtrace(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: ringtrace"));
    let out = ringtrace(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected argument"));
}

#[test]
fn report_refuses_an_output_that_is_not_a_directory() {
    let out = ringtrace(&["report", "--quick", "--out", "/nonexistent/ringtrace"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");
    let out = ringtrace(&["report", "--quick", "--out", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn report_refuses_an_unwritable_directory_before_running() {
    // /proc is a directory no one can create files in, root included. The
    // message comes from the check made before the run.
    let out = ringtrace(&["report", "--quick", "--out", "/proc"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--out /proc is not writable"), "{err}");
}

#[test]
fn report_refuses_a_report_file_it_could_not_replace_before_running() {
    let dir = std::env::temp_dir().join(format!("ringtrace-report-dirs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("report.json")).unwrap();
    let started = std::time::Instant::now();
    let out = ringtrace(&["report", "--quick", "--out", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("report.json is there and is not a regular file"),
        "{err}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "refused before the run"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The exit code and stderr of `ringtrace args` with `env` set.
fn ringtrace_with(env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn clocks_refuses_updates_so_fast_or_so_slow_that_the_run_could_not_measure() {
    // Above 20 kHz a writing handler can take all of the writer's time (a
    // 100 kHz run never ended); a period longer than the run gives no
    // update at all.
    let (code, err) = ringtrace_with(&[], &["clocks", "--update-hz", "100000"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1..=20000"), "{err}");
    let (code, err) = ringtrace_with(&[], &["clocks", "--run-ms", "1", "--update-hz", "200"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("too slow for the run"), "{err}");
}

#[test]
fn a_bad_write_path_in_the_environment_fails_clocks_and_report_before_they_run() {
    let dir = common::TempDir::new("bad-path");
    let env = [("RINGTRACE_WRITE_PATH", "bogus")];
    let (code, err) = ringtrace_with(&env, &["clocks", "--run-ms", "1", "--rounds", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("valid are auto, rseq and cas"), "{err}");
    let (code, err) = ringtrace_with(&env, &["report", "--quick", "--out", &dir.file("")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("RINGTRACE_WRITE_PATH"), "{err}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

#[test]
fn hammer_and_pairs_refuse_what_they_would_otherwise_change_silently() {
    for (args, says) in [
        (&["hammer", "--seconds", "1e-9"][..], "the least is 0.001"),
        (&["pairs", "--highest", "0", "--samples", "10"], "1 or more"),
        (
            &["hammer", "--buffer-size", "4096"],
            "--buffer-size 4096: per-CPU size 4096 bytes makes 1 page of 4096 bytes; a CPU buffer has from 2 to 32768 pages, so from 4097 to",
        ),
        (
            &["hammer", "--disable-reader", "--read", "pages"],
            "cannot be used with",
        ),
        (
            &["hammer", "--disable-reader", "--consumer", "spin"],
            "cannot be used with",
        ),
        (
            &["hammer", "--disable-reader", "--consumer-fifo", "1"],
            "cannot be used with",
        ),
    ] {
        let (code, err) = ringtrace_with(&[], args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn export_never_overwrites_its_ring_file_or_another_ring() {
    let dir = common::TempDir::new("export-self");
    let ring = dir.file("t.ring");
    let mut hammer = common::short_hammer("0.05");
    hammer.extend(["--file", &ring]);
    assert_eq!(ringtrace_with(&[], &hammer).0, Some(0));
    let before = std::fs::read(&ring).unwrap();
    std::os::unix::fs::symlink(&ring, dir.0.join("link.ring")).unwrap();
    std::fs::copy(&ring, dir.0.join("copy.ring")).unwrap();
    for (target, says) in [
        (ring.clone(), "the ring file"),
        (dir.file("link.ring"), "the ring file"),
        (dir.file("copy.ring"), "is a ring file"),
    ] {
        let (code, err) = ringtrace_with(&[], &["export", &ring, "-o", &target]);
        assert_eq!(code, Some(2), "{target}: {err}");
        assert!(err.contains(says), "{target}: {err}");
    }
    assert_eq!(std::fs::read(&ring).unwrap(), before, "the ring changed");
    let (code, err) = ringtrace_with(&[], &["export", &ring, "-o", &dir.file("out.txt")]);
    assert_eq!(code, Some(0), "{err}");
    // `-o -` is standard output, not a file named `-`; not for ctf.
    let out = ringtrace(&["export", &ring, "-o", "-"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# ringtrace dump"));
    let (code, err) = ringtrace_with(&[], &["export", &ring, "--format", "ctf", "-o", "-"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("directory"), "{err}");
    assert!(
        !std::path::Path::new("-").exists(),
        "a file named - was made"
    );
}

#[test]
fn a_ring_file_that_cannot_be_given_its_size_is_not_left_behind() {
    // A file size limit (SIGXFSZ ignored, so the truncate fails with
    // EFBIG) makes the new file's sizing fail: the half-made file goes.
    let dir = common::TempDir::new("no-room");
    let ring = dir.file("x.ring");
    let script = format!(
        "trap '' XFSZ; ulimit -f 64; exec \"$0\" hammer --seconds 0.01 --disable-reader --file '{ring}'"
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_ringtrace")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("x.ring"), "{err}");
    assert!(dir.entries().is_empty(), "{:?} left: {err}", dir.entries());
}
