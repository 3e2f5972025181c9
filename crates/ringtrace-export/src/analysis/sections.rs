//! Preemptirq sections (irqs, preemption or softirqs off) put back
//! together from their tracepoints' events, as the Perfetto export draws
//! them: a disable event (`preemptirq:irq_disable`, ...) opens a section
//! of its thread, on the CPU it was recorded on; the same thread's next
//! enable event of the same kind closes the innermost one it has open.
//! An enable with none open is ignored; a section still open at the
//! trace's end ends at the trace's last time, unclosed.

use crate::decode::Decoded;
use crate::export::chrome::span_edge;
use crate::trace::Trace;
use serde::Serialize;
use std::collections::HashMap;

/// One preemptirq section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Section {
    /// The process's place in [`Trace::processes`].
    #[serde(skip)]
    pub process: usize,
    /// The process's pid.
    pub pid: u32,
    /// The process's command name.
    pub comm: String,
    /// The thread.
    pub tid: u32,
    /// The CPU its begin was recorded on.
    pub cpu: usize,
    /// Its kind, as [`span_edge`] names it: `irqs off`, `preempt off` or
    /// `softirqs off`.
    pub section: String,
    /// Its begin, ns on the trace's timeline.
    pub start_ns: u64,
    /// Its end, ns on the trace's timeline (the trace's last time when it
    /// never closed).
    pub end_ns: u64,
    /// `end_ns - start_ns`.
    pub duration_ns: u64,
    /// Whether its end is in the trace.
    pub closed: bool,
}

/// A section begun and not yet ended.
#[derive(Debug)]
struct Open {
    cpu: usize,
    start_ns: u64,
}

/// The sections of a trace as it is walked.
#[derive(Debug, Default)]
pub(super) struct SectionScan {
    /// By (process, tid, kind): the sections open, innermost last.
    open: HashMap<(usize, u32, String), Vec<Open>>,
}

impl SectionScan {
    /// The section that event `payload` of process `process`, recorded on
    /// `cpu` at `ns` on the timeline, closes, if it closes one.
    pub fn event(
        &mut self,
        trace: &Trace<'_>,
        process: usize,
        cpu: usize,
        payload: &[u8],
        ns: u64,
    ) -> Option<Section> {
        let p = &trace.processes()[process];
        let Decoded::Tracepoint { desc, tid, .. } = p.decoder().decode(payload) else {
            return None;
        };
        let edge = span_edge(&desc.name).filter(|e| e.pair == "disable/enable")?;
        let key = (process, tid, edge.span);
        if edge.begins {
            let open = Open { cpu, start_ns: ns };
            self.open.entry(key).or_default().push(open);
            return None;
        }
        let open = self.open.get_mut(&key)?.pop()?;
        // Never before its begin (clocks that are not ordered globally).
        let end_ns = ns.max(open.start_ns);
        Some(section(trace, key, open, end_ns, true))
    }

    /// The sections still open, ended at `last_ns`: by process, thread,
    /// kind, then begin.
    pub fn finish(self, trace: &Trace<'_>, last_ns: u64) -> Vec<Section> {
        let mut rest: Vec<Section> = self
            .open
            .into_iter()
            .flat_map(|(key, opens)| {
                opens.into_iter().map(move |o| {
                    let end_ns = last_ns.max(o.start_ns);
                    section(trace, key.clone(), o, end_ns, false)
                })
            })
            .collect();
        rest.sort_by(|a, b| {
            (a.process, a.tid, &a.section, a.start_ns)
                .cmp(&(b.process, b.tid, &b.section, b.start_ns))
        });
        rest
    }
}

fn section(
    trace: &Trace<'_>,
    (process, tid, kind): (usize, u32, String),
    open: Open,
    end_ns: u64,
    closed: bool,
) -> Section {
    let p = &trace.processes()[process];
    Section {
        process,
        pid: p.pid(),
        comm: p.comm().to_owned(),
        tid,
        cpu: open.cpu,
        section: kind,
        start_ns: open.start_ns,
        end_ns,
        duration_ns: end_ns.saturating_sub(open.start_ns),
        closed,
    }
}

/// Calls `f` with each preemptirq section of `trace` (see the module's
/// docs): each as its end comes, in time order, then those never ended.
pub fn for_each_section(trace: &Trace<'_>, f: &mut dyn FnMut(&Section)) {
    let ns = |ticks: u64| trace.clock().ticks_to_ns(ticks).unwrap_or(ticks);
    let mut scan = SectionScan::default();
    let mut last_ns = 0;
    let _ = trace.for_each_event::<std::convert::Infallible>(&mut |process, e, ts| {
        last_ns = last_ns.max(ns(ts));
        if let Some(s) = scan.event(trace, process, e.cpu, &e.payload, ns(ts)) {
            f(&s);
        }
        Ok(())
    });
    for s in scan.finish(trace, last_ns) {
        f(&s);
    }
}

/// Sorts `sections` longest first, then by pid, tid, begin, CPU and
/// kind.
pub(super) fn sort_longest_first(sections: &mut [Section]) {
    sections.sort_by(|a, b| {
        b.duration_ns.cmp(&a.duration_ns).then_with(|| {
            (a.pid, a.tid, a.start_ns, a.cpu, &a.section)
                .cmp(&(b.pid, b.tid, b.start_ns, b.cpu, &b.section))
        })
    });
}
