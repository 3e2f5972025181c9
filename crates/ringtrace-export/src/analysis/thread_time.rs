//! The time each thread spent in each span name: the spans' busy time
//! (entered and not yet exited) summed per creating thread and name.
//!
//! A span's busy time is summed over every thread that entered it, and
//! counted here on the thread that created it: an async task polled on
//! three workers counts all its polling on the thread that spawned it,
//! as the `spans` table's `tid` column (the creator) groups it.

use crate::spans::SpanData;
use serde::Serialize;
use std::collections::HashMap;

/// The busy time of one thread's spans of one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ThreadSpanTime {
    /// The process's pid.
    pub pid: u32,
    /// The process's command name.
    pub comm: String,
    /// The thread that created the spans.
    pub tid: u32,
    /// The spans' name.
    pub name: String,
    /// How many spans.
    pub spans: u64,
    /// Their busy time summed, ns (see the module's docs).
    pub busy_ns: u64,
}

/// The key rows are gathered by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    pid: u32,
    comm: String,
    tid: u32,
    name: String,
}

/// Busy time gathered per (process, creating thread, name).
#[derive(Debug, Default)]
pub(super) struct ThreadTime {
    rows: HashMap<Key, (u64, u64)>,
}

impl ThreadTime {
    /// Counts one span of process (`pid`, `comm`).
    pub fn add(&mut self, pid: u32, comm: &str, span: &SpanData) {
        let key = Key {
            pid,
            comm: comm.to_owned(),
            tid: span.tid,
            name: span.name.clone(),
        };
        let (spans, busy) = self.rows.entry(key).or_default();
        *spans += 1;
        *busy = busy.saturating_add(span.busy_ns);
    }

    /// One row per (pid, comm, tid, name): by busy time descending, then
    /// pid, comm, tid and name ascending.
    pub fn finish(self) -> Vec<ThreadSpanTime> {
        let mut rows: Vec<ThreadSpanTime> = self
            .rows
            .into_iter()
            .map(|(k, (spans, busy_ns))| ThreadSpanTime {
                pid: k.pid,
                comm: k.comm,
                tid: k.tid,
                name: k.name,
                spans,
                busy_ns,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.busy_ns.cmp(&a.busy_ns).then_with(|| {
                (a.pid, &a.comm, a.tid, &a.name).cmp(&(b.pid, &b.comm, b.tid, &b.name))
            })
        });
        rows
    }
}
