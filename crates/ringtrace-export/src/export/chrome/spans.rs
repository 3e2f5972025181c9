//! The spans open on each thread, kept so that every thread's `B` and `E`
//! events nest, as the Chrome format requires (an `E` ends the innermost
//! open span of its thread).
//!
//! An end closes the most recent open span of its name and pair on its
//! thread. When spans begun after that one are still open (irqs disabled
//! inside a preempt-off span, then preemption enabled first), they are
//! ended at that instant and begun again right after it with their
//! begin's args and `continued: true`, so each span still covers exactly
//! its own time. A `tracing` span exited or closed on another thread than
//! the one that entered it ends on the entering thread. An end with no
//! open span to close is no `E`: the caller shows it as an instant and it
//! is counted. Spans still open when the
//! trace ends are closed at its last timestamp with `unclosed: true`.

use super::event::{ChromeEvent, Phase, Ts};
use super::rules::SpanEdge;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A span begun and not yet ended.
#[derive(Debug)]
struct Open {
    span: String,
    pair: &'static str,
    /// The begin's args, repeated when the span is begun again.
    args: Map<String, Value>,
}

/// Every thread's open spans, innermost last.
#[derive(Debug, Default)]
pub(super) struct Spans {
    open: BTreeMap<u32, Vec<Open>>,
    /// Spans ended early and begun again to keep the nesting.
    pub split: u64,
}

/// The category of a span of `pair`: `tracing` for a `tracing` span, as
/// its events have; `tracepoint` for a pair of tracepoints.
fn category(pair: &str) -> &'static str {
    if pair == super::rules::SPAN_PAIR {
        "tracing"
    } else {
        "tracepoint"
    }
}

fn event(
    name: &str,
    pair: &str,
    ph: Phase,
    ts: Ts,
    tid: u32,
    args: Map<String, Value>,
) -> ChromeEvent {
    ChromeEvent {
        name: name.to_owned(),
        cat: category(pair),
        ph,
        ts,
        tid,
        args,
    }
}

impl Spans {
    /// Begins `edge`'s span on `tid`.
    pub(super) fn begin(
        &mut self,
        edge: &SpanEdge,
        tid: u32,
        ts: Ts,
        args: Map<String, Value>,
        out: &mut Vec<ChromeEvent>,
    ) {
        out.push(event(
            &edge.span,
            edge.pair,
            Phase::Begin,
            ts,
            tid,
            args.clone(),
        ));
        self.open.entry(tid).or_default().push(Open {
            span: edge.span.clone(),
            pair: edge.pair,
            args,
        });
    }

    /// Ends `edge`'s span on `tid` with `args`; `cpu` goes into the args of
    /// the spans split around it. Returns `false`, writing nothing, when
    /// no such span is open.
    pub(super) fn end(
        &mut self,
        edge: &SpanEdge,
        tid: u32,
        ts: Ts,
        cpu: usize,
        args: Map<String, Value>,
        out: &mut Vec<ChromeEvent>,
    ) -> bool {
        let Some(stack) = self.open.get(&tid) else {
            return false;
        };
        let Some(at) = stack
            .iter()
            .rposition(|o| o.span == edge.span && o.pair == edge.pair)
        else {
            return false;
        };
        self.end_at(tid, at, ts, cpu, args, out);
        true
    }

    /// Ends the open slice of `tracing` span `id` (its begin's `span`
    /// arg) on whichever thread began it, at `ts`: for a span exited or
    /// closed on another thread than the one that entered it (an `E` must
    /// be on its `B`'s thread). Returns `false`, writing nothing, when no
    /// slice of it is open.
    pub(super) fn end_span(
        &mut self,
        id: u64,
        ts: Ts,
        cpu: usize,
        args: Map<String, Value>,
        out: &mut Vec<ChromeEvent>,
    ) -> bool {
        let found = self.open.iter().find_map(|(&tid, stack)| {
            stack
                .iter()
                .rposition(|o| o.args.get("span").and_then(Value::as_u64) == Some(id))
                .map(|at| (tid, at))
        });
        let Some((tid, at)) = found else {
            return false;
        };
        self.end_at(tid, at, ts, cpu, args, out);
        true
    }

    /// Ends the open span `at` of `tid`'s stack, splitting those begun
    /// after it.
    fn end_at(
        &mut self,
        tid: u32,
        at: usize,
        ts: Ts,
        cpu: usize,
        args: Map<String, Value>,
        out: &mut Vec<ChromeEvent>,
    ) {
        let Some(stack) = self.open.get_mut(&tid) else {
            return;
        };
        let inner = stack.split_off(at + 1);
        let Some(ended) = stack.pop() else {
            return;
        };
        for o in inner.iter().rev() {
            let mut split = Map::new();
            split.insert("cpu".into(), Value::from(cpu));
            split.insert("split_by_end_of".into(), Value::from(ended.span.as_str()));
            out.push(event(&o.span, o.pair, Phase::End, ts, tid, split));
        }
        out.push(event(&ended.span, ended.pair, Phase::End, ts, tid, args));
        for o in inner {
            let mut again = o.args.clone();
            again.insert("continued".into(), Value::Bool(true));
            out.push(event(&o.span, o.pair, Phase::Begin, ts, tid, again));
            self.split += 1;
            stack.push(o);
        }
    }

