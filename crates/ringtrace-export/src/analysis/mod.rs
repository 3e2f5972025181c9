//! Figures computed from a trace by ringtrace's own reader: the ones
//! people ask of traces, computed exactly as the SQL of docs/analysis.md
//! computes them from the Parquet tables (`ringtrace export --format
//! parquet`), so that `ringtrace stats` on one machine and a query over
//! a fleet's files agree to the nanosecond (scripts/check_sql.py checks
//! that they do, in DuckDB and in ClickHouse).
//!
//! [`analyze`] walks a trace twice (once to put its `tracing` spans back
//! together with [`spans::assemble`](crate::spans::assemble), once over
//! its events in time order) and gives an [`Analysis`]:
//!
//! - [`SpanNameStats`]: per span name, how many, their p50, p99 and
//!   longest duration and the total.
//!   Percentiles are by nearest rank ([`nearest_rank`]): the value at
//!   rank `⌈p·n / 100⌉` of the sorted durations, which DuckDB
//!   (`quantile_disc`) and ClickHouse (`arraySort(groupArray(x))[rank]`)
//!   both compute exactly;
//! - [`ThreadSpanTime`]: per (process, thread, span name), the spans'
//!   busy time summed, counted on the thread that created each span (an
//!   async task's polling on other threads included);
//! - [`CpuSecondLoss`]: per (process, CPU, second), the events lost
//!   ([`Loss`] says where a trace records them);
//! - [`Section`]s: every preemptirq section (irqs, preemption or softirqs
//!   off) longer than a [`Threshold`], longest first.
//!
//! Times are ns on the trace's timeline (its clock's ticks in ns: the
//! shared clock's reading, or with [`Alignment::WallClock`](crate::Alignment)
//! ns since the Unix epoch), the `*_ns` columns of the Parquet tables.
//! Every list is in a stated order, ties broken down to a unique key, so
//! two runs over one trace print the same lines.
//!
//! ```
//! use ringtrace_export::analysis::{analyze, Threshold};
//! use ringtrace_export::{metadata_for_tracepoints, Trace};
//! use ringtrace_ring::{file, RingBuffer, RingConfig};
//! use ringtrace_tracepoint::{preemptirq, trace, SourceLocation};
//!
//! let dir = std::env::temp_dir().join(format!("ringtrace-analysis-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("app.ring");
//! let config = RingConfig::default()
//!     .cpus(1)
//!     .per_cpu_bytes(64 * 1024)
//!     .quarantine_pages(4)
//!     .file(&path)
//!     .metadata(metadata_for_tracepoints()?.to_bytes());
//! let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
//! ringtrace_tracepoint::set_sink(Box::leak(Box::new(RingBuffer::new(config, clock)?)))?;
//! preemptirq::set_tracepoints(true)?;
//! let at = SourceLocation { file: "doc.rs", line: 1, column: 1 };
//! // One short section, one long: the threshold between them is wide, so
//! // a loaded machine's late wake-up does not move the short one over it.
//! for pause in [0, 60] {
//!     trace!(preemptirq::irq_disable(at, at));
//!     std::thread::sleep(std::time::Duration::from_millis(pause));
//!     trace!(preemptirq::irq_enable(at, at));
//! }
//!
//! let recovery = file::recover(&path)?;
//! let analysis = analyze(&Trace::single(&recovery), "30ms".parse::<Threshold>()?);
//! let long = &analysis.long_sections;
//! assert_eq!(long.len(), 1, "{long:?}");
//! assert_eq!(long[0].section, "irqs off");
//! assert!(long[0].duration_ns >= 60_000_000 && long[0].closed);
//! assert!(analysis.slowest_spans.is_empty(), "no `tracing` span");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod losses;
mod rank;
mod sections;
mod span_names;
mod thread_time;
mod threshold;

pub use losses::{for_each_loss, CpuSecondLoss, Loss, LossCause};
pub use rank::nearest_rank;
pub use sections::{for_each_section, Section};
pub use span_names::SpanNameStats;
pub use thread_time::ThreadSpanTime;
pub use threshold::{Threshold, ThresholdError};

use crate::spans::{assemble, Assembled};
use crate::trace::Trace;
use serde::Serialize;
use std::convert::Infallible;

/// The figures of one trace (see the module's docs). Serialized (for
/// `ringtrace stats --json`), each list is an array of objects whose keys
/// are the SQL queries' column names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Analysis {
    /// The threshold sections had to exceed, ns.
    pub section_threshold_ns: u64,
    /// Per span name: by p99 descending, then the maximum descending,
    /// then the name.
    pub slowest_spans: Vec<SpanNameStats>,
    /// Per (pid, comm, creating thread, span name): by busy time
    /// descending, then pid, comm, tid and name.
    pub span_time_per_thread: Vec<ThreadSpanTime>,
    /// Per (pid, comm, CPU, second) with a loss: in that order.
    pub losses_per_cpu_second: Vec<CpuSecondLoss>,
    /// The preemptirq sections longer than the threshold: longest first,
    /// then by pid, tid, begin, CPU and kind.
    pub long_sections: Vec<Section>,
}

/// The figures of `trace`, with sections reported when longer than
/// `section_threshold`.
pub fn analyze(trace: &Trace<'_>, section_threshold: Threshold) -> Analysis {
    let processes = trace.processes();
    let mut names = span_names::SpanNames::default();
    let mut threads = thread_time::ThreadTime::default();
    let Ok(_) = assemble::<Infallible>(trace, &mut |a| {
        if let Assembled::Tree(tree) = a {
            let p = &processes[tree.process];
            for span in &tree.spans {
                names.add(span);
                threads.add(p.pid(), p.comm(), span);
            }
        }
        Ok(())
    });

    let ns = |ticks: u64| trace.clock().ticks_to_ns(ticks).unwrap_or(ticks);
    let threshold_ns = section_threshold.ns();
    let mut losses = losses::LossScan::default();
    let mut sections = sections::SectionScan::default();
    let mut long = Vec::new();
    let mut last_ns = 0;
    let Ok(()) = trace.for_each_event::<Infallible>(&mut |process, e, ts| {
        let at = ns(ts);
        last_ns = last_ns.max(at);
        losses.event(process, e, at);
        if let Some(s) = sections.event(trace, process, e.cpu, &e.payload, at) {
            if s.duration_ns > threshold_ns {
                long.push(s);
            }
        }
        Ok(())
    });
    let unclosed = sections.finish(trace, last_ns);
    long.extend(
        unclosed
            .into_iter()
            .filter(|s| s.duration_ns > threshold_ns),
    );
    sections::sort_longest_first(&mut long);
    let losses = losses.finish(trace, ns(trace.base()));

    Analysis {
        section_threshold_ns: threshold_ns,
        slowest_spans: names.finish(),
        span_time_per_thread: threads.finish(),
        losses_per_cpu_second: losses::per_cpu_second(trace, &losses),
        long_sections: long,
    }
}

#[cfg(test)]
mod tests;
