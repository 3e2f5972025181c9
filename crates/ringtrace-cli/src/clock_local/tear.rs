//! trace_clock_local's "seldom incorrect timestamp", measured faithfully and then
//! amplified.
//!
//! - **Faithful**: `sched@preempt`, whose data loads sit back to back as
//!   2009's `__cycles_2_ns()` compiled (`ringtrace_clock::sched::SCHED_READ`),
//!   under updates at the rate the user sets (`--update-hz`, by default
//!   HZ=1000: the fastest periodic interrupt of the time; the frequency
//!   changes that really rewrote the data came far less often).
//! - **Amplified**: `sched-wide@preempt` (the multiply between the loads)
//!   under 20 kHz updates: the mechanism in seconds. Every figure it gives
//!   is labelled amplified.
//!
//! For each, two runs on a fresh thread under the same updates:
//!
//! - **at the source**: the clock read back to back, every reading checked
//!   (`sched::measure_wrong`): updates delivered, torn readings (updates
//!   that landed between the loads), the rate per update with its 95%
//!   Wilson interval, and what that rate means at the kernel's update
//!   rates;
//! - **as recorded**: a writer recording into the ring (a fifth of the
//!   time): the torn readings the ring recorded, and apart from them the
//!   events its monotonic fixup flattened behind them. The ring hides most
//!   tears: its fast path sends a step back, or forward by more than a
//!   header's 27-bit delta, to the general loop, which reads the clock
//!   again; a tear of the scale by a frequency change is that large. (The
//!   kernel's ring buffer of 2009 recorded such a step with a time
//!   extend.)

use crate::update_run::{self, UpdateHandler, UpdateRun};
use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::emulation::timer::{current_thread_id, ThreadTimer};
use ringtrace_clock::sched::{self, Window};
use ringtrace_clock::{ClockError, ClockSpec};
use serde::Serialize;
use std::time::Duration;
use thiserror::Error;

/// A proportion with its 95% Wilson score interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Successes over trials.
    pub estimate: f64,
    /// Lower end of the 95% interval.
    pub low: f64,
    /// Upper end of the 95% interval.
    pub high: f64,
}

impl Rate {
    /// `k` in `n` trials, with the 95% Wilson score interval (which stays
    /// inside 0..1 and gives an upper bound above 0 when `k` is 0:
    /// 3.84/(n+3.84)). `n` of 0 gives 0 in 0..1.
    ///
    /// ```
    /// use ringtrace_cli::clock_local::tear::Rate;
    /// let none = Rate::wilson(0, 1_000_000);
    /// assert_eq!(none.low, 0.0);
    /// assert!(none.high > 3.8e-6 && none.high < 3.9e-6);
    /// assert!(Rate::wilson(5, 100).low > 0.0);
    /// ```
    pub fn wilson(k: u64, n: u64) -> Rate {
        if n == 0 {
            return Rate {
                estimate: 0.0,
                low: 0.0,
                high: 1.0,
            };
        }
        let z = 1.959_963_984_540_054_f64;
        let (k, n) = (k.min(n) as f64, n as f64);
        let p = k / n;
        let denom = 1.0 + z * z / n;
        let centre = (p + z * z / (2.0 * n)) / denom;
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
        Rate {
            estimate: p,
            low: if k == 0.0 {
                0.0
            } else {
                (centre - half).max(0.0)
            },
            high: if k == n {
                1.0
            } else {
                (centre + half).min(1.0)
            },
        }
    }

    /// Whether the interval leaves 0 out.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0
    }
}

/// A kernel update rate, and what a measured rate per update means there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AtKernelRate {
    /// The source of updates.
    pub source: &'static str,
    /// Updates per second.
    pub updates_per_s: f64,
    /// Expected torn readings per hour: the rate per update's 95%
    /// interval times the updates in an hour.
    pub torn_per_hour_low: f64,
    /// Upper end.
    pub torn_per_hour_high: f64,
}

/// A kernel update rate of the patch's era.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KernelRate {
    /// The source of updates.
    pub source: &'static str,
    /// Updates per second.
    pub updates_per_s: f64,
}

/// The kernel's update rates of the patch's era.
pub const KERNEL_RATES: [KernelRate; 3] = [
    KernelRate {
        source: "timer tick at HZ=1000, had it rewritten the data (it did not)",
        updates_per_s: 1000.0,
    },
    KernelRate {
        source: "cpufreq at ondemand's fastest (a change per 10 ms sampling period)",
        updates_per_s: 100.0,
    },
    KernelRate {
        source: "constant-TSC CPUs: the cpufreq notifier is not registered",
        updates_per_s: 0.0,
    },
];

