//! One Chrome trace event and its JSON: the timestamp written in µs as an
//! exact decimal (the ns kept as the fraction), never through a float.

use serde_json::{Map, Value};
use std::io::{self, Write};

/// A timestamp since the trace's base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ts {
    /// Nanoseconds, written as µs with three decimals (trailing zeros
    /// dropped): 1234567 ns is `1234.567`.
    Ns(u64),
    /// Ticks of a clock whose ticks are not time, written as whole µs.
    Ticks(u64),
}

impl Ts {
    /// How long from `earlier` to `self`, in the same unit (zero when
    /// `earlier` is later, or of the other unit, which one trace never
    /// mixes).
    pub(super) fn since(self, earlier: Ts) -> Ts {
        match (self, earlier) {
            (Ts::Ns(a), Ts::Ns(b)) => Ts::Ns(a.saturating_sub(b)),
            (Ts::Ticks(a), Ts::Ticks(b)) => Ts::Ticks(a.saturating_sub(b)),
            (Ts::Ns(_), Ts::Ticks(_)) => Ts::Ns(0),
            (Ts::Ticks(_), Ts::Ns(_)) => Ts::Ticks(0),
        }
    }

    /// The JSON number, exact.
    ///
    /// ```text
    /// Ns(1_234_567) → 1234.567    Ns(1_234_500) → 1234.5
    /// Ns(5_000)     → 5           Ticks(42)     → 42
    /// ```
    pub(super) fn json(self) -> String {
        match self {
            Ts::Ticks(t) => t.to_string(),
            Ts::Ns(ns) if ns % 1000 == 0 => (ns / 1000).to_string(),
            Ts::Ns(ns) => {
                let frac = format!("{:03}", ns % 1000);
                format!("{}.{}", ns / 1000, frac.trim_end_matches('0'))
            }
        }
    }
}

/// An instant's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// On its thread's track.
    Thread,
    /// On its process's track.
    Process,
}

/// The event type (`ph`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// `M`: a process or thread name.
    Metadata,
    /// `B`: a span begins on its thread.
    Begin,
    /// `E`: the innermost open span of its thread ends.
    End,
    /// `i`: an instant.
    Instant(Scope),
    /// `C`: a counter sample; every arg is a series.
    Counter,
    /// `X`: a whole slice, from `ts` for this long (a local span, written
    /// once at its end).
    Complete(Ts),
}

/// One event of the `traceEvents` array; `pid` is the writer's, given
/// when written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ChromeEvent {
    pub name: String,
    /// `cat`: `tracepoint`, `untagged`, `raw` or `ringtrace` (what the
    /// exporter adds: names, losses, spans split or closed).
    pub cat: &'static str,
    pub ph: Phase,
    pub ts: Ts,
    pub tid: u32,
    pub args: Map<String, Value>,
}

impl ChromeEvent {
    /// Writes the event as one JSON object.
    pub(super) fn write(&self, pid: u32, w: &mut dyn Write) -> io::Result<()> {
        let dur;
        let (ph, scope) = match self.ph {
            Phase::Metadata => ("M", ""),
            Phase::Begin => ("B", ""),
            Phase::End => ("E", ""),
            Phase::Instant(Scope::Thread) => ("i", r#","s":"t""#),
            Phase::Instant(Scope::Process) => ("i", r#","s":"p""#),
            Phase::Counter => ("C", ""),
            Phase::Complete(d) => {
                dur = format!(r#","dur":{}"#, d.json());
                ("X", dur.as_str())
            }
        };
        write!(
            w,
            r#"{{"name":{},"cat":"{}","ph":"{ph}"{scope},"ts":{},"pid":{pid},"tid":{},"args":"#,
            Value::from(self.name.as_str()),
            self.cat,
            self.ts.json(),
            self.tid,
        )?;
        serde_json::to_writer(&mut *w, &self.args)?;
        w.write_all(b"}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_exact_decimal_microseconds() {
        assert_eq!(Ts::Ns(1_234_567).json(), "1234.567");
        assert_eq!(Ts::Ns(1_234_500).json(), "1234.5");
        assert_eq!(Ts::Ns(1_234_050).json(), "1234.05");
        assert_eq!(Ts::Ns(5_000).json(), "5");
        assert_eq!(Ts::Ns(7).json(), "0.007");
        assert_eq!(Ts::Ns(0).json(), "0");
        assert_eq!(Ts::Ns(u64::MAX).json(), "18446744073709551.615");
        assert_eq!(Ts::Ticks(42).json(), "42");
    }

    #[test]
    fn a_complete_slice_carries_its_duration() {
        let e = ChromeEvent {
            name: "parse".into(),
            cat: "tracing",
            ph: Phase::Complete(Ts::Ns(2_500).since(Ts::Ns(1_000))),
            ts: Ts::Ns(1_000),
            tid: 3,
            args: Map::new(),
        };
        let mut out = Vec::new();
        e.write(4, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"name":"parse","cat":"tracing","ph":"X","dur":1.5,"ts":1,"pid":4,"tid":3,"args":{}}"#
        );
    }

    #[test]
    fn an_event_is_one_json_object_with_its_scope_and_escaped_name() {
        let mut args = Map::new();
        args.insert("cpu".into(), Value::from(1));
        let e = ChromeEvent {
            name: "a\"b".into(),
            cat: "tracepoint",
            ph: Phase::Instant(Scope::Thread),
            ts: Ts::Ns(1500),
            tid: 9,
            args,
        };
        let mut out = Vec::new();
        e.write(4, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            r#"{"name":"a\"b","cat":"tracepoint","ph":"i","s":"t","ts":1.5,"pid":4,"tid":9,"args":{"cpu":1}}"#
        );
    }
}
