//! Every API that routes or sends a signal as an interrupt refuses the
//! synchronous fault signals by name, and the numbers that are not
//! routable signals with their own typed error; a real fault while irqs are
//! soft-masked still crashes the process instead of spinning.

use ringtrace_clock::emulation::timer::{current_thread_id, IrqTimer, ThreadTimer};
use ringtrace_clock::emulation::{interrupt, signals, soft_irq};
use ringtrace_clock::sched::{Plant, PlantedRead};
use ringtrace_clock::ClockError;
use std::time::{Duration, Instant};

const FAULTS: [(i32, &str); 6] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGTRAP, "SIGTRAP"),
    (libc::SIGSYS, "SIGSYS"),
];

/// Each API that takes a signal, called with `signal`.
fn every_api(signal: i32) -> Vec<(&'static str, ClockError)> {
    let tid = current_thread_id();
    let period = Duration::from_millis(100);
    vec![
        (
            "install_irq_handler",
            interrupt::install_irq_handler(signal, |_| {}).unwrap_err(),
        ),
        (
            "uninstall_irq_handler",
            interrupt::uninstall_irq_handler(signal).unwrap_err(),
        ),
        (
            "raise_on_current_thread",
            interrupt::raise_on_current_thread(signal).unwrap_err(),
        ),
        (
            "IrqTimer::start",
            IrqTimer::start(tid, signal, period)
                .map(|_| ())
                .unwrap_err(),
        ),
        (
            "ThreadTimer::start",
            ThreadTimer::start(tid, signal, period)
                .map(|_| ())
                .unwrap_err(),
        ),
        (
            "PlantedRead::new",
            PlantedRead::new(signal, Plant::BeforeRead, 1, false)
                .map(|_| ())
                .unwrap_err(),
        ),
        (
            "signals::check_routable",
            signals::check_routable(signal).unwrap_err(),
        ),
    ]
}

#[test]
#[cfg_attr(miri, ignore = "signals")]
fn every_signal_routing_api_refuses_a_fault_signal_by_name() {
    for (signal, name) in FAULTS {
        for (api, err) in every_api(signal) {
            match &err {
                ClockError::FaultSignal {
                    signal: s,
                    name: n,
                    valid,
                } => {
                    assert_eq!((*s, n.as_str()), (signal, name), "{api}");
                    assert!(valid.contains("SIGRTMIN"), "{api}: {valid}");
                }
                other => panic!("{api}({name}) gave {other:?}, not FaultSignal"),
            }
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("{name} ({signal}) is a synchronous fault signal")),
                "{api}: {text}"
            );
            assert!(text.contains("valid signals are"), "{api}: {text}");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "signals")]
fn every_signal_routing_api_refuses_numbers_that_are_not_routable_signals() {
    let rtmax = libc::SIGRTMAX();
    let cases = [
        (0, "not a signal", "not a signal number"),
        (-1, "not a signal", "not a signal number"),
        (i32::MIN, "not a signal", "not a signal number"),
        (rtmax + 1, "not a signal", "not a signal number"),
        (i32::MAX, "not a signal", "not a signal number"),
        (libc::SIGKILL, "SIGKILL", "no handler can catch it"),
        (libc::SIGSTOP, "SIGSTOP", "no handler can catch it"),
        (32, "signal 32", "the C library keeps it"),
    ];
    for (signal, name, reason) in cases {
        for (api, err) in every_api(signal) {
            match &err {
                ClockError::BadSignal {
                    signal: s,
                    name: n,
                    reason: r,
                    valid,
                } => {
                    assert_eq!((*s, n.as_str()), (signal, name), "{api}");
                    assert!(r.contains(reason), "{api}({signal}): {r}");
                    assert!(valid.contains("SIGUSR1"), "{api}: {valid}");
                }
                other => panic!("{api}({signal}) gave {other:?}, not BadSignal"),
            }
            assert!(
                err.to_string()
                    .contains(&format!("signal {signal} ({name})")),
                "{api}: {err}"
            );
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "signals")]
fn asynchronous_signals_stay_routable() {
    for signal in [
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGRTMIN(),
        libc::SIGRTMAX(),
    ] {
        assert_eq!(signals::check_routable(signal), Ok(()), "{signal}");
    }
}

/// Set in the child that faults.
const CHILD: &str = "RINGTRACE_FAULT_SIGNALS_CHILD";

/// An illegal instruction: a real fault, raised by the instruction itself,
/// which runs again if a handler returns.
fn illegal_instruction() {
    // SAFETY: the instruction only raises SIGILL, which ends this child.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!("ud2")
    };
    // SAFETY: as above.
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!("udf #0")
    };
}

#[test]
#[cfg_attr(miri, ignore = "signals and processes")]
fn a_real_fault_while_soft_masked_still_crashes_the_process() {
    if std::env::var_os(CHILD).is_some() {
        // Refused: the fault keeps its default action, whatever the mask.
        let _ = interrupt::install_irq_handler(libc::SIGILL, |_| {});
        let _flags = soft_irq::save();
        illegal_instruction();
        std::process::exit(0); // not reached on the architectures above
    }
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return;
    }
    let mut child = ringtrace_testkit::self_command()
        .args([
            "a_real_fault_while_soft_masked_still_crashes_the_process",
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A hang detector, not a timing: a child spinning on its fault is
    // killed and reported as such.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the child spins on its fault instead of crashing");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGILL), "{status:?}");
}
