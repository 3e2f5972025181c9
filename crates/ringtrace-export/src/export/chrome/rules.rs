//! Which tracepoints become spans and which become counters in the Chrome
//! trace: rules on the tracepoint's name and fields alone, so that every
//! event of one tracepoint is shown the same way.

use crate::metadata::FieldDesc;
use ringtrace_tracepoint::FieldKind;

/// The pair a `tracing` span's slices are drawn as.
pub(super) const SPAN_PAIR: &str = "tracing span";

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

/// The span rule, on a tracepoint's full name (`system:event`; a bare
/// event name, from a file written before tracepoints had systems, counts
/// as any system): the preemptirq pairs of system `preemptirq`
/// (`irq_disable`/`irq_enable`, `preempt_disable`/`preempt_enable`,
/// `softirqs_disable`/`softirqs_enable`) bound the spans `irqs off`,
/// `preempt off` and `softirqs off`; a tracepoint `S:X_enter` or
/// `S:X_start` begins a span `S:X` that `S:X_exit` or `S:X_stop`
/// (respectively) ends, `X` not empty. Any other tracepoint is no span's
/// edge.
///
/// ```
/// use ringtrace_export::export::chrome::span_edge;
/// let e = span_edge("preemptirq:irq_enable").unwrap();
/// assert_eq!((e.span.as_str(), e.begins), ("irqs off", false));
/// assert!(span_edge("app:irq_enable").is_none(), "not the built-in");
/// assert_eq!(span_edge("app:sys_read_enter").unwrap().span, "app:sys_read");
/// assert_eq!(span_edge("app:gc_stop").unwrap().pair, "start/stop");
/// assert!(span_edge("app:_exit").is_none() && span_edge("app:page_read").is_none());
/// assert_eq!(span_edge("irq_disable").unwrap().span, "irqs off"); // an older file
/// ```
pub fn span_edge(tracepoint: &str) -> Option<SpanEdge> {
    let (system, event) = match tracepoint.split_once(':') {
        Some((system, event)) => (Some(system), event),
        None => (None, tracepoint),
    };
    let builtin = PREEMPTIRQ
        .iter()
        .find(|(n, _, _)| *n == event)
        .filter(|_| matches!(system, None | Some("preemptirq")));
    if let Some((_, span, begins)) = builtin {
        return Some(SpanEdge {
            span: (*span).to_owned(),
            pair: "disable/enable",
            begins: *begins,
        });
    }
    SUFFIXES.iter().find_map(|(suffix, pair, begins)| {
        event.strip_suffix(suffix).filter(|x| !x.is_empty())?;
        let span = tracepoint.strip_suffix(suffix)?;
        Some(SpanEdge {
            span: span.to_owned(),
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
/// whose (full) name ends with `_counter` and whose fields, at least one, are all
/// integers or `f64`; or one whose only field is a number named `value`.
/// Its events become counter samples, one series per field.
///
/// ```
/// use ringtrace_export::export::chrome::is_counter;
/// use ringtrace_export::FieldDesc;
/// use ringtrace_tracepoint::FieldKind;
/// let depth = [FieldDesc::new("depth", FieldKind::U32)];
/// assert!(is_counter("app:queue_counter", &depth));
/// assert!(!is_counter("app:queue", &depth));
/// assert!(is_counter("app:queue", &[FieldDesc::new("value", FieldKind::F64)]));
/// assert!(!is_counter("app:flag_counter", &[FieldDesc::new("on", FieldKind::Bool)]));
/// ```
pub fn is_counter(tracepoint: &str, fields: &[FieldDesc]) -> bool {
    let named =
        tracepoint.ends_with("_counter") && !fields.is_empty() && fields.iter().all(numeric);
    let value = matches!(fields, [f] if f.name == "value" && numeric(f));
    (named || value) && span_edge(tracepoint).is_none()
}
