//! The per-CPU tracks of preemptirq sections (irqs, preemption or
//! softirqs off). A section begins on the CPU its begin was recorded on
//! and ends when the same thread records its end. In the kernel two
//! sections of one kind never overlap on a CPU; in userspace a thread can
//! be preempted inside its section and another thread of the same CPU
//! begin one, so each CPU and kind has lanes: a section takes the first
//! lane of its CPU with no section open, and every lane is a track on
//! which slices never overlap.

use std::collections::HashMap;

/// Where an open section is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Lane {
    pub cpu: usize,
    pub section: String,
    pub lane: u32,
}

/// The lanes in use, and each thread's open sections.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    busy: HashMap<(usize, String), Vec<bool>>,
    /// By (pid, tid, section): the lanes of its open sections, innermost
    /// last.
    open: HashMap<(u32, u32, String), Vec<Lane>>,
}

impl Lanes {
    /// Opens a `section` of thread (pid, tid) on `cpu`: its lane.
    pub fn begin(&mut self, pid: u32, tid: u32, cpu: usize, section: &str) -> Lane {
        let busy = self.busy.entry((cpu, section.to_owned())).or_default();
        let lane = busy.iter().position(|b| !b).unwrap_or(busy.len());
        if lane == busy.len() {
            busy.push(true);
        } else {
            busy[lane] = true;
        }
        let at = Lane {
            cpu,
            section: section.to_owned(),
            lane: lane as u32,
        };
        self.open
            .entry((pid, tid, section.to_owned()))
            .or_default()
            .push(at.clone());
        at
    }

    /// Closes the thread's innermost open `section`: its lane, or `None`
    /// if it has none open.
    pub fn end(&mut self, pid: u32, tid: u32, section: &str) -> Option<Lane> {
        let at = self
            .open
            .get_mut(&(pid, tid, section.to_owned()))
            .and_then(Vec::pop)?;
        if let Some(b) = self
            .busy
            .get_mut(&(at.cpu, at.section.clone()))
            .and_then(|lanes| lanes.get_mut(at.lane as usize))
        {
            *b = false;
        }
        Some(at)
    }

    /// Every section still open, with its (pid, tid); none after.
    pub fn take_all(&mut self) -> Vec<((u32, u32), Lane)> {
        self.busy.clear();
        let mut all: Vec<_> = std::mem::take(&mut self.open)
            .into_iter()
            .flat_map(|((pid, tid, _), lanes)| {
                lanes.into_iter().rev().map(move |l| ((pid, tid), l))
            })
            .collect();
        all.sort_by_key(|(thread, l)| (*thread, l.cpu, l.lane));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_sections_of_one_cpu_take_separate_lanes_and_free_them() {
        let mut l = Lanes::default();
        assert_eq!(l.begin(1, 10, 0, "irqs off").lane, 0);
        assert_eq!(
            l.begin(1, 11, 0, "irqs off").lane,
            1,
            "thread 10 still holds lane 0"
        );
        assert_eq!(l.begin(1, 12, 1, "irqs off").lane, 0, "another CPU");
        assert_eq!(l.begin(1, 13, 0, "preempt off").lane, 0, "another kind");
        assert_eq!(l.end(1, 10, "irqs off").map(|a| a.lane), Some(0));
        assert_eq!(
            l.begin(1, 14, 0, "irqs off").lane,
            0,
            "lane 0 is free again"
        );
        assert_eq!(l.end(1, 10, "irqs off"), None);
        assert_eq!(l.take_all().len(), 4);
        assert!(l.take_all().is_empty());
    }
}
