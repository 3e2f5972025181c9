//! The trace's tracks, each described by a `TrackDescriptor` packet
//! before its first event: a process's, a thread's (under its process),
//! an async task's (a `tracing` span entered more than once, under its
//! parent task or its process), a CPU's preemptirq sections (one track
//! per CPU, section and lane, see the lanes module), and counters (a
//! counter tracepoint's series, a CPU's events lost), each under its
//! process.

use super::intern::FnvMap;
use super::proto::Msg;
use super::schema::track;
use super::sink::{SeqKey, Sink};
use std::collections::HashMap;
use std::io;

/// A track, by what it shows; `pid` is the process's key (its place in
/// the trace), not its pid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum TrackKey {
    Process(u32),
    Thread {
        pid: u32,
        tid: u32,
    },
    /// An async task: a span of process `pid`, created at `created`.
    Task {
        pid: u32,
        span: u64,
        created: u64,
    },
    /// A CPU's sections of one kind (`irqs off`...), lane `lane` (0, or
    /// more when sections overlap on that CPU).
    Cpu {
        cpu: usize,
        section: String,
        lane: u32,
    },
    /// A counter of process `pid`.
    Counter {
        pid: u32,
        name: String,
    },
}

/// The tracks described so far, by key, and the processes' pids and
/// names by key (their place in the trace: a pid can be reused within a
/// session).
#[derive(Debug, Default)]
pub(super) struct Tracks {
    uuids: FnvMap<TrackKey, u64>,
    processes: HashMap<u32, (u32, String)>,
}

impl Tracks {
    /// Tracks for `processes`: (key, (pid, comm)).
    pub fn new(processes: impl IntoIterator<Item = (u32, (u32, String))>) -> Tracks {
        Tracks {
            uuids: FnvMap::default(),
            processes: processes.into_iter().collect(),
        }
    }

    /// The uuid of `key`'s track if it has been described.
    pub fn get(&self, key: &TrackKey) -> Option<u64> {
        self.uuids.get(key).copied()
    }

    /// The uuid of `key`'s track, described first if new, on the
    /// sequence of process `writer` (whose event needs it): `name` names a
    /// task's track; `parent` is a task's parent track, its process's when
    /// `None`.
    pub fn uuid(
        &mut self,
        sink: &mut Sink<'_>,
        writer: u32,
        key: TrackKey,
        name: Option<&str>,
        parent: Option<u64>,
    ) -> io::Result<u64> {
        if let Some(uuid) = self.get(&key) {
            return Ok(uuid);
        }
        let pid = match &key {
            TrackKey::Process(pid)
            | TrackKey::Thread { pid, .. }
            | TrackKey::Task { pid, .. }
            | TrackKey::Counter { pid, .. } => Some(*pid),
            TrackKey::Cpu { .. } => None,
        };
        let parent = match (&key, parent, pid) {
            (TrackKey::Process(_) | TrackKey::Cpu { .. }, _, _) => None,
            (_, Some(parent), _) => Some(parent),
            (_, None, Some(pid)) => {
                Some(self.uuid(sink, writer, TrackKey::Process(pid), None, None)?)
            }
            (_, None, None) => None,
        };
        let uuid = self.uuids.len() as u64 + 1;
        let (real_pid, comm) = pid
            .and_then(|p| self.processes.get(&p))
            .map_or((0, ""), |(pid, comm)| (*pid, comm.as_str()));
        let mut d = Msg::new();
        d.uint(track::UUID, uuid);
        if let Some(parent) = parent {
            d.uint(track::PARENT_UUID, parent);
        }
        match &key {
            TrackKey::Process(_) => {
                d.message(track::PROCESS, |p| {
                    p.int(track::PROCESS_PID, i64::from(real_pid))
                        .string(track::PROCESS_NAME, comm);
                });
            }
            TrackKey::Thread { tid, .. } => {
                d.message(track::THREAD, |t| {
                    t.int(track::THREAD_PID, i64::from(real_pid))
                        .int(track::THREAD_TID, i64::from(*tid))
                        .string(track::THREAD_NAME, &format!("{comm}-{tid}"));
                });
            }
            TrackKey::Task { span, .. } => {
                d.string(track::NAME, &format!("{} #{span}", name.unwrap_or("task")));
            }
            TrackKey::Cpu { cpu, section, lane } => {
                let name = match lane {
                    0 => format!("cpu {cpu}: {section}"),
                    n => format!("cpu {cpu}: {section} ({})", n + 1),
                };
                d.string(track::NAME, &name);
            }
            TrackKey::Counter { name, .. } => {
                d.string(track::NAME, name).message(track::COUNTER, |_| {});
            }
        }
        self.uuids.insert(key, uuid);
        let seq = SeqKey {
            pid: writer,
            tid: None,
        };
        sink.describe(seq, &d)?;
        Ok(uuid)
    }
}
