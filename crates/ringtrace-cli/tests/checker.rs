//! The wrong-timestamp checker cannot fool itself: a writer records
//! through a planted `sched` read that raises the update's signal at a
//! known point, in every handler mode and under every protection, and the
//! checker's verdict on every event's reading agrees with what the read
//! knows happened. Counts, not timings.

use ringtrace::clock::sched::{Plant, PlantedRead};
use ringtrace::clock::{AnyClock, Clock, ClockInfo, Protection};
use ringtrace_cli::update_run::{self, EventCheck, UpdateHandler};
use std::sync::Arc;
use std::time::Duration;

/// A shared planted read as a `Clock` a ring can own.
#[derive(Debug)]
struct Shared(Arc<PlantedRead>);

impl Clock for Shared {
    fn read(&self) -> u64 {
        self.0.read()
    }
    fn info(&self) -> ClockInfo {
        self.0.info()
    }
}

/// Runs the writer through a read planted at `plant` (every fifth read),
/// checks each event's verdict against the truth, and returns the torn
/// readings the checker counted and the run.
fn run_planted(
    plant: Plant,
    latched: bool,
    protection: Protection,
    handler: UpdateHandler,
) -> (u64, update_run::UpdateRun) {
    let planted = Arc::new(
        PlantedRead::new(update_run::update_signal(), plant, 5, latched).expect("a sched read"),
    );
    let clock = AnyClock::custom_protected(Shared(planted.clone()), protection);
    let truth = planted.clone();
    let mut disagreements = Vec::new();
    let mut checked = 0u64;
    let mut observe = |check: EventCheck| {
        checked += 1;
        let said_torn = check.reading.is_some_and(|v| !v.is_right());
        if said_torn != truth.last_was_torn() {
            disagreements.push((checked, check));
        }
    };
    let run = update_run::run_clock(
        clock,
        true,
        handler,
        Duration::from_millis(30),
        None,
        &mut observe,
    )
    .expect("the run");
    assert!(
        disagreements.is_empty(),
        "{protection}, {plant:?}, latched {latched}, {}: the checker disagreed with the truth on {} of {checked} events, first {:?}",
        handler.name(),
        disagreements.len(),
        disagreements.first()
    );
    assert!(checked > 100, "{checked} events checked");
    (run.wrong_readings.map_or(0, |w| w.total()), run)
}

const HANDLERS: [UpdateHandler; 2] = [UpdateHandler::Update, UpdateHandler::UpdateAndWrite];

#[test]
#[cfg_attr(miri, ignore = "signals")]
fn a_planted_tear_is_counted_exactly_in_every_handler_mode_and_protection() {
    for handler in HANDLERS {
        for protection in Protection::ALL {
            let (torn, run) = run_planted(Plant::BetweenLoads, false, protection, handler);
            let masked = !matches!(protection, Protection::Raw | Protection::Preempt);
            if masked {
                assert_eq!(torn, 0, "{protection}, {}: {run:?}", handler.name());
            }
            if !masked && handler == UpdateHandler::Update {
                assert!(torn > 0, "{protection}: no planted tear counted: {run:?}");
                // A torn reading ahead flattens the events after it: they
                // are counted apart from the tears.
                let recorded = run.wrong_recorded.map_or(0, |w| w.total());
                assert_eq!(
                    recorded,
                    torn + run.flattened.unwrap_or(0),
                    "{protection}: {run:?}"
                );
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "signals")]
fn a_planted_non_tear_and_a_latched_read_are_never_counted_in_any_mode() {
    for handler in HANDLERS {
        for protection in Protection::ALL {
            for (plant, latched) in [(Plant::BeforeRead, false), (Plant::BetweenLoads, true)] {
                let (torn, run) = run_planted(plant, latched, protection, handler);
                assert_eq!(
                    torn,
                    0,
                    "{protection}, {plant:?}, latched {latched}, {}: {run:?}",
                    handler.name()
                );
                assert_eq!(
                    run.wrong_recorded.map_or(0, |w| w.total()),
                    0,
                    "{protection}, {plant:?}, latched {latched}, {}: {run:?}",
                    handler.name()
                );
            }
        }
    }
}
