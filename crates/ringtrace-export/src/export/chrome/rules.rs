//! Which tracepoints become spans and which become counters in the Chrome
//! trace: rules on the tracepoint's name and fields alone, so that every
//! event of one tracepoint is shown the same way.

use crate::metadata::FieldDesc;
use ringtrace_tracepoint::FieldKind;

/// What a tracepoint's event does to its thread's spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanEdge {
    /// The span's name: `irqs off`, `preempt off`, `softirqs off`, or `X`
    /// for `X_enter`/`X_exit` and `X_start`/`X_stop`.
    pub span: String,
    /// The pair it belongs to: `disable/enable`, `enter/exit` or
    /// `start/stop`. An end closes only a span of its own name begun by
    /// its own pair.
    pub pair: &'static str,
    /// Whether it begins the span (else it ends it).
    pub begins: bool,
}

/// The preemptirq tracepoints and the spans they bound.
const PREEMPTIRQ: [(&str, &str, bool); 6] = [
    ("irq_disable", "irqs off", true),
    ("irq_enable", "irqs off", false),
    ("preempt_disable", "preempt off", true),
    ("preempt_enable", "preempt off", false),
    ("softirqs_disable", "softirqs off", true),
    ("softirqs_enable", "softirqs off", false),
];

/// Suffixes that name one end of a span `X`.
const SUFFIXES: [(&str, &str, bool); 4] = [
    ("_enter", "enter/exit", true),
    ("_exit", "enter/exit", false),
    ("_start", "start/stop", true),
    ("_stop", "start/stop", false),
];

/// The span rule: the preemptirq pairs (`irq_disable`/`irq_enable`,
/// `preempt_disable`/`preempt_enable`, `softirqs_disable`/`softirqs_enable`)
/// bound the spans `irqs off`, `preempt off` and `softirqs off`; a
/// tracepoint named `X_enter` or `X_start` begins a span `X` that
/// `X_exit` or `X_stop` (respectively) ends, `X` not empty. Any other
/// tracepoint is no span's edge.
///
/// ```
/// use ringtrace_export::export::chrome::span_edge;
/// let e = span_edge("irq_enable").unwrap();
/// assert_eq!((e.span.as_str(), e.begins), ("irqs off", false));
/// assert_eq!(span_edge("sys_read_enter").unwrap().span, "sys_read");
/// assert_eq!(span_edge("gc_stop").unwrap().pair, "start/stop");
/// assert!(span_edge("_exit").is_none() && span_edge("page_read").is_none());
/// ```
pub fn span_edge(tracepoint: &str) -> Option<SpanEdge> {
    if let Some((_, span, begins)) = PREEMPTIRQ.iter().find(|(n, _, _)| *n == tracepoint) {
        return Some(SpanEdge {
            span: (*span).to_owned(),
            pair: "disable/enable",
            begins: *begins,
        });
    }
    SUFFIXES.iter().find_map(|(suffix, pair, begins)| {
        let x = tracepoint.strip_suffix(suffix).filter(|x| !x.is_empty())?;
        Some(SpanEdge {
            span: x.to_owned(),
            pair,
            begins: *begins,
        })
    })
}

/// Whether a field holds a number a counter can draw: an integer or an
/// `f64` (not a bool, string or location).
fn numeric(f: &FieldDesc) -> bool {
    use FieldKind::*;
    matches!(f.kind, U8 | U16 | U32 | U64 | I8 | I16 | I32 | I64 | F64)
}

/// The counter rule: a tracepoint (not a span's edge, see [`span_edge`])
/// whose name ends with `_counter` and whose fields, at least one, are all
/// integers or `f64`; or one whose only field is a number named `value`.
/// Its events become counter samples, one series per field.
///
/// ```
/// use ringtrace_export::export::chrome::is_counter;
/// use ringtrace_export::FieldDesc;
/// use ringtrace_tracepoint::FieldKind;
/// let depth = [FieldDesc::new("depth", FieldKind::U32)];
/// assert!(is_counter("queue_counter", &depth));
/// assert!(!is_counter("queue", &depth));
/// assert!(is_counter("queue", &[FieldDesc::new("value", FieldKind::F64)]));
/// assert!(!is_counter("flag_counter", &[FieldDesc::new("on", FieldKind::Bool)]));
/// ```
pub fn is_counter(tracepoint: &str, fields: &[FieldDesc]) -> bool {
    let named =
        tracepoint.ends_with("_counter") && !fields.is_empty() && fields.iter().all(numeric);
    let value = matches!(fields, [f] if f.name == "value" && numeric(f));
    (named || value) && span_edge(tracepoint).is_none()
}
