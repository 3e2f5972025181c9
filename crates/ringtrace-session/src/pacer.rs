//! How long a drainer sleeps between rounds: not at all after a round
//! that drained a good amount (a ring filling fast); after one that
//! drained a little while events keep coming, long enough for about that
//! good amount to come at the rate the round saw, but never more than a
//! quarter of the time the smallest ring would take to fill at that
//! rate, nor more than the idle sleep; the idle sleep once the writers
//! have gone quiet, so that an idle recorder costs next to nothing.
//!
//! A ring filling at hundreds of MB/s is so looked at again long before
//! it is full (1 MiB lasts 4 ms at 250 MB/s, and a sleep can overshoot by
//! a scheduler's time slice), and one filling at a few MB/s is not woken
//! for every page: each round costs system calls whatever it drains.

use std::time::{Duration, Instant};

/// The shortest sleep after a round that drained less than a good amount
/// while writers are active.
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
/// // A few pages: sleep for more to come, from 100 us to the idle 2 ms.
/// let sleep = pacer.after_round(3).unwrap();
/// assert!(sleep >= ACTIVE_SLEEP && sleep <= Duration::from_millis(2));
/// ```
#[derive(Debug, Clone)]
pub struct Pacer {
    idle: Duration,
    gather: u64,
    /// Pages of the smallest CPU buffer drained, if known.
    capacity: Option<u64>,
    last_busy: Option<Instant>,
    /// When the last round ended (its pages came in the time since).
    last_round: Option<Instant>,
}

impl Pacer {
    /// A pacer whose sleep once the writers are quiet is `idle`, and
    /// at most while they are active. (Rounds that drain at least the
    /// [`gather`](Self::gather) amount are followed at once.)
    pub fn new(idle: Duration) -> Pacer {
        Pacer {
            idle,
            gather: 1,
            capacity: None,
            last_busy: None,
            last_round: None,
        }
    }

    /// Rounds must drain at least `pages` pages to be followed at once;
    /// after one that drained fewer, the drainer sleeps for about that
    /// many to come (a quarter of the smallest buffer at most, once
    /// [`capacity`](Self::capacity) is given).
    pub fn gather(mut self, pages: u64) -> Pacer {
        self.gather = pages.max(1);
        self
    }

    /// The pages of the smallest CPU buffer drained: no sleep lasts more
    /// than a quarter of the time it takes to fill at the rate the last
    /// round saw, and no round waits for more than a quarter of it.
    pub fn capacity(&mut self, pages: u64) {
        self.capacity = Some(pages.max(1));
    }

    /// After a round that drained `pages` pages (or pieces): how long to
    /// sleep before the next (`None`: not at all).
    pub fn after_round(&mut self, pages: u64) -> Option<Duration> {
        self.after_round_at(pages, Instant::now())
    }

