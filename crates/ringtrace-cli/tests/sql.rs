//! docs/analysis.md's SQL against `ringtrace stats`: two simulated hosts
//! (each an application with `tracing` spans nested and across threads,
//! events and preemptirq sections of several lengths, beside a process
//! whose small overwrite ring loses events) are exported with `ringtrace
//! export --format parquet --host NAME` and summed up with `ringtrace
//! stats --json`; scripts/check_sql.py then runs every query of the page
//! in DuckDB and in ClickHouse (chDB) over both hosts' tables at once and
//! checks each host's rows equal its `stats`. Skipped, saying so, without
//! the `parquet` feature or without python3, duckdb and chdb (failed
//! instead under RINGTRACE_REQUIRE_TOOLS). And `stats`' bad input: one
//! line naming what is valid.

mod common;

use common::TempDir;
use ringtrace::tracepoint::{local_irq_disable, local_irq_enable, preempt_disable, preempt_enable};
use ringtrace::{Mode, Tracer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;

const ROLE: &str = "RINGTRACE_TEST_SQL_ROLE";
const RING: &str = "RINGTRACE_TEST_SQL_RING";

/// A traced process of a simulated host: does nothing unless started in
/// its role.
#[test]
fn traced_process() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let ring = PathBuf::from(std::env::var_os(RING).expect("the ring's path"));
    match role.as_str() {
        "app-a" => app(&ring, 40, &[3, 12, 40, 150]),
        "app-b" => app(&ring, 25, &[2, 25, 80]),
        "lossy" => lossy(&ring),
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

fn spin(micros: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(micros) {
        std::hint::spin_loop();
    }
}

/// Requests (a `request` span over a `db` span and now and then a
/// `cache` span, events inside), a task created here and polled on two
/// other threads, irqs-off and preempt-off sections of `sections_us`
/// µs, and left open at the end: a span and an irqs-off section.
fn app(ring: &Path, requests: u64, sections_us: &[u64]) {
    let tracer = Tracer::builder()
        .file(ring)
        .clock("mono")
        .cpus(2)
        .buffer_size(1 << 20)
        .build()
        .unwrap();
    tracer.install().unwrap();
    ringtrace::tracepoint::preemptirq::set_tracepoints(true).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(tracer.layer()));
    tracing::dispatcher::with_default(&dispatch, || {
        tracing::info!(requests, "started");
        for i in 0..requests {
            let _request = tracing::info_span!("request", i).entered();
            spin(5 + i % 7 * 3);
            tracing::debug_span!("db", table = "orders").in_scope(|| {
                spin(2 + i % 5);
                tracing::info!(rows = i, "queried");
            });
            if i % 3 == 0 {
                tracing::debug_span!("cache").in_scope(|| spin(1));
            }
        }
        let task = tracing::info_span!("task");
        for poll in 0..2u64 {
            let (task, dispatch) = (task.clone(), dispatch.clone());
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    task.in_scope(|| {
                        spin(20);
                        tracing::info!(poll, "polled");
                    })
                })
            })
            .join()
            .unwrap();
        }
        drop(task);
        for &us in sections_us {
            local_irq_disable!();
            spin(us);
            local_irq_enable!();
            preempt_disable!();
            spin(us / 2);
            preempt_enable!();
        }
        std::mem::forget(tracing::info_span!("forever"));
        local_irq_disable!();
        spin(30);
        tracing::warn!("stopping with irqs off");
    });
    drop(tracer.finish());
}

/// 3000 events into one CPU buffer of four 4 KiB pages, overwritten
/// when full: most are lost.
fn lossy(ring: &Path) {
    let tracer = Tracer::builder()
        .file(ring)
        .clock("mono")
        .cpus(1)
        .page_size(4096)
        .buffer_size(4 * 4096)
        .mode(Mode::Overwrite)
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(tracer.layer()));
    tracing::dispatcher::with_default(&dispatch, || {
        for i in 0..3000u64 {
            tracing::info!(i, "tick");
        }
    });
    drop(tracer.finish());
}

/// Starts this test binary as process `role`, recording into `ring`.
fn record(role: &str, ring: &Path) -> std::process::Child {
    let mut c = ringtrace_testkit::self_command();
    c.args([
        "--exact",
        "traced_process",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .env(RING, ring)
    .stdout(std::process::Stdio::null());
    c.spawn().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether python3 imports duckdb and chdb; if not, says the check is
/// skipped, or fails under RINGTRACE_REQUIRE_TOOLS.
fn have_engines() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import duckdb, chdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
            "python3 with duckdb and chdb is needed (python3 -m pip install duckdb chdb) and RINGTRACE_REQUIRE_TOOLS is set"
        );
        eprintln!("skipped: python3 with duckdb and chdb is not installed (python3 -m pip install duckdb chdb)");
    }
    found
}

