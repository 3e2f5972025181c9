//! The irq emulation against real signals: soft masking defers and replays,
//! hard masking blocks, and neither lets an interrupt into a masked section.
//!
//! Signals are process-wide, so each test routes its own signal number.

use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer, ThreadTimer};
use ringtrace_clock::emulation::{hard_irq, interrupt, irqs_disabled, preempt, soft_irq};
use ringtrace_clock::Protection;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn soft_masking_defers_a_real_signal_and_delivers_it_at_restore() {
    static HITS: AtomicU64 = AtomicU64::new(0);
    let signal = libc::SIGUSR1;
    interrupt::install_irq_handler(signal, |_| {
        HITS.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();

    let flags = soft_irq::save();
    interrupt::raise_on_current_thread(signal).unwrap();
    interrupt::raise_on_current_thread(signal).unwrap(); // coalesces
    assert_eq!(HITS.load(Ordering::Relaxed), 0, "ran while soft-masked");
    assert_ne!(soft_irq::pending() & (1 << (signal - 1)), 0);

    // A nested save/restore inside the masked section must not replay.
    let inner = soft_irq::save();
    soft_irq::restore(inner);
    assert_eq!(
        HITS.load(Ordering::Relaxed),
        0,
        "replayed by an inner restore"
    );

    soft_irq::restore(flags);
    assert_eq!(HITS.load(Ordering::Relaxed), 1, "not replayed exactly once");
    assert_eq!(soft_irq::pending(), 0);

    // Unmasked, the signal runs on arrival.
    interrupt::raise_on_current_thread(signal).unwrap();
    assert_eq!(HITS.load(Ordering::Relaxed), 2);
    interrupt::uninstall_irq_handler(signal).unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn hard_masking_blocks_a_real_signal_until_restore() {
    static HITS: AtomicU64 = AtomicU64::new(0);
    let signal = libc::SIGUSR2;
    interrupt::install_irq_handler(signal, |_| {
        HITS.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();

    let flags = hard_irq::save();
    assert!(irqs_disabled());
    interrupt::raise_on_current_thread(signal).unwrap();
    assert_eq!(HITS.load(Ordering::Relaxed), 0, "ran while blocked");
    // The kernel holds it pending for this thread.
    let mut pending = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigpending fills the set it is given.
    let is_pending = unsafe {
        libc::sigpending(pending.as_mut_ptr());
        libc::sigismember(pending.as_ptr(), signal) == 1
    };
    assert!(is_pending, "the kernel does not hold the signal pending");

    hard_irq::restore(flags);
    assert!(!irqs_disabled());
    assert_eq!(HITS.load(Ordering::Relaxed), 1, "not delivered at restore");
    interrupt::uninstall_irq_handler(signal).unwrap();
}

thread_local! {
    /// Set by the test body while it is inside a protected section.
    static IN_SECTION: Cell<bool> = const { Cell::new(false) };
}

/// Runs protected sections for `run_for` while a timer interrupts this
/// thread on `signal`; returns (interrupts that landed inside a section,
/// interrupts handled in all).
fn interrupts_inside_sections(
    protection: Protection,
    signal: i32,
    run_for: Duration,
) -> (u64, u64) {
    static INSIDE: [AtomicU64; 65] = [const { AtomicU64::new(0) }; 65];
    static HANDLED: [AtomicU64; 65] = [const { AtomicU64::new(0) }; 65];
    fn handler(signal: i32) {
        if IN_SECTION.with(Cell::get) {
            INSIDE[signal as usize].fetch_add(1, Ordering::Relaxed);
        }
        HANDLED[signal as usize].fetch_add(1, Ordering::Relaxed);
    }
    interrupt::install_irq_handler(signal, handler).unwrap();
    let timer = IrqTimer::start(current_thread_id(), signal, Duration::from_micros(100)).unwrap();
    let start = Instant::now();
    while start.elapsed() < run_for {
        protection.run(|| {
            IN_SECTION.with(|s| s.set(true));
            // A section long enough that most interrupts land inside it.
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(20) {
                std::hint::spin_loop();
            }
            IN_SECTION.with(|s| s.set(false));
        });
    }
    timer.stop();
    interrupt::uninstall_irq_handler(signal).unwrap();
    (
        INSIDE[signal as usize].load(Ordering::Relaxed),
        HANDLED[signal as usize].load(Ordering::Relaxed),
    )
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn no_interrupt_lands_inside_a_soft_masked_section() {
    let (inside, handled) = interrupts_inside_sections(
        Protection::IrqSoft,
        libc::SIGRTMIN() + 1,
        Duration::from_millis(300),
    );
    assert!(handled > 0, "the timer never got through");
    assert_eq!(
        inside, 0,
        "{inside} of {handled} interrupts ran inside a soft-masked section"
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn no_interrupt_lands_inside_a_hard_masked_section() {
    let (inside, handled) = interrupts_inside_sections(
        Protection::IrqHard,
        libc::SIGRTMIN() + 2,
        Duration::from_millis(300),
    );
    assert!(handled > 0, "the timer never got through");
    assert_eq!(
        inside, 0,
        "{inside} of {handled} interrupts ran inside a hard-masked section"
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn interrupts_do_land_inside_unprotected_sections() {
    // The control for the two tests above: without masking, the same
    // harness sees interrupts inside the section, so it can fail.
    let (inside, handled) = interrupts_inside_sections(
        Protection::Raw,
        libc::SIGRTMIN() + 4,
        Duration::from_millis(300),
    );
    assert!(
        inside > 0,
        "none of {handled} interrupts landed inside an unmasked section"
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn timer_reschedule_inside_preempt_section_waits_for_outermost_enable() {
    static REQUESTS: AtomicU64 = AtomicU64::new(0);
    let signal = libc::SIGRTMIN() + 5;
    interrupt::install_irq_handler(signal, |_| {
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        preempt::request_resched();
    })
    .unwrap();
    let before = preempt::stats();
    let timer = IrqTimer::start(current_thread_id(), signal, Duration::from_micros(100)).unwrap();
    let start = Instant::now();
    // 200 ms, or on a loaded machine (whose timer thread may hardly run)
    // until a request was deferred and honoured, up to 5 s.
    let enough = || {
        let now = preempt::stats();
        now.deferred > before.deferred && now.honoured > before.honoured
    };
    while start.elapsed() < Duration::from_millis(200)
        || (!enough() && start.elapsed() < Duration::from_secs(5))
    {
        Protection::Preempt.run(|| {
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(20) {
                std::hint::spin_loop();
            }
            // Whatever the timer asked, we are still in the section.
            assert_eq!(preempt::preempt_count(), 1);
        });
        assert!(
            !preempt::need_resched(),
            "a deferred reschedule outlived the section"
        );
    }
    timer.stop();
    interrupt::uninstall_irq_handler(signal).unwrap();
    let after = preempt::stats();
    assert!(REQUESTS.load(Ordering::Relaxed) > 0);
    assert!(after.deferred > before.deferred, "no request was deferred");
    assert!(
        after.honoured > before.honoured,
        "no deferred request was honoured"
    );
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn timer_refuses_uncatchable_and_reserved_signals_and_dead_threads() {
    let me = current_thread_id();
    for signal in [0, libc::SIGKILL, libc::SIGSTOP, 32, 33, 65] {
        let err = IrqTimer::start(me, signal, Duration::from_millis(1))
            .err()
            .unwrap_or_else(|| panic!("signal {signal} was accepted"))
            .to_string();
        assert!(err.contains(&format!("signal {signal} ")), "{err}");
    }
    let err = IrqTimer::start(-5, libc::SIGRTMIN() + 9, Duration::from_millis(1))
        .err()
        .expect("a thread id of -5 was accepted")
        .to_string();
    assert!(err.contains("thread -5"), "{err}");
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn stopping_a_slow_timer_returns_at_once() {
    // The sender waits a whole period between signals; stop must not wait
    // for it. The signal is ignored by a routed no-op handler.
    let signal = libc::SIGRTMIN() + 9;
    interrupt::install_irq_handler(signal, |_| {}).unwrap();
    let timer = IrqTimer::start(current_thread_id(), signal, Duration::from_secs(3600)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let t = Instant::now();
    assert_eq!(timer.stop(), 1);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn senders_refuse_a_signal_without_a_handler_instead_of_killing_the_process() {
    // SIGRTMIN+11 is used by no other test: its disposition is the default
    // action, which terminates the process.
    let signal = libc::SIGRTMIN() + 11;
    let me = current_thread_id();
    let raised = interrupt::raise_on_current_thread(signal)
        .expect_err("an unhandled signal was raised")
        .to_string();
    assert!(
        raised.contains(&format!("signal {signal} has no handler")),
        "{raised}"
    );
    assert!(raised.contains("terminate"), "{raised}");
    let timer = IrqTimer::start(me, signal, Duration::from_millis(1))
        .err()
        .expect("IrqTimer started with an unhandled signal")
        .to_string();
    assert!(timer.contains("install_irq_handler"), "{timer}");
    let posix = ThreadTimer::start(me, signal, Duration::from_millis(1))
        .expect_err("ThreadTimer started with an unhandled signal")
        .to_string();
    assert!(posix.contains("no handler"), "{posix}");

    // Once routed, the same signal is accepted, and refused again after
    // the handler is given back.
    interrupt::install_irq_handler(signal, |_| {}).unwrap();
    interrupt::raise_on_current_thread(signal).unwrap();
    interrupt::uninstall_irq_handler(signal).unwrap();
    assert!(interrupt::raise_on_current_thread(signal).is_err());
}

#[test]
#[cfg_attr(miri, ignore = "signals and timers")]
fn an_ignored_signal_is_refused_as_it_would_never_interrupt() {
    let signal = libc::SIGRTMIN() + 12;
    // SAFETY: setting SIG_IGN for a real-time signal no other test uses.
    unsafe { libc::signal(signal, libc::SIG_IGN) };
    let err = ThreadTimer::start(current_thread_id(), signal, Duration::from_millis(1))
        .expect_err("a timer on an ignored signal started")
        .to_string();
    assert!(err.contains("ignored"), "{err}");
    // SAFETY: back to the default.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}
