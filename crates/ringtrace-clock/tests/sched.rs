//! The `sched` sources under updates: the checker agrees with planted
//! truth reading by reading, the amplified read tears under a fast update,
//! and nothing tears with irqs masked or behind the latch. Counts, not
//! timings: every reading is checked against the exact reference.

use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, ThreadTimer};
use ringtrace_clock::sched::{self, Plant, PlantedRead, Verdict};
use ringtrace_clock::{Clock, ClockSpec, Protected, Protection, Source};
use std::time::{Duration, Instant};

fn on_update(_signal: i32) {
    sched::update();
}

/// The update's period: 50 µs natively (20 kHz, amplified). Under
/// qemu-user (the aarch64 run) a signal's delivery costs more than that,
/// and a masked read two system calls more, so a fast update can keep the
/// thread in signal delivery with no read ever completing: 1 ms there
/// still lands hundreds of updates a run.
const PERIOD: Duration = if cfg!(target_arch = "x86_64") {
    Duration::from_micros(50)
} else {
    Duration::from_millis(1)
};

/// Runs `f` on this thread while a POSIX timer updates its sched data
/// every [`PERIOD`] through `signal`.
fn under_updates<R>(signal: i32, f: impl FnOnce() -> R) -> R {
    interrupt::install_irq_handler(signal, on_update).unwrap();
    let timer = ThreadTimer::start(current_thread_id(), signal, PERIOD).unwrap();
    let r = f();
    drop(timer);
    interrupt::uninstall_irq_handler(signal).unwrap();
    r
}

#[test]
#[cfg_attr(miri, ignore = "reads the cycle counter (inline assembly)")]
fn a_consistent_reading_is_right_and_a_mixed_one_is_ahead() {
    let clock = "sched".parse::<ClockSpec>().unwrap().build().unwrap();
    let first = sched::updates();
    let value = clock.read();
    let reading = sched::last_reading();
    assert_eq!(reading.value, value);
    sched::update();
    let check = |v| sched::check_since(first, reading.cycles, v).unwrap();
    assert!(
        check(value).is_right(),
        "right before an update stays right"
    );
    assert!(matches!(check(value + 1_000_000), Verdict::Ahead(_)));
    assert!(matches!(
        check(value.saturating_sub(1_000_000)),
        Verdict::Behind(_)
    ));
}

#[test]
fn the_faithful_read_loads_its_data_back_to_back_and_the_wide_one_does_not() {
    let faithful = sched::window(&sched::SCHED_READ).unwrap();
    assert_eq!(
        faithful.between_data_loads, 0,
        "2009's __cycles_2_ns loads the offset and the scale back to back"
    );
    assert_eq!(faithful.from_counter_to_last_load, 5);
    let wide = sched::window(&sched::SCHED_WIDE_READ).unwrap();
    assert!(wide.between_data_loads > faithful.between_data_loads);
}

/// Every protection over a planted read: reads `n` times with the update
/// raised at `plant` on every third read, and checks that the checker's
/// verdict on each reading is what the read knows happened.
fn checker_agrees_with_planted_truth(plant: Plant, latched: bool) -> Vec<(Protection, u64)> {
    // One planted run at a time: they share the signal and its handler.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let signal = libc::SIGRTMIN() + 13;
    interrupt::install_irq_handler(signal, on_update).unwrap();
    let mut torn_per_protection = Vec::new();
    for protection in Protection::ALL {
        let planted = std::sync::Arc::new(PlantedRead::new(signal, plant, 3, latched).unwrap());
        let clock = Protected::new(Source::custom(ArcClock(planted.clone())), protection);
        for n in 0..300 {
            let first = sched::updates();
            let value = clock.read();
            let reading = sched::last_reading();
            assert_eq!(reading.value, value);
            let verdict = sched::check_since(first, reading.cycles, value).unwrap();
            assert_eq!(
                verdict.is_right(),
                !planted.last_was_torn(),
                "{protection}, {plant:?}, latched {latched}, read {n}: checker said {verdict:?}"
            );
        }
        torn_per_protection.push((protection, planted.torn()));
    }
    interrupt::uninstall_irq_handler(signal).unwrap();
    torn_per_protection
}