/// The list `key` of a `stats --json` object.
fn list<'v>(stats: &'v Value, key: &str) -> &'v [Value] {
    stats[key].as_array().map_or(&[], Vec::as_slice)
}

#[test]
fn the_docs_sql_gives_each_host_the_figures_of_ringtrace_stats() {
    if !cfg!(feature = "parquet") {
        eprintln!("skipped: ringtrace-cli built without the `parquet` feature (cargo test -p ringtrace-cli --features parquet --test sql)");
        return;
    }
    if !have_engines() {
        return;
    }
    let dir = TempDir::new("sql");
    let hosts = [("alpha", "app-a", false), ("beta", "app-b", true)];
    let mut children = Vec::new();
    for (host, app, _) in hosts {
        for role in [app, "lossy"] {
            let ring = dir.0.join(format!("{host}-{role}.ring"));
            children.push((role, record(role, &ring)));
        }
    }
    for (role, mut child) in children {
        assert!(child.wait().unwrap().success(), "the {role} process failed");
    }
    let mut args: Vec<PathBuf> = Vec::new();
    let mut stats_files = Vec::new();
    for (host, app, wall) in hosts {
        let rings: Vec<String> = [app, "lossy"]
            .iter()
            .map(|role| {
                dir.0
                    .join(format!("{host}-{role}.ring"))
                    .display()
                    .to_string()
            })
            .collect();
        let rings: Vec<&str> = rings.iter().map(String::as_str).collect();
        let wall: &[&str] = if wall { &["--align-wall-clock"] } else { &[] };
        let out_dir = dir.0.join(host);
        let out_arg = out_dir.display().to_string();
        let export = [
            &[
                "export", "--format", "parquet", "--host", host, "-o", &out_arg,
            ],
            wall,
            &rings,
        ]
        .concat();
        let out = common::ringtrace(&export);
        assert!(out.status.success(), "{host}: {}", text(&out.stderr));
        let out = common::ringtrace(&[&["stats", "--json"], wall, &rings].concat());
        assert!(out.status.success(), "{host}: {}", text(&out.stderr));
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        // Every question has an answer, or the check below proves little.
        for key in [
            "slowest_spans",
            "span_time_per_thread",
            "losses_per_cpu_second",
            "long_sections",
        ] {
            assert!(!list(&stats, key).is_empty(), "{host}: no {key}: {stats}");
        }
        let spans = list(&stats, "slowest_spans");
        let named = |name: &str| {
            spans
                .iter()
                .find(|s| s["name"] == name)
                .unwrap_or_else(|| panic!("{host}: no {name} spans"))
        };
        assert_eq!(named("forever")["unclosed"], 1, "{host}");
        assert_eq!(named("task")["spans"], 1, "{host}");
        let sections = list(&stats, "long_sections");
        assert!(
            sections.iter().any(|s| s["closed"] == false),
            "{host}: the section left open: {sections:?}"
        );
        assert!(
            sections.iter().any(|s| s["section"] == "preempt off"),
            "{host}: {sections:?}"
        );
        let lost: u64 = list(&stats, "losses_per_cpu_second")
            .iter()
            .filter_map(|l| l["lost"].as_u64())
            .sum();
        assert!(lost > 1000, "{host}: the small ring lost {lost} events");
        let stats_file = dir.0.join(format!("{host}.json"));
        std::fs::write(&stats_file, &out.stdout).unwrap();
        args.push(out_dir);
        stats_files.push(stats_file);
    }
    args.extend(stats_files);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_sql.py");
    let out = Command::new("python3")
        .arg(script)
        .args(&args)
        .output()
        .unwrap();
    println!("{}", text(&out.stdout));
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("8 queries agree"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn bad_stats_input_is_one_line_naming_what_is_valid() {
    let dir = TempDir::new("sql-bad");
    let missing = dir.0.join("missing.ring").display().to_string();
    let out = common::ringtrace(&["stats", &missing]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("missing.ring does not exist: give ring files or `ringtrace record` session directories"), "{said}");

    let out = common::ringtrace(&["stats", "--section-threshold", "10 ms", &missing]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains("--section-threshold: bad duration `10 ms`"),
        "{said}"
    );
    assert!(
        said.contains("valid: a number and a unit, ns, us, ms or s"),
        "{said}"
    );
}
