//! Ticks-to-ns conversion against CLOCK_MONOTONIC, and the sources that must
//! (or must not) exist on this architecture.

use ringtrace_clock::{Clock, ClockError, ClockSpec, Mono, Protection, SourceName};
use std::time::Duration;

/// Allowed disagreement with CLOCK_MONOTONIC over the measured interval:
/// 0.5% (NTP slews CLOCK_MONOTONIC by at most 0.05%) plus 300 µs for a
/// preemption between the paired reads on a loaded 2-core machine or qemu.
const RELATIVE_TOLERANCE: f64 = 0.005;
const ABSOLUTE_TOLERANCE_NS: f64 = 300_000.0;

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the clocks: system calls and counter instructions"
)]
fn ticks_to_ns_agrees_with_clock_monotonic_for_every_timed_source() {
    let mono = Mono::new();
    let mut checked = Vec::new();
    for source in SourceName::ALL {
        let spec = ClockSpec {
            source,
            global: false,
            protection: Protection::Raw,
        };
        let Ok(clock) = spec.build() else { continue };
        let Some(conversion) = clock.info().conversion else {
            continue; // counter: ticks are not time
        };
        // Warm up first: a first read may set up per-thread state (`sched`)
        // and, under qemu, translate the read's code, both slow once.
        let _ = (mono.read(), clock.read());
        let (m0, c0) = (mono.read(), clock.read());
        std::thread::sleep(Duration::from_millis(50));
        let (c1, m1) = (clock.read(), mono.read());
        let want = (m1 - m0) as f64;
        let got = conversion.ticks_to_ns(c1 - c0) as f64;
        let allowed = want * RELATIVE_TOLERANCE + ABSOLUTE_TOLERANCE_NS;
        assert!(
            (got - want).abs() <= allowed,
            "{spec}: {got} ns by its conversion, {want} ns by CLOCK_MONOTONIC (allowed ±{allowed})"
        );
        checked.push(spec.to_string());
    }
    assert!(
        checked.len() >= 4,
        "too few timed sources checked: {checked:?}"
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the clocks: system calls and counter instructions"
)]
fn the_architecture_counter_exists_and_the_foreign_one_is_a_clear_error() {
    let build = |s: SourceName| s.build().map(|_| ());
    let foreign_says = |e: ClockError, arch: &str| {
        let msg = e.to_string();
        assert!(
            msg.contains(arch) && msg.contains(std::env::consts::ARCH),
            "{msg}"
        );
    };
    if cfg!(target_arch = "aarch64") {
        let clock = SourceName::Cntvct
            .build()
            .expect("cntvct must work on aarch64");
        let info = clock.info();
        assert!(info.frequency_hz.unwrap() > 0);
        let (a, b) = (clock.read(), clock.read());
        assert!(b >= a && a > 0, "CNTVCT_EL0 is not counting: {a} then {b}");
        foreign_says(build(SourceName::Tsc).unwrap_err(), "x86_64");
    } else if cfg!(target_arch = "x86_64") {
        foreign_says(build(SourceName::Cntvct).unwrap_err(), "aarch64");
    }
}

#[cfg(target_arch = "aarch64")]
#[test]
#[cfg_attr(
    miri,
    ignore = "reads the clocks: system calls and counter instructions"
)]
fn cntvct_is_what_local_reads_on_aarch64() {
    let local = ringtrace_clock::Local::new().unwrap();
    assert_eq!(local.backing(), "cntvct");
}
