//! Putting a live drain's events back in time order across rounds.
//!
//! A round reads the CPUs one after the other, so a thread that moved
//! from a CPU already read to one not yet read can have its later record
//! drained a round before its earlier one (a span's `enter` before its
//! `new`). The earlier one was committed before the later one was
//! stamped, so before the round that drained the later one ended, and the
//! next round drains it. So an event is held until an event of its
//! process at least as new came in an earlier round: held a round at
//! most, the two are then given out together, in time order.

use std::collections::HashMap;
use std::hash::Hash;

/// One event: its process, its time in that process's clock, and what it
/// carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed<K, T> {
    pub process: K,
    pub ticks: u64,
    pub item: T,
}

/// The events held from one round to the next.
#[derive(Debug)]
pub struct Hold<K, T> {
    held: Vec<Timed<K, T>>,
    /// Per process, the newest time of the events of the rounds before.
    newest: HashMap<K, u64>,
}

impl<K: Copy + Eq + Hash + Ord, T> Hold<K, T> {
    /// Nothing held.
    pub fn new() -> Self {
        Hold {
            held: Vec::new(),
            newest: HashMap::new(),
        }
    }

    /// Takes a round's events; gives out those an earlier round vouches
    /// for, held ones included, in time order per process.
    pub fn round(&mut self, arrived: Vec<Timed<K, T>>) -> Vec<Timed<K, T>> {
        self.take(arrived, false)
    }

    /// Takes the last events and gives out everything, in order.
    pub fn finish(&mut self, arrived: Vec<Timed<K, T>>) -> Vec<Timed<K, T>> {
        self.take(arrived, true)
    }

    fn take(&mut self, arrived: Vec<Timed<K, T>>, all: bool) -> Vec<Timed<K, T>> {
        // This round's newest per process vouch only from the next round.
        let mut arrived_newest: HashMap<K, u64> = HashMap::new();
        for e in &arrived {
            let n = arrived_newest.entry(e.process).or_insert(e.ticks);
            *n = (*n).max(e.ticks);
        }
        let mut ready = std::mem::take(&mut self.held);
        ready.extend(arrived);
        if !all {
            let newest = &self.newest;
            let (now, later) = ready
                .into_iter()
                .partition(|e| newest.get(&e.process).is_some_and(|&n| e.ticks <= n));
            ready = now;
            self.held = later;
        }
        for (process, ticks) in arrived_newest {
            let n = self.newest.entry(process).or_insert(ticks);
            *n = (*n).max(ticks);
        }
        ready.sort_by_key(|e| (e.process, e.ticks));
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(process: u32, ticks: u64, item: char) -> Timed<u32, char> {
        Timed {
            process,
            ticks,
            item,
        }
    }

    fn items(v: Vec<Timed<u32, char>>) -> String {
        v.into_iter().map(|e| e.item).collect()
    }

    #[test]
    fn a_record_drained_a_round_before_an_earlier_one_is_given_out_after_it() {
        let mut hold = Hold::new();
        // Round 1: the thread's later record ('b', time 20), from the CPU
        // read second; its earlier one ('a', 10) not yet committed on the
        // CPU read first.
        assert_eq!(items(hold.round(vec![at(1, 20, 'b')])), "");
        // Round 2 drains 'a' and a newer 'c': 'a' and 'b' go out in order.
        assert_eq!(
            items(hold.round(vec![at(1, 30, 'c'), at(1, 10, 'a')])),
            "ab"
        );
        assert_eq!(items(hold.finish(Vec::new())), "c");
    }

    #[test]
    fn each_process_is_vouched_for_by_its_own_events_only() {
        let mut hold = Hold::new();
        assert_eq!(items(hold.round(vec![at(1, 100, 'x')])), "");
        // Process 2's clock is not process 1's: its event waits for one of
        // its own.
        assert_eq!(items(hold.round(vec![at(2, 5, 'y')])), "x");
        assert_eq!(items(hold.round(vec![at(2, 6, 'z')])), "y");
        assert_eq!(items(hold.finish(vec![at(1, 101, 'w')])), "wz");
    }
}
