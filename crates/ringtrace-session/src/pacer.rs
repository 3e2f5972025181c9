//! How long a drainer sleeps between rounds: not at all after a round
//! that drained a good amount (a ring filling fast); briefly after one
//! that drained a little or nothing while events keep coming, so that a
//! ring filling at hundreds of MB/s is looked at again long before it is
//! full (1 MiB lasts 4 ms at 250 MB/s, and a sleep can overshoot by a
//! scheduler's time slice) and what is written at once is worth a system
//! call; long once the writers have gone quiet, so that an idle recorder
//! costs next to nothing.

use std::time::{Duration, Instant};

/// The sleep after an empty round while writers are active.
pub const ACTIVE_SLEEP: Duration = Duration::from_micros(100);
/// How long after the last round that drained something the writers
/// count as active.
pub const ACTIVE_FOR: Duration = Duration::from_millis(50);

/// Decides a drainer's sleeps.
///
/// ```
/// use ringtrace_session::Pacer;
/// use std::time::Duration;
/// use ringtrace_session::pacer::ACTIVE_SLEEP;
/// let mut pacer = Pacer::new(Duration::from_millis(2)).gather(8);
/// assert_eq!(pacer.after_round(0), Some(Duration::from_millis(2))); // nothing yet
/// assert_eq!(pacer.after_round(20), None); // go again at once
/// assert_eq!(pacer.after_round(3), Some(ACTIVE_SLEEP)); // let more come
/// assert_eq!(pacer.after_round(0), Some(ACTIVE_SLEEP));
/// ```
#[derive(Debug, Clone)]
pub struct Pacer {
    idle: Duration,
    gather: u64,
    last_busy: Option<Instant>,
}

impl Pacer {
    /// A pacer whose sleep once the writers are quiet is `idle`.
    /// (Rounds that drain anything at all are followed at once.)
    pub fn new(idle: Duration) -> Pacer {
        Pacer {
            idle,
            gather: 1,
            last_busy: None,
        }
    }

    /// Rounds must drain at least `pages` pages to be followed at once;
    /// after one that drained fewer, the drainer sleeps as while writers
    /// are active.
    pub fn gather(mut self, pages: u64) -> Pacer {
        self.gather = pages.max(1);
        self
    }

    /// After a round that drained `pages` pages (or pieces): how long to
    /// sleep before the next (`None`: not at all).
    pub fn after_round(&mut self, pages: u64) -> Option<Duration> {
        let now = Instant::now();
        if pages > 0 {
            self.last_busy = Some(now);
        }
        if pages >= self.gather {
            return None;
        }
        let active = self
            .last_busy
            .is_some_and(|at| now.duration_since(at) < ACTIVE_FOR);
        Some(if active {
            ACTIVE_SLEEP.min(self.idle)
        } else {
            self.idle
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_drainer_sleeps_long_again_once_writers_stop() {
        let mut pacer = Pacer::new(Duration::from_millis(5));
        assert_eq!(pacer.after_round(1), None);
        assert_eq!(pacer.after_round(0), Some(ACTIVE_SLEEP));
        pacer.last_busy = Some(Instant::now() - ACTIVE_FOR - Duration::from_millis(1));
        assert_eq!(pacer.after_round(0), Some(Duration::from_millis(5)));
        // An idle shorter than the active sleep is kept.
        let mut short = Pacer::new(Duration::from_micros(10));
        short.after_round(1);
        assert_eq!(short.after_round(0), Some(Duration::from_micros(10)));
        // A gathering pacer sleeps briefly after a small round.
        let mut gathering = Pacer::new(Duration::from_millis(5)).gather(0);
        assert_eq!(gathering.after_round(1), None, "gather(0) is gather(1)");
        let mut gathering = gathering.gather(4);
        assert_eq!(gathering.after_round(3), Some(ACTIVE_SLEEP));
        assert_eq!(gathering.after_round(4), None);
    }
}