/// A shared planted read as a `Clock` the protections can wrap.
#[derive(Debug)]
struct ArcClock(std::sync::Arc<PlantedRead>);

impl Clock for ArcClock {
    fn read(&self) -> u64 {
        self.0.read()
    }
    fn info(&self) -> ringtrace_clock::ClockInfo {
        self.0.info()
    }
}

#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "qemu-user may deliver a signal raised to the own thread after the next load"
)]
#[cfg_attr(miri, ignore = "signals")]
fn a_planted_tear_is_caught_unless_irqs_are_masked() {
    for (protection, torn) in checker_agrees_with_planted_truth(Plant::BetweenLoads, false) {
        let masked = !matches!(protection, Protection::Raw | Protection::Preempt);
        assert_eq!(
            torn == 0,
            masked,
            "{protection}: {torn} torn readings (every third of 300 planted)"
        );
        if !masked {
            assert_eq!(torn, 100, "{protection}: every planted read tears");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "signals")]
fn an_update_before_the_read_or_behind_the_latch_never_tears() {
    for (plant, latched) in [
        (Plant::BeforeRead, false),
        (Plant::BetweenLoads, true),
        (Plant::BeforeRead, true),
    ] {
        for (protection, torn) in checker_agrees_with_planted_truth(plant, latched) {
            assert_eq!(torn, 0, "{protection}, {plant:?}, latched {latched}");
        }
    }
}

#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "qemu-user delivers signals only between translated blocks, never mid-read"
)]
#[cfg_attr(miri, ignore = "signals and timers")]
fn the_amplified_read_tears_under_a_fast_update() {
    let clock = "sched-wide".parse::<ClockSpec>().unwrap().build().unwrap();
    let found = under_updates(libc::SIGRTMIN() + 14, || {
        let until = Instant::now() + Duration::from_secs(20);
        let mut found = sched::measure_wrong(&clock, Duration::from_millis(200));
        while found.wrong() == 0 && Instant::now() < until {
            let more = sched::measure_wrong(&clock, Duration::from_millis(200));
            found.reads += more.reads;
            found.ahead += more.ahead;
            found.behind += more.behind;
            found.updates += more.updates;
        }
        found
    });
    assert!(found.updates > 0, "no update landed: {found:?}");
    assert!(found.wrong() > 0, "no torn reading in {found:?}");
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn sched_never_tears_with_irqs_masked_or_behind_the_latch() {
    for (n, name) in [
        "sched@irq-soft",
        "sched@irq",
        "sched@irq-hard",
        "sched-wide@irq",
        "sched-latch",
        "sched-latch@preempt",
    ]
    .into_iter()
    .enumerate()
    {
        let clock = name.parse::<ClockSpec>().unwrap().build().unwrap();
        let found = under_updates(libc::SIGRTMIN() + 15, || {
            sched::measure_wrong(&clock, Duration::from_millis(200))
        });
        assert!(found.updates > 0, "{name}: no update landed: {found:?}");
        assert_eq!(found.wrong(), 0, "{name} (run {n}) tore: {found:?}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "reads the cycle counter (inline assembly)")]
fn a_handler_that_reads_leaves_the_interrupted_reference_alone() {
    let clock = "sched".parse::<ClockSpec>().unwrap().build().unwrap();
    let mine = clock.read();
    let before = sched::last_reading();
    {
        let _saved = sched::SavedReading::save();
        std::thread::sleep(Duration::from_micros(10));
        assert_ne!(clock.read(), mine, "the handler's own reading");
    }
    assert_eq!(sched::last_reading(), before);
}