/// One configuration's run: updates, tears, the rate, the flattened events.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TearRun {
    /// The clock.
    pub clock: String,
    /// Whether the setting is amplified (wider window, faster updates).
    pub amplified: bool,
    /// The read's window, counted in its machine code.
    pub window_instructions_between_loads: usize,
    /// Instructions from the counter read to the last data load.
    pub window_instructions_from_counter: usize,
    /// Updates per second asked for.
    pub update_hz: u32,
    /// The clock read back to back, every reading checked.
    pub source: SourceRun,
    /// A writer recording into the ring under the same updates.
    pub recorded: Result<UpdateRun, String>,
    /// Torn readings at the source: updates that landed between the loads.
    pub torn: u64,
    /// Torn readings per update delivered, with its 95% interval.
    pub rate: Rate,
    /// Events flattened behind recorded tears by the monotonic fixup.
    pub flattened: u64,
    /// What the rate means at the kernel's update rates.
    pub at_kernel_rates: Vec<AtKernelRate>,
}

/// How long each configuration runs, and how fast its updates come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TearConfig {
    /// Faithful updates per second.
    pub faithful_hz: u32,
    /// The faithful run.
    pub faithful_run: Duration,
    /// Amplified updates per second.
    pub amplified_hz: u32,
    /// The amplified run.
    pub amplified_run: Duration,
}

impl TearConfig {
    /// What `report` runs: 30 s faithful (5 s with `quick`) at
    /// `faithful_hz`, 2 s amplified (0.5 s) at 20 kHz.
    pub fn report(quick: bool, faithful_hz: u32) -> TearConfig {
        TearConfig {
            faithful_hz,
            faithful_run: Duration::from_secs(if quick { 5 } else { 30 }),
            amplified_hz: 20_000,
            amplified_run: Duration::from_millis(if quick { 500 } else { 2000 }),
        }
    }
}

fn window_of(amplified: bool) -> Window {
    let listing: &[&str] = if amplified {
        &sched::SCHED_WIDE_READ
    } else {
        &sched::SCHED_READ
    };
    sched::window(listing).unwrap_or(Window {
        from_counter_to_last_load: 0,
        between_data_loads: 0,
    })
}

/// The clock read back to back on one thread under updates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SourceRun {
    /// Readings checked.
    pub reads: u64,
    /// Updates that ran on the reader's thread.
    pub updates: u64,
    /// Torn readings ahead of the exact time.
    pub ahead: u64,
    /// Torn readings behind it.
    pub behind: u64,
    /// The largest error, in ns.
    pub max_error_ns: u64,
    /// Readings whose generation left the history before their check.
    pub unchecked: u64,
    /// How long it read, in seconds.
    pub seconds: f64,
    /// Updates per second achieved.
    pub update_hz: f64,
}

/// The signal of the source runs' updates (the ring runs use
/// [`update_run::update_signal`]).
fn source_signal() -> i32 {
    update_run::update_signal() + 1
}

fn on_source_update(_signal: i32) {
    sched::update();
}

/// Why a tear run could not measure.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TearError {
    /// The clock name does not parse or the clock cannot be built, or the
    /// update's timer or signal handler could not be set up; the clock
    /// crate's error names the bad value and the valid ones.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// The reader thread panicked; nothing it counted is known.
    #[error("the reader thread panicked")]
    ReaderPanicked,
}

/// Reads `clock` back to back for `run` on a fresh thread under updates
/// every `period`, checking every reading.
fn source_run(
    spec: &ClockSpec,
    period: Duration,
    run: Duration,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<SourceRun, TearError> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let clock = spec.build()?;
    let signal = source_signal();
    interrupt::install_irq_handler(signal, on_source_update)?;
    let outcome = std::thread::scope(|s| {
        s.spawn(|| {
            let timer = ThreadTimer::start(current_thread_id(), signal, period)?;
            // In slices of at most a second, so that a stop asked for
            // meanwhile is seen within one.
            let until = std::time::Instant::now() + run;
            let mut found = sched::WrongReadings::default();
            loop {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() || stop() {
                    break;
                }
                let slice = sched::measure_wrong(&clock, left.min(Duration::from_secs(1)));
                found.reads += slice.reads;
                found.ahead += slice.ahead;
                found.behind += slice.behind;
                found.unchecked += slice.unchecked;
                found.updates += slice.updates;
                found.max_error_ns = found.max_error_ns.max(slice.max_error_ns);
            }
            let seconds = timer.elapsed().as_secs_f64();
            drop(timer);
            Ok::<_, ClockError>((found, seconds))
        })
        .join()
        .map_err(|_| TearError::ReaderPanicked)
    });
    interrupt::uninstall_irq_handler(signal)?;
    let (found, seconds) = outcome??;
    Ok(SourceRun {
        reads: found.reads,
        updates: found.updates,
        ahead: found.ahead,
        behind: found.behind,
        max_error_ns: found.max_error_ns,
        unchecked: found.unchecked,
        seconds,
        update_hz: found.updates as f64 / seconds.max(1e-9),
    })
}

/// Measures `clock` (a `sched` source) under updates at `hz`: at the
/// source for `run`, then as recorded for a fifth of it, the handler
/// updating the data only.
pub fn measure(clock: &str, hz: u32, run: Duration) -> Result<TearRun, TearError> {
    measure_until(clock, hz, run, &|| false)
}

