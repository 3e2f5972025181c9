//! `ringtrace dump` and `ringtrace export` given the ring files of several
//! processes (two hammers run at once, each a process of its own): one
//! trace, merged in time order, each event with its process; bad inputs
//! are one line each, a nonzero exit, and nothing written.

mod common;

use common::{ringtrace, short_hammer, TempDir};
use std::process::Command;

/// Runs hammers at once, one per `(file, clock)`, each keeping its last
/// events (16 KiB a CPU) in its file, and returns each file's writer pid.
fn hammers(runs: &[(&str, &str)]) -> Vec<u32> {
    let children: Vec<_> = runs
        .iter()
        .map(|(file, clock)| {
            let mut args = short_hammer("0.2");
            // No consumer, so that each file keeps what its ring holds.
            args.extend(["--disable-reader", "--buffer-size", "16384"]);
            args.extend(["--clock", clock, "--file", file]);
            Command::new(env!("CARGO_BIN_EXE_ringtrace"))
                .args(&args)
                .output()
        })
        .collect();
    for out in children {
        let out = out.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    runs.iter()
        .map(|(file, _)| ringtrace::ring::file::recover(file).unwrap().header.pid)
        .collect()
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn dump_and_export_of_two_ring_files_show_every_event_with_its_process_in_time_order() {
    let dir = TempDir::new("cli-processes");
    let (a, b) = (dir.file("a.ring"), dir.file("b.ring"));
    let pids = hammers(&[(&a, "mono"), (&b, "mono")]);
    let each: Vec<usize> = [&a, &b]
        .iter()
        .map(|f| {
            let text = stdout(&ringtrace(&["dump", f]));
            text.lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with("CPU:"))
                .count()
        })
        .collect();

    let text = stdout(&ringtrace(&["dump", &a, &b]));
    assert!(
        text.starts_with("# ringtrace dump of 2 processes, merged in time order\n"),
        "{text}"
    );
    let events: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("CPU:"))
        .collect();
    assert_eq!(events.len(), each[0] + each[1]);
    for pid in &pids {
        let tag = format!("ringtrace-{pid} ");
        let mine = events.iter().filter(|l| l.contains(&tag)).count();
        assert!(mine > 0, "no event of {pid}:\n{text}");
        assert!(
            text.contains(&format!("# process {pid} (ringtrace): ")),
            "{text}"
        );
    }
    // The rings overwrote their oldest events: each loss names its process.
    for pid in &pids {
        let lost = format!(" EVENTS] in ringtrace-{pid}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("CPU:") && l.ends_with(&lost)),
            "{text}"
        );
    }
    let seconds: Vec<f64> = events
        .iter()
        .map(|l| {
            let ts = l
                .split("]")
                .nth(1)
                .unwrap()
                .trim()
                .split(':')
                .next()
                .unwrap();
            ts.parse().unwrap()
        })
        .collect();
    assert!(seconds.windows(2).all(|w| w[0] <= w[1]), "{text}");

    let dat = dir.file("both.dat");
    let out = ringtrace(&["export", &a, &b, "--format", "trace-cmd", "-o", &dat]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{} events", each[0] + each[1])) && stderr.contains(", "),
        "{stderr}"
    );
    let report = Command::new("trace-cmd")
        .args(["report", "-i", &dat])
        .output();
    match report {
        Ok(report) if report.status.success() => {
            let report = String::from_utf8_lossy(&report.stdout);
            for pid in &pids {
                assert!(report.contains(&format!("ringtrace-{pid} ")), "{report}");
            }
        }
        _ => assert!(
            std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "trace-cmd cannot be run and RINGTRACE_REQUIRE_TOOLS is set"
        ),
    }
}

#[test]
fn bad_inputs_are_one_line_each_a_nonzero_exit_and_nothing_written() {
    let dir = TempDir::new("cli-processes-bad");
    let (a, c) = (dir.file("a.ring"), dir.file("c.ring"));
    let pids = hammers(&[(&a, "mono"), (&c, "counter")]);
    let not_ring = dir.file("notes.txt");
    std::fs::write(&not_ring, "not a ring file\n").unwrap();
    let missing = dir.file("missing.ring");
    let out = dir.file("out.txt");
    let twice = format!("{}/./{}", dir.0.display(), "a.ring");
    let cases: [(&[&str], &[String]); 4] = [
        (&[&a, &missing], std::slice::from_ref(&missing)),
        (&[&a, &twice], &["given twice".to_string(), a.clone()]),
        (&[&a, &not_ring], std::slice::from_ref(&not_ring)),
        (
            &[&a, &c],
            &[
                format!("process {}", pids[0]),
                format!("process {}", pids[1]),
                "`counter`".into(),
                "--align-wall-clock".into(),
            ],
        ),
    ];
    for (files, wants) in cases {
        for command in ["dump", "export"] {
            let mut args = vec![command];
            args.extend(files);
            if command == "export" {
                args.extend(["-o", &out]);
            }
            let run = ringtrace(&args);
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
            for want in wants {
                assert!(
                    stderr.contains(want.as_str()),
                    "{want} in {args:?}: {stderr}"
                );
            }
            assert!(run.stdout.is_empty(), "{args:?}");
            assert!(!std::path::Path::new(&out).exists(), "{args:?}");
        }
    }

    // Asked to, the wall-clock anchors align them, and the output says so.
    let run = ringtrace(&["export", &a, &c, "--align-wall-clock", "-o", &out]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: processes aligned by their wall-clock anchors"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("# processes aligned by their wall-clock anchors"),
        "{text}"
    );
    let dump = stdout(&ringtrace(&["dump", &a, &c, "--align-wall-clock"]));
    assert!(dump.contains("clock `wall-clock`"), "{dump}");
}