    /// Ends every span still open at `ts`, innermost first; returns how
    /// many.
    pub(super) fn close_all(&mut self, ts: Ts, out: &mut Vec<ChromeEvent>) -> u64 {
        let mut closed = 0;
        for (tid, stack) in std::mem::take(&mut self.open) {
            for o in stack.into_iter().rev() {
                let mut args = Map::new();
                if let Some(cpu) = o.args.get("cpu") {
                    args.insert("cpu".into(), cpu.clone());
                }
                args.insert("unclosed".into(), Value::Bool(true));
                out.push(ChromeEvent {
                    cat: "ringtrace",
                    ..event(&o.span, o.pair, Phase::End, ts, tid, args)
                });
                closed += 1;
            }
        }
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::super::rules::span_edge;
    use super::*;

    fn names(out: &[ChromeEvent]) -> Vec<String> {
        out.iter()
            .map(|e| {
                let ph = match e.ph {
                    Phase::Begin => "B",
                    Phase::End => "E",
                    _ => "?",
                };
                format!("{ph} {}", e.name)
            })
            .collect()
    }

    #[test]
    fn interleaved_spans_are_split_so_that_each_thread_nests() {
        let mut spans = Spans::default();
        let mut out = Vec::new();
        let edge = |n| span_edge(n).unwrap();
        spans.begin(&edge("preempt_disable"), 1, Ts::Ns(1), Map::new(), &mut out);
        spans.begin(&edge("irq_disable"), 1, Ts::Ns(2), Map::new(), &mut out);
        assert!(spans.end(
            &edge("preempt_enable"),
            1,
            Ts::Ns(3),
            0,
            Map::new(),
            &mut out
        ));
        assert!(spans.end(&edge("irq_enable"), 1, Ts::Ns(4), 0, Map::new(), &mut out));
        assert!(!spans.end(&edge("irq_enable"), 1, Ts::Ns(5), 0, Map::new(), &mut out));
        assert!(!spans.end(&edge("irq_enable"), 2, Ts::Ns(5), 0, Map::new(), &mut out));
        assert_eq!(
            names(&out),
            [
                "B preempt off",
                "B irqs off",
                "E irqs off",
                "E preempt off",
                "B irqs off",
                "E irqs off"
            ]
        );
        assert_eq!(out[4].args["continued"], true);
        assert_eq!(spans.split, 1);
        assert_eq!(spans.close_all(Ts::Ns(6), &mut out), 0);
    }

    #[test]
    fn a_span_ended_by_its_id_ends_on_the_thread_that_began_it() {
        let mut spans = Spans::default();
        let mut out = Vec::new();
        let edge = |n| span_edge(n).unwrap();
        let with_id = |id: u64| {
            let mut args = Map::new();
            args.insert("span".into(), Value::from(id));
            args
        };
        spans.begin(&edge("io_enter"), 7, Ts::Ns(1), with_id(5), &mut out);
        spans.begin(&edge("io_enter"), 7, Ts::Ns(2), with_id(6), &mut out);
        assert!(!spans.end_span(9, Ts::Ns(3), 0, Map::new(), &mut out));
        // Span 5 ends (as if exited on thread 8): on thread 7, splitting 6.
        assert!(spans.end_span(5, Ts::Ns(3), 0, Map::new(), &mut out));
        assert!(out[2..].iter().all(|e| e.tid == 7));
        assert_eq!(names(&out), ["B io", "B io", "E io", "E io", "B io"]);
        assert!(!spans.end_span(5, Ts::Ns(4), 0, Map::new(), &mut out));
        assert!(spans.end_span(6, Ts::Ns(4), 0, Map::new(), &mut out));
        assert_eq!(spans.close_all(Ts::Ns(9), &mut out), 0);
    }

    #[test]
    fn an_end_closes_only_its_own_pair_and_open_spans_close_at_the_end() {
        let mut spans = Spans::default();
        let mut out = Vec::new();
        let edge = |n| span_edge(n).unwrap();
        spans.begin(&edge("io_start"), 7, Ts::Ns(1), Map::new(), &mut out);
        spans.begin(&edge("io_enter"), 7, Ts::Ns(2), Map::new(), &mut out);
        spans.begin(&edge("io_enter"), 8, Ts::Ns(2), Map::new(), &mut out);
        assert!(spans.end(&edge("io_stop"), 7, Ts::Ns(3), 0, Map::new(), &mut out));
        assert_eq!(spans.close_all(Ts::Ns(9), &mut out), 2);
        assert_eq!(
            names(&out),
            ["B io", "B io", "B io", "E io", "E io", "B io", "E io", "E io"]
        );
        assert!(out[6..].iter().all(|e| e.args["unclosed"] == true));
    }
}