/// [`measure`], ending the source run early (within a second) once `stop`
/// says so; the figures are then those of the time it ran.
pub fn measure_until(
    clock: &str,
    hz: u32,
    run: Duration,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<TearRun, TearError> {
    let spec: ClockSpec = clock.parse()?;
    let amplified = spec.source.is_amplified();
    let period = Duration::from_nanos(1_000_000_000 / u64::from(hz.max(1)));
    let source = source_run(&spec, period, run, stop)?;
    let recorded =
        update_run::run(&spec, UpdateHandler::Update, run / 5, period).map_err(|e| e.to_string());
    Ok(summarise(clock, amplified, hz, source, recorded))
}

/// The figures of one configuration's runs.
pub fn summarise(
    clock: &str,
    amplified: bool,
    hz: u32,
    source: SourceRun,
    recorded: Result<UpdateRun, String>,
) -> TearRun {
    let torn = source.ahead + source.behind;
    let rate = Rate::wilson(torn, source.updates);
    let window = window_of(amplified);
    TearRun {
        clock: clock.to_owned(),
        amplified,
        window_instructions_between_loads: window.between_data_loads,
        window_instructions_from_counter: window.from_counter_to_last_load,
        update_hz: hz,
        torn,
        rate,
        flattened: recorded
            .as_ref()
            .ok()
            .and_then(|r| r.flattened)
            .unwrap_or(0),
        at_kernel_rates: KERNEL_RATES
            .iter()
            .map(|k| AtKernelRate {
                source: k.source,
                updates_per_s: k.updates_per_s,
                torn_per_hour_low: rate.low * k.updates_per_s * 3600.0,
                torn_per_hour_high: rate.high * k.updates_per_s * 3600.0,
            })
            .collect(),
        source,
        recorded,
    }
}

/// Per million, for the text.
pub fn per_million(p: f64) -> f64 {
    p * 1e6
}

/// One configuration in two lines: at the source, and as recorded.
pub fn line(t: &TearRun) -> String {
    let s = &t.source;
    let mut out = format!(
        "{}{}: {} torn readings in {} updates ({} reads, {:.1} s at {:.0}/s, {} asked; window {} instruction(s) between the data loads, {} from the counter read): {:.1} per million updates (95% {:.1} to {:.1}); largest error {} ns",
        t.clock,
        if t.amplified { " (amplified)" } else { "" },
        t.torn,
        s.updates,
        s.reads,
        s.seconds,
        s.update_hz,
        t.update_hz,
        t.window_instructions_between_loads,
        t.window_instructions_from_counter,
        per_million(t.rate.estimate),
        per_million(t.rate.low),
        per_million(t.rate.high),
        s.max_error_ns,
    );
    match &t.recorded {
        Ok(r) => out.push_str(&format!(
            "\n    recorded into the ring ({:.1} s, {} updates): {} events, {} torn readings recorded, {} events flattened behind them by the monotonic fixup",
            r.seconds,
            r.updates,
            r.events,
            r.wrong_readings.map_or(0, |w| w.total()),
            t.flattened
        )),
        Err(e) => out.push_str(&format!("\n    recorded into the ring: error: {e}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wilson_interval_brackets_the_estimate_and_excludes_zero_once_seen() {
        for (k, n) in [(1, 10), (5, 100), (1300, 10_000), (1, 1_000_000)] {
            let r = Rate::wilson(k, n);
            assert!(
                r.low > 0.0 && r.low < r.estimate && r.estimate < r.high,
                "{k}/{n}: {r:?}"
            );
            assert!(r.excludes_zero());
        }
        let none = Rate::wilson(0, 30_000);
        assert_eq!((none.low, none.estimate), (0.0, 0.0));
        assert!(!none.excludes_zero());
        // The 95% bound on nothing seen: z^2 / (n + z^2).
        let z2 = 1.959_963_984_540_054_f64.powi(2);
        assert!((none.high - z2 / (30_000.0 + z2)).abs() < 1e-12, "{none:?}");
        assert_eq!(Rate::wilson(0, 0).high, 1.0);
        assert_eq!(Rate::wilson(10, 10).high, 1.0);
    }

    #[test]
    fn kernel_rates_scale_the_interval_per_hour() {
        let source = SourceRun {
            reads: 1,
            updates: 10_000,
            ahead: 100,
            behind: 0,
            max_error_ns: 0,
            unchecked: 0,
            seconds: 1.0,
            update_hz: 10_000.0,
        };
        let t = summarise("sched@preempt", false, 1000, source, Err("x".into()));
        let hz1000 = &t.at_kernel_rates[0];
        assert_eq!(hz1000.updates_per_s, 1000.0);
        assert!((hz1000.torn_per_hour_high - t.rate.high * 3.6e6).abs() < 1e-6);
        let constant_tsc = t.at_kernel_rates.last().unwrap();
        assert_eq!(constant_tsc.torn_per_hour_high, 0.0);
        assert_eq!(t.window_instructions_between_loads, 0);
        assert!(line(&t).contains("100 torn readings in 10000 updates"));
    }
}
