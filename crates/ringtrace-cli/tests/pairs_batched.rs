//! `ringtrace pairs`: the batched method resolves every median, the single
//! method runs, `--method` names its values, and the JSON carries K and the
//! timer step. Short runs on one CPU; no assertion about which strategy is
//! faster (timings are measured, not tested).

use ringtrace::clock::emulation::IrqBackend;
use ringtrace_cli::pairs::{self, Method, PairsConfig};
use serde_json::Value;
mod common;

use common::ringtrace;

const PAIRS: [&str; 3] = ["irq", "irq_save", "preempt"];
const STRATEGIES: [&str; 3] = ["baseline", "call-always", "early-key"];

fn json(args: &[&str]) -> Value {
    let out = ringtrace(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("pairs --json prints JSON")
}

#[test]
fn batched_medians_are_resolved_nonzero_numbers_for_every_strategy() {
    let v = json(&["pairs", "--samples", "300", "--cpus", "1", "--json"]);
    assert_eq!(v["method"], "batched", "{v}");
    for pair in PAIRS {
        for strategy in STRATEGIES {
            let m = &v[pair][strategy];
            let median = m["median"]
                .as_f64()
                .unwrap_or_else(|| panic!("{pair}/{strategy}: median not a number: {m}"));
            let resolution = m["resolution_ns"].as_f64().unwrap();
            assert!(median > 0.0 && median.is_finite(), "{pair}/{strategy}: {m}");
            assert!(resolution > 0.0, "{pair}/{strategy}: {m}");
            assert!(median >= resolution, "{pair}/{strategy}: {m}");
            assert_eq!(
                m["median_below_resolution"], false,
                "{pair}/{strategy}: {m}"
            );
            assert_eq!(m["samples"], 300, "{pair}/{strategy}: {m}");
            let trimmed = m["trimmed_mean"].as_f64().unwrap();
            assert!(trimmed > 0.0 && trimmed.is_finite(), "{m}");
            assert!(m["outliers"].as_u64().unwrap() <= 300, "{m}");
        }
    }
}

#[test]
fn batched_text_prints_k_the_timer_step_and_a_number_for_every_median() {
    let out = ringtrace(&["pairs", "--samples", "300", "--cpus", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("K = ").count(), 3, "{text}");
    assert!(
        text.contains("timer local") && text.contains("step"),
        "{text}"
    );
    assert!(text.contains("Verdict"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| STRATEGIES.iter().any(|s| l.starts_with(s)))
        .collect();
    assert_eq!(rows.len(), 9, "{text}");
    for row in rows {
        // name, average, max_avg, median, ...
        let median = row.split_whitespace().nth(3).unwrap();
        let median: f64 = median
            .parse()
            .unwrap_or_else(|_| panic!("median `{median}` is not a number: {row}"));
        assert!(median > 0.0, "{row}");
    }
}

#[test]
fn json_carries_k_the_timer_step_the_keys_the_deltas_and_the_verdict() {
    let v = json(&["pairs", "--samples", "200", "--cpus", "1", "--json"]);
    let step = v["timer_step_ns"].as_f64().expect("timer_step_ns");
    assert!(step > 0.0 && step.is_finite(), "{step}");
    assert!(v["timer_overhead_ns"].as_f64().unwrap() > 0.0);
    for pair in PAIRS {
        let k = v["batch"][pair]
            .as_u64()
            .unwrap_or_else(|| panic!("no K for {pair}: {}", v["batch"]));
        assert!((1..=pairs::MAX_BATCH as u64).contains(&k), "K = {k}");
        assert!(v["batch_span_steps"][pair].as_f64().unwrap() > 0.0);
        // Resolution is two steps per pair: 2 * step / K.
        let resolution = v[pair]["baseline"]["resolution_ns"].as_f64().unwrap();
        assert!(
            (resolution - 2.0 * step / k as f64).abs() <= 1e-9 * resolution,
            "{pair}: {resolution} vs step {step}, K {k}"
        );
        for strategy in ["call-always", "early-key"] {
            let d = &v["deltas"][pair][strategy];
            assert!(d["average_ns"].is_f64(), "{d}");
            assert!(d["trimmed_mean_ns"].is_f64(), "{d}");
        }
        let p = &v["verdict"]["pairs"][pair];
        assert!(p["early_over_baseline"].is_f64(), "{p}");
        assert!(p["call_minus_early_ns"].is_f64(), "{p}");
    }
    assert_eq!(v["deltas"]["irq"]["call-always"]["kernel_average_ns"], 18.0);
    assert_eq!(
        v["deltas"]["preempt"]["early-key"]["kernel_average_ns"],
        1.0
    );
    assert!(v["deltas"]["irq_save"]["early-key"]["kernel_average_ns"].is_null());
    assert!(v["verdict"]["call_always_clearly_above_early_key"].is_boolean());
    assert!(v["verdict"]["early_key_within_5pct_of_baseline"].is_boolean());
    let keys = v["keys"].as_str().unwrap();
    assert!(keys == "patched" || keys == "atomic", "{keys}");
    if cfg!(feature = "static-keys") {
        assert_eq!(keys, "patched");
    }
}

#[test]
fn single_method_times_one_pair_per_sample_on_the_ns_clock() {
    let v = json(&[
        "pairs",
        "--method",
        "single",
        "--samples",
        "300",
        "--cpus",
        "1",
        "--json",
    ]);
    assert_eq!(v["method"], "single");
    assert_eq!(v["timer"], "mono");
    assert!(v["percentile_from"].as_str().unwrap().contains("CPU 0"));
    assert_eq!(v["verdict"]["method"], "single");
    for pair in PAIRS {
        assert_eq!(v["batch"][pair], 1, "{}", v["batch"]);
        for strategy in STRATEGIES {
            let m = &v[pair][strategy];
            // A value is a number, or null and flagged below resolution.
            for metric in ["median", "percentile"] {
                let flag = &m[format!("{metric}_below_resolution")];
                assert_eq!(m[metric].is_null(), flag == true, "{pair}/{strategy}: {m}");
                assert!(
                    m[metric].is_null() || m[metric].as_f64().unwrap() > 0.0,
                    "{m}"
                );
            }
            assert!(m["average"].as_f64().unwrap() > 0.0, "{m}");
        }
    }
    let out = ringtrace(&[
        "pairs",
        "--method",
        "single",
        "--samples",
        "200",
        "--cpus",
        "1",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("single method"), "{text}");
    assert_eq!(text.matches("Combined Metric").count(), 3, "{text}");
}

#[test]
fn an_unknown_method_is_refused_naming_the_valid_ones() {
    for bad in ["fast", "", "Batched"] {
        let out = ringtrace(&["pairs", "--method", bad, "--samples", "10"]);
        assert_eq!(out.status.code(), Some(2), "--method {bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--method") && err.contains("batched") && err.contains("single"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
    let err = "fast".parse::<Method>().unwrap_err().to_string();
    assert!(
        err.contains("`fast`") && err.contains("batched, single"),
        "{err}"
    );
}

#[test]
fn markdown_has_the_tables_k_the_deltas_the_verdict_and_a_legend() {
    let config = PairsConfig {
        cpus: 1,
        samples: 200,
        highest: 10,
        percentile: 99,
        irq: IrqBackend::Soft,
    };
    let result = pairs::run(&config, &|| {}).unwrap();
    assert_eq!(result.method, Method::Batched);
    let md = result.markdown();
    assert!(md.starts_with("## "), "{md}");
    assert!(md.contains("check their static key early"), "{md}");
    assert_eq!(md.matches("| Combined Metric |").count(), 3, "{md}");
    assert_eq!(md.matches("K = ").count(), 3, "{md}");
    for needed in [
        "step",
        "trimmed mean",
        "outliers",
        "kernel average",
        "| irq | call-always | ",
        "| preempt | early-key | ",
        "### Verdict",
        "Legend",
        "**max_avg**",
    ] {
        assert!(md.contains(needed), "no `{needed}` in:\n{md}");
    }
    // Every row of our tables has a number or a below-resolution bound.
    for row in md.lines().filter(|l| {
        STRATEGIES
            .iter()
            .any(|s| l.starts_with(&format!("| {s} |")))
    }) {
        let median = row.split('|').nth(4).unwrap().trim();
        assert!(
            median.parse::<f64>().is_ok() || median.starts_with('<'),
            "{row}"
        );
    }
    // The progress callback is called as documented.
    let calls = std::sync::atomic::AtomicU64::new(0);
    let config = PairsConfig {
        samples: 50,
        ..config
    };
    pairs::run_method(&config, Method::Single, &|| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(calls.into_inner(), pairs::progress_steps(1, Method::Single));
}

#[test]
fn json_carries_the_code_size_table_and_the_preemptirq_finding() {
    let v = json(&[
        "pairs",
        "--method",
        "single",
        "--samples",
        "300",
        "--cpus",
        "1",
        "--json",
    ]);
    let code = &v["code_size"];
    assert!(code["error"].is_null(), "{code}");
    for pair in PAIRS {
        let call = code["pairs"][pair]["call-always"]["instructions"]
            .as_u64()
            .unwrap();
        let early = code["pairs"][pair]["early-key"]["instructions"]
            .as_u64()
            .unwrap();
        assert!(early < call, "{pair}: {code}");
        for strategy in STRATEGIES {
            assert!(
                code["pairs"][pair][strategy]["call_site_bytes"]
                    .as_u64()
                    .unwrap()
                    > 0,
                "{pair}/{strategy}: {code}"
            );
        }
    }
    let f = &v["finding"];
    assert!(f["rule"].as_str().unwrap().contains("trimmed means"), "{f}");
    // Any of the four outcomes: 300 samples decide nothing about timing.
    assert!(f["verdict"]["verdict"].is_string(), "{f}");
    // A batched run has the table and no preemptirq finding.
    let v = json(&["pairs", "--samples", "200", "--cpus", "1", "--json"]);
    assert!(
        v["code_size"]["pairs"]["irq"].is_object(),
        "{}",
        v["code_size"]
    );
    assert!(v["finding"].is_null());
}
