//! `ringtrace export --format otlp` and `ringtrace record --endpoint`
//! against a real OTLP/HTTP receiver: a service (this test binary,
//! started again in a traced role) records `tracing` spans through
//! `Tracer::builder().from_env()`; the trees the `--keep` rules keep
//! arrive, whole, once; what is kept and dropped is printed; bad input
//! and a collector that is gone give one clear line and a failure.

// The receiver's fixtures are for the transport's own tests.
#[allow(unused_imports)]
#[path = "../../ringtrace-otlp/tests/receiver/mod.rs"]
mod receiver;

use receiver::Receiver;
use ringtrace::Tracer;
use ringtrace_testkit::TempDir;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output};
use tracing_subscriber::layer::SubscriberExt;

const ROLE: &str = "RINGTRACE_TEST_OTLP_ROLE";
/// Requests the service handles; request 7 fails.
const REQUESTS: u64 = 30;

/// The traced service: does nothing unless started in its role.
#[test]
fn traced_service() {
    if std::env::var(ROLE).is_err() {
        return;
    }
    let tracer = Tracer::builder().from_env().build().unwrap();
    let subscriber = tracing_subscriber::registry().with(tracer.layer());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!("started");
        for i in 0..REQUESTS {
            let request = tracing::info_span!("request", i);
            let _r = request.enter();
            tracing::debug_span!("db").in_scope(|| tracing::info!(rows = i, "queried"));
            if i == 7 {
                tracing::error!("failed");
            }
        }
    });
    drop(tracer.finish());
    std::process::exit(0);
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ringtrace(args: &[&str], extra: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .args(extra)
        .output()
        .unwrap()
}

/// `ringtrace record -o DIR ARGS -- <the service>`.
fn record(dir: &Path, args: &[&str]) -> Output {
    let mut service = ringtrace_testkit::self_command();
    service.args([
        "--exact",
        "traced_service",
        "--nocapture",
        "--test-threads=1",
    ]);
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringtrace"));
    c.arg("record").arg("-o").arg(dir).args(args).arg("--");
    c.arg(service.get_program()).args(service.get_args());
    c.env(ROLE, "service");
    c.output().unwrap()
}

/// The `i` of each root span received.
fn roots(receiver: &Receiver) -> HashSet<i64> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    receiver
        .spans()
        .iter()
        .filter(|s| s.span.parent_span_id.is_empty())
        .filter_map(|s| {
            s.span
                .attributes
                .iter()
                .find(|kv| kv.key == "i")
                .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                    Value::IntValue(i) => Some(*i),
                    _ => None,
                })
        })
        .collect()
}