    /// [`after_round`](Self::after_round) for a round that ended at `now`.
    fn after_round_at(&mut self, pages: u64, now: Instant) -> Option<Duration> {
        let since = self.last_round.map(|at| now.duration_since(at));
        self.last_round = Some(now);
        if pages > 0 {
            self.last_busy = Some(now);
        }
        let gather = match self.capacity {
            Some(capacity) => self.gather.min((capacity / 4).max(1)),
            None => self.gather,
        };
        if pages >= gather {
            return None;
        }
        let active = self
            .last_busy
            .is_some_and(|at| now.duration_since(at) < ACTIVE_FOR);
        if !active {
            return Some(self.idle);
        }
        let shortest = ACTIVE_SLEEP.min(self.idle);
        let Some(since) = since else {
            return Some(shortest);
        };
        // The rate of the last interval: `pages` came in `since`. Nothing
        // came: twice the interval (the writers slowing down).
        let (want, longest) = if pages == 0 {
            (since.saturating_mul(2), self.idle)
        } else {
            let per_page = since.div_f64(pages as f64);
            let times = |n: u64| per_page.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
            let longest = match self.capacity {
                Some(capacity) => self.idle.min(times(capacity) / 4),
                None => self.idle,
            };
            (times(gather), longest)
        };
        Some(want.min(longest).max(shortest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sleep after a round of `pages` that ended `after` the last
    /// one (exactly: no time passes between the two in the test).
    fn round_after(pacer: &mut Pacer, after: Duration, pages: u64) -> Option<Duration> {
        let last = pacer.last_round.unwrap_or_else(Instant::now);
        pacer.last_round = Some(last);
        pacer.after_round_at(pages, last + after)
    }

    #[test]
    fn a_quiet_drainer_sleeps_long_again_once_writers_stop() {
        let mut pacer = Pacer::new(Duration::from_millis(5));
        assert_eq!(pacer.after_round(1), None);
        let soon = Duration::from_micros(10);
        assert_eq!(round_after(&mut pacer, soon, 0), Some(ACTIVE_SLEEP));
        pacer.last_busy = Some(Instant::now() - ACTIVE_FOR - Duration::from_millis(1));
        assert_eq!(pacer.after_round(0), Some(Duration::from_millis(5)));
        // An idle shorter than the active sleep is kept.
        let mut short = Pacer::new(Duration::from_micros(10));
        short.after_round(1);
        assert_eq!(short.after_round(0), Some(Duration::from_micros(10)));
        // gather(0) is gather(1).
        let mut gathering = Pacer::new(Duration::from_millis(5)).gather(0);
        assert_eq!(gathering.after_round(1), None);
    }

    #[test]
    fn a_slow_writer_is_waited_for_until_a_good_amount_has_come() {
        let mut pacer = Pacer::new(Duration::from_millis(20)).gather(32);
        pacer.after_round(1);
        // 4 pages in 1 ms: 32 come in 8 ms.
        let ms = Duration::from_millis;
        assert_eq!(round_after(&mut pacer, ms(1), 4), Some(ms(8)));
        // Never past the idle sleep.
        assert_eq!(round_after(&mut pacer, ms(10), 1), Some(ms(20)));
        // Nothing came: twice the interval, up to the idle sleep.
        assert_eq!(round_after(&mut pacer, ms(3), 0), Some(ms(6)));
        assert_eq!(round_after(&mut pacer, ms(15), 0), Some(ms(20)));
    }

    #[test]
    fn no_sleep_outlasts_a_quarter_of_the_smallest_buffer() {
        let mut pacer = Pacer::new(Duration::from_millis(50)).gather(32);
        pacer.capacity(64);
        pacer.after_round(1);
        let ms = Duration::from_millis;
        // 8 pages in 1 ms: 64 pages fill in 8 ms, a quarter of which is
        // 2 ms; gathering 16 (a quarter of the buffer) takes 2 ms too.
        assert_eq!(round_after(&mut pacer, ms(1), 8), Some(ms(2)));
        // 1 page in 1 ms: 16 would take 16 ms, the buffer fills in 64:
        // a quarter of it is 16 ms; the idle sleep is longer.
        assert_eq!(round_after(&mut pacer, ms(1), 1), Some(ms(16)));
        // A larger buffer: no sleep past the idle one.
        pacer.capacity(4096);
        assert_eq!(round_after(&mut pacer, ms(1), 1), Some(ms(32)));
        assert_eq!(round_after(&mut pacer, ms(10), 1), Some(ms(50)));
        // A quarter of the buffer in a round is a good amount: at once.
        pacer.capacity(64);
        assert_eq!(pacer.after_round(16), None);
        // A tiny buffer: a page is a good amount.
        pacer.capacity(2);
        assert_eq!(pacer.after_round(1), None);
    }

    #[test]
    fn the_sleep_never_drops_below_the_active_sleep() {
        let mut pacer = Pacer::new(Duration::from_millis(2)).gather(32);
        pacer.after_round(1);
        assert_eq!(
            round_after(&mut pacer, Duration::from_micros(1), 31),
            Some(ACTIVE_SLEEP)
        );
    }
}
