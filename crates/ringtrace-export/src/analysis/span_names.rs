//! The slowest spans by name: for each span name, how many spans, how
//! many never closed, and their durations' p50, p99, maximum and total.

use super::rank::nearest_rank;
use crate::spans::SpanData;
use serde::Serialize;
use std::collections::HashMap;

/// The durations of the spans of one name (of every process of the
/// trace), as the `slowest_spans` query of docs/analysis.md computes
/// them from the `spans` table's `duration_ns` (end minus start; for a
/// span that never closed, up to the trace's last time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SpanNameStats {
    /// The spans' name.
    pub name: String,
    /// How many spans have it.
    pub spans: u64,
    /// How many of them never closed in the trace.
    pub unclosed: u64,
    /// The median duration, ns, by nearest rank ([`nearest_rank`]).
    pub p50_ns: u64,
    /// The 99th percentile duration, ns, by nearest rank.
    pub p99_ns: u64,
    /// The longest duration, ns.
    pub max_ns: u64,
    /// The durations summed, ns.
    pub total_ns: u64,
}

/// The spans' durations gathered by name.
#[derive(Debug, Default)]
pub(super) struct SpanNames {
    by_name: HashMap<String, Durations>,
}

#[derive(Debug, Default)]
struct Durations {
    ns: Vec<u64>,
    unclosed: u64,
}

impl SpanNames {
    /// Counts one span.
    pub fn add(&mut self, span: &SpanData) {
        let d = self.by_name.entry(span.name.clone()).or_default();
        d.ns.push(span.duration_ns());
        d.unclosed += u64::from(!span.closed);
    }

    /// One row per name: by p99 descending, then the maximum descending,
    /// then the name (bytewise).
    pub fn finish(self) -> Vec<SpanNameStats> {
        let mut rows: Vec<SpanNameStats> = self
            .by_name
            .into_iter()
            .map(|(name, mut d)| {
                d.ns.sort_unstable();
                SpanNameStats {
                    name,
                    spans: d.ns.len() as u64,
                    unclosed: d.unclosed,
                    p50_ns: nearest_rank(&d.ns, 50).unwrap_or(0),
                    p99_ns: nearest_rank(&d.ns, 99).unwrap_or(0),
                    max_ns: d.ns.last().copied().unwrap_or(0),
                    total_ns: d.ns.iter().fold(0u64, |t, &n| t.saturating_add(n)),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            (b.p99_ns, b.max_ns)
                .cmp(&(a.p99_ns, a.max_ns))
                .then_with(|| a.name.cmp(&b.name))
        });
        rows
    }
}
