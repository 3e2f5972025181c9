//! The `sched` sources under a tick: the unlatched one tears when the tick
//! lands mid-read, and nothing tears with irqs masked or behind the latch.
//! Counts, not timings: every reading is checked against the exact
//! reference (`sched::check`).

use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, ThreadTimer};
use ringtrace_clock::sched::{self, Verdict};
use ringtrace_clock::{Clock, ClockSpec};
use std::time::{Duration, Instant};

fn on_tick(_signal: i32) {
    sched::tick();
}

/// The tick's period: 20 µs natively. Under qemu-user (the aarch64 run) a
/// signal's delivery costs more than that, and a masked read two system
/// calls more, so a 20 µs tick can keep the thread in signal delivery with
/// no read ever completing (a CI run spent 17 minutes of CPU there, most
/// of it in the kernel): 1 ms there still lands hundreds of ticks a run.
const TICK: Duration = if cfg!(target_arch = "x86_64") {
    Duration::from_micros(20)
} else {
    Duration::from_millis(1)
};

/// Runs `f` on this thread while a POSIX timer ticks its sched data every
/// [`TICK`] through `signal`.
fn under_ticks<R>(signal: i32, f: impl FnOnce() -> R) -> R {
    interrupt::install_irq_handler(signal, on_tick).unwrap();
    let timer = ThreadTimer::start(current_thread_id(), signal, TICK).unwrap();
    let r = f();
    drop(timer);
    interrupt::uninstall_irq_handler(signal).unwrap();
    r
}

#[test]
#[cfg_attr(miri, ignore = "reads the cycle counter (inline assembly)")]
fn a_consistent_reading_is_right_and_a_mixed_one_is_ahead() {
    let clock = "sched".parse::<ClockSpec>().unwrap().build().unwrap();
    let value = clock.read();
    let (cycles, read) = sched::last_read();
    assert_eq!(read, value);
    sched::tick();
    assert!(
        sched::check(cycles, value).is_right(),
        "right before a tick stays right"
    );
    assert!(matches!(
        sched::check(cycles, value + 1_000_000),
        Verdict::Ahead(_)
    ));
    assert!(matches!(
        sched::check(cycles, value.saturating_sub(1_000_000)),
        Verdict::Behind(_)
    ));
}

#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "qemu-user delivers signals only between translated blocks, never mid-read"
)]
#[cfg_attr(miri, ignore = "signals and timers")]
fn unlatched_sched_tears_when_a_tick_lands_mid_read() {
    let clock = "sched".parse::<ClockSpec>().unwrap().build().unwrap();
    let found = under_ticks(libc::SIGRTMIN() + 14, || {
        let until = Instant::now() + Duration::from_secs(5);
        let mut found = sched::measure_wrong(&clock, Duration::from_millis(100));
        while found.wrong() == 0 && Instant::now() < until {
            let more = sched::measure_wrong(&clock, Duration::from_millis(100));
            found.reads += more.reads;
            found.ahead += more.ahead;
            found.behind += more.behind;
            found.ticks += more.ticks;
        }
        found
    });
    assert!(found.ticks > 0, "no tick landed: {found:?}");
    assert!(found.wrong() > 0, "no torn reading in {found:?}");
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn sched_never_tears_with_irqs_masked_or_behind_the_latch() {
    for (n, name) in [
        "sched@irq-soft",
        "sched@irq",
        "sched@irq-hard",
        "sched-latch",
        "sched-latch@preempt",
    ]
    .into_iter()
    .enumerate()
    {
        let clock = name.parse::<ClockSpec>().unwrap().build().unwrap();
        let found = under_ticks(libc::SIGRTMIN() + 15, || {
            sched::measure_wrong(&clock, Duration::from_millis(200))
        });
        assert!(found.ticks > 0, "{name}: no tick landed: {found:?}");
        assert_eq!(found.wrong(), 0, "{name} (run {n}) tore: {found:?}");
    }
}