#[test]
fn a_recorded_session_exports_every_tree_and_the_keep_rules_choose_them() {
    let dir = TempDir::new("otlp-export");
    let session = dir.0.join("s");
    let out = record(&session, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let receiver = Receiver::start().unwrap();
    let url = receiver.url();
    let out = ringtrace(
        &[
            "export",
            "--format",
            "otlp",
            "--endpoint",
            &url,
            "--service-name",
            "svc",
        ],
        &[session.as_os_str()],
    );
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(receiver.spans().len(), 2 * REQUESTS as usize, "{said}");
    assert_eq!(roots(&receiver).len(), REQUESTS as usize);
    assert_eq!(receiver.logs().len(), 1, "the event outside spans");
    assert!(
        said.contains(&format!(
            "{} spans delivered to {url}/v1/traces and 1 log records to {url}/v1/logs",
            2 * REQUESTS
        )),
        "{said}"
    );

    let kept = Receiver::start().unwrap();
    let url = kept.url();
    let out = ringtrace(
        &[
            "export",
            "--format",
            "otlp",
            "--endpoint",
            &url,
            "--keep",
            "error",
            "--keep",
            "name:nothing",
        ],
        &[session.as_os_str()],
    );
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(roots(&kept), HashSet::from([7]));
    assert!(
        said.contains(&format!(
            "kept 1 trees (2 spans), dropped {} trees",
            REQUESTS - 1
        )) && said.contains("[error: 1, name:nothing: 0]"),
        "{said}"
    );
}

#[test]
fn record_sends_the_kept_trees_as_it_drains() {
    let dir = TempDir::new("otlp-record");
    let receiver = Receiver::start().unwrap();
    let url = receiver.url();
    let out = record(&dir.0.join("s"), &["--endpoint", &url, "--keep", "error"]);
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(roots(&receiver), HashSet::from([7]), "{said}");
    assert_eq!(receiver.spans().len(), 2);
    assert!(said.contains("tail sampling kept 1 trees"), "{said}");
    // Said once as the recorder's, with the URL the spans went to.
    assert!(
        !said.contains("ringtrace record: ringtrace export"),
        "{said}"
    );
    assert!(said.contains("/v1/traces"), "{said}");
    // The session holds everything, whatever was sent.
    let out = ringtrace(&["dump", "--json"], &[dir.0.join("s").as_os_str()]);
    let spans = text(&out.stdout).matches("tracing:span_new").count();
    assert_eq!(spans, 2 * REQUESTS as usize);
    // What was sent live has the times an export of the session sends.
    let again = Receiver::start().unwrap();
    let url = again.url();
    let out = ringtrace(
        &[
            "export",
            "--format",
            "otlp",
            "--keep",
            "error",
            "--endpoint",
            &url,
        ],
        &[dir.0.join("s").as_os_str()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let times = |r: &Receiver| {
        let mut t: Vec<(Vec<u8>, u64, u64)> = r
            .spans()
            .into_iter()
            .map(|s| {
                (
                    s.span.span_id,
                    s.span.start_time_unix_nano,
                    s.span.end_time_unix_nano,
                )
            })
            .collect();
        t.sort();
        t
    };
    assert_eq!(times(&receiver), times(&again));
}

#[test]
fn a_collector_that_is_gone_fails_the_export_with_the_counts() {
    let dir = TempDir::new("otlp-gone");
    let session = dir.0.join("s");
    assert!(record(&session, &[]).status.success());
    let mut receiver = Receiver::start().unwrap();
    let url = receiver.url();
    receiver.stop();
    let out = ringtrace(
        &[
            "export",
            "--format",
            "otlp",
            "--endpoint",
            &url,
            "--retries",
            "1",
            "--timeout",
            "1",
        ],
        &[session.as_os_str()],
    );
    let said = text(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains(&url), "{said}");
    assert!(
        said.contains(&format!(
            "{} spans and 1 log records not delivered",
            2 * REQUESTS
        )),
        "{said}"
    );
}

/// `export --format otlp --endpoint` a port nobody listens on, then `extra`.
fn otlp_to_nowhere<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "export",
        "--format",
        "otlp",
        "--endpoint",
        "http://127.0.0.1:9",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn bad_otlp_options_say_what_is_wrong_and_write_nothing() {
    let dir = TempDir::new("otlp-bad");
    let ring = dir.0.join("none.ring");
    let r = ring.as_os_str();
    for (args, says) in [
        (vec!["export", "--format", "otlp"], "needs --endpoint URL"),
        (otlp_to_nowhere(&["-o", "x"]), "leave out -o"),
        (
            vec![
                "export",
                "--format",
                "otlp",
                "--endpoint",
                "https://collector:4318",
            ],
            "TLS",
        ),
        (
            vec!["export", "--format", "otlp", "--endpoint", "collector:4318"],
            "http://host:port",
        ),
        (
            otlp_to_nowhere(&["--keep", "slow"]),
            "valid rules: error, slower",
        ),
        (otlp_to_nowhere(&["--header", "novalue"]), "NAME=VALUE"),
        (
            otlp_to_nowhere(&["--header", "bad name=x"]),
            "`bad name` is not an HTTP token",
        ),
        (
            otlp_to_nowhere(&["--header", "Content-Length=5"]),
            "sets it itself",
        ),
        (otlp_to_nowhere(&["--timeout", "0"]), "0.1 to 600"),
        (
            vec![
                "export", "--format", "chrome", "-o", "x.json", "--keep", "error",
            ],
            "only for --format otlp",
        ),
        (
            vec!["export", "--format", "text", "-o", "x.txt", "--host", "a"],
            "only for --format parquet and --format otlp",
        ),
    ] {
        let out = ringtrace(&args, &[r]);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(says), "{args:?}: {said}");
        assert_eq!(said.lines().count(), 1, "{args:?}: {said}");
    }
    let session = dir.0.join("s");
    let out = record(&session, &["--keep", "error"]);
    let said = text(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("give --endpoint URL too"), "{said}");
    assert!(!session.exists(), "nothing recorded");
}

#[test]
fn a_trace_of_tracepoints_only_says_otlp_sends_none_of_it() {
    let dir = TempDir::new("otlp-tracepoints");
    let ring = dir.0.join("h.ring");
    let made = ringtrace(
        &[
            "hammer",
            "--seconds",
            "0.1",
            "--disable-reader",
            "--buffer-size",
            "65536",
            "--file",
        ],
        &[ring.as_os_str()],
    );
    assert!(made.status.success(), "{}", text(&made.stderr));
    let receiver = Receiver::start().unwrap();
    let url = receiver.url();
    let out = ringtrace(
        &["export", "--format", "otlp", "--endpoint", &url],
        &[ring.as_os_str()],
    );
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("no `tracing` spans or events: OTLP carries only those"),
        "{said}"
    );
    assert!(receiver.spans().is_empty() && receiver.logs().is_empty());
}
