//! `ringtrace hammer`'s CPU-time figures, its two consumers, and its
//! oversubscription warning, on short runs of the built binary. No timing
//! is asserted: only that the figures exist, the consumers read, the
//! accounting adds up and the messages say what they should.

use serde_json::Value;
mod common;

use common::ringtrace;

/// A short hammer at nice 0 (so that other work on the machine does not
/// starve it), printing JSON, with `extra` arguments.
fn hammer_json(extra: &[&str]) -> Value {
    let mut args = common::short_hammer("0.3");
    args.push("--json");
    args.extend_from_slice(extra);
    let out = ringtrace(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("hammer --json prints JSON")
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no unsigned `{key}` in {v}"))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number `{key}` in {v}"))
}

/// The identity the hammer checks: what the ring accounts for is what the
/// producers counted.
fn assert_adds_up(v: &Value) {
    assert!(u(v, "hit") > 0, "{v}");
    assert_eq!(u(v, "total"), u(v, "hit"), "{v}");
    assert_eq!(
        u(v, "entries") + u(v, "overruns") + u(v, "read"),
        u(v, "hit"),
        "{v}"
    );
}

#[test]
fn json_reports_each_producers_cpu_time_and_cpu_ns_per_entry() {
    let v = hammer_json(&["--producers", "1"]);
    assert!(u(&v, "producer_cpu_ns") > 0, "{v}");
    assert!(f(&v, "ns_per_entry_cpu") > 0.0, "{v}");
    assert!(f(&v, "ns_per_entry") > 0.0, "{v}");
    let share = f(&v, "producer_cpu_share");
    assert!(share > 0.0 && share.is_finite(), "{v}");
    let each = v["per_producer"].as_array().expect("per_producer list");
    assert_eq!(each.len(), 1, "{v}");
    assert_eq!(u(&each[0], "cpu_time_ns"), u(&v, "producer_cpu_ns"), "{v}");
    assert_eq!(u(&each[0], "hit"), u(&v, "hit"), "{v}");
    assert!(f(&each[0], "ns_per_entry_cpu") > 0.0, "{v}");
    assert!(u(&each[0], "wall_ns") > 0, "{v}");
    assert_adds_up(&v);
}

#[test]
fn sleeping_consumer_is_the_default_is_woken_and_reads() {
    let v = hammer_json(&[]);
    assert_eq!(v["consumer"], "sleep", "{v}");
    assert_eq!(v["wakeup_interval"], 100, "{v}");
    assert!(u(&v, "read") > 0, "{v}");
    assert!(u(&v, "wakeups") > 0, "{v}");
    assert!(v.get("consumer_cpu_ns").is_some(), "{v}");
    assert_adds_up(&v);

    // A wake-up after every batch, reading by events: still all accounted.
    let v = hammer_json(&[
        "--consumer",
        "sleep",
        "--wakeup-interval",
        "1",
        "--read",
        "events",
    ]);
    assert_eq!(v["wakeup_interval"], 1, "{v}");
    assert!(u(&v, "read") > 0, "{v}");
    assert_adds_up(&v);
}

#[test]
fn spinning_consumer_reads_and_the_accounting_holds() {
    let v = hammer_json(&["--consumer", "spin"]);
    assert_eq!(v["consumer"], "spin", "{v}");
    assert!(v["wakeup_interval"].is_null(), "{v}");
    assert_eq!(u(&v, "wakeups"), 0, "{v}");
    assert!(u(&v, "read") > 0, "{v}");
    assert!(u(&v, "producer_cpu_ns") > 0, "{v}");
    assert_adds_up(&v);
}

#[test]
fn text_output_has_the_cpu_time_and_consumer_lines() {
    let out = ringtrace(&common::short_hammer("0.2"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "ns per entry\n",
        "Producer CPU: ",
        "ns per entry of producer CPU time",
        "Consumer: sleep, woken every 100 batches",
    ] {
        assert!(text.contains(want), "`{want}` missing in:\n{text}");
    }
}

#[test]
fn bad_consumer_or_wakeup_interval_is_a_clear_error() {
    let out = ringtrace(&["hammer", "--seconds", "0.1", "--consumer", "nap"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nap") && err.contains("sleep") && err.contains("spin"),
        "{err}"
    );

    for (value, says) in [
        ("0", "0 is not in 1..=1000000"),
        ("1000001", "1000001 is not in 1..=1000000"),
        ("-1", "-1 is not in 1..=1000000"),
    ] {
        let out = ringtrace(&["hammer", "--seconds", "0.1", "--wakeup-interval", value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn more_producers_than_cpus_is_warned_of_with_the_numbers() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let producers = (cpus + 1).to_string();
    let v = hammer_json(&["--producers", &producers]);
    assert_eq!(v["oversubscribed"], true, "{v}");
    let available = u(&v, "cpus_available");
    assert!(available >= 1 && available as usize <= cpus, "{v}");
    let warning = v["warnings"][0].as_str().expect("a warning");
    let threads = cpus + 2;
    for want in [
        "oversubscribed".to_owned(),
        format!("{producers} producers + 1 consumer = {threads} threads"),
        format!("on {available} CPU"),
    ] {
        assert!(warning.contains(&want), "`{want}` missing in: {warning}");
    }
    assert_eq!(v["per_producer"].as_array().map(Vec::len), Some(cpus + 1));
    assert_adds_up(&v);

    // In the text output, a warning line.
    let out = ringtrace(&[
        "hammer",
        "--seconds",
        "0.1",
        "--producers",
        &producers,
        "--disable-reader",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "Warning: oversubscribed: {producers} producers on "
        )),
        "{text}"
    );

    // One producer and no consumer never oversubscribes.
    let v = hammer_json(&["--disable-reader"]);
    assert_eq!(v["oversubscribed"], false, "{v}");
    assert!(
        !v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("oversubscribed")),
        "{v}"
    );
}
