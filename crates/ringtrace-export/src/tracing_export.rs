//! How the dump's JSON and the trace-cmd and CTF exporters show `tracing`
//! records: the JSON with the callsite's level, target and name and the
//! span ids; the binary formats as one generic tracepoint with a text
//! payload (`text_tracepoint`).

use crate::metadata::{TraceMetadata, TracepointDesc};
use ringtrace_tracepoint::tracing_record::{self, TracingRecord, TEXT_TRACEPOINT_ID};
use ringtrace_tracepoint::FieldValue;
use serde_json::{Map, Value};

/// Adds a `tracing` record's `level`, `target`, `callsite`, `span`,
/// `parent` and `follows` to its dump JSON object.
pub(crate) fn insert_json(t: &TracingRecord<'_>, map: &mut Map<String, Value>) {
    map.insert("level".into(), Value::from(t.callsite.level.name()));
    map.insert("target".into(), Value::from(t.callsite.target.as_str()));
    map.insert("callsite".into(), Value::from(t.callsite.name.as_str()));
    if let Some(span) = t.span {
        map.insert("span".into(), Value::from(span));
    }
    if let Some(parent) = t.parent {
        map.insert("parent".into(), Value::from(parent));
    }
    if let Some(follows) = t.follows {
        map.insert("follows".into(), Value::from(follows));
    }
    if let Some(start) = t.start {
        map.insert("start".into(), Value::from(start));
    }
}

/// `meta` with the generic `tracing` tracepoint added when the trace has
/// `tracing` callsites among its metadata `records` (and no tracepoint has
/// its id), for the exporters that declare every event type up front.
pub(crate) fn with_text_tracepoint(meta: &TraceMetadata, records: &[Vec<u8>]) -> TraceMetadata {
    let mut meta = meta.clone();
    let has_callsites = !tracing_record::callsites(records).by_id.is_empty();
    if has_callsites && !meta.tracepoints.iter().any(|t| t.id == TEXT_TRACEPOINT_ID) {
        meta.tracepoints.push(text_tracepoint());
    }
    meta
}

/// The generic tracepoint, id [`TEXT_TRACEPOINT_ID`], under which the
/// trace-cmd and CTF exports show `tracing` records: their kind, level,
/// target, callsite name and text (without level and target), as
/// strings.
fn text_tracepoint() -> TracepointDesc {
    use crate::metadata::FieldDesc;
    use ringtrace_tracepoint::FieldKind::Str;
    TracepointDesc {
        name: "tracing".into(),
        id: TEXT_TRACEPOINT_ID,
        fields: vec![
            FieldDesc::new("record", Str),
            FieldDesc::new("level", Str),
            FieldDesc::new("target", Str),
            FieldDesc::new("callsite", Str),
            FieldDesc::new("text", Str),
        ],
        format: "{} {} {} {}: {}".into(),
    }
}

/// A `tracing` record as the generic tracepoint's event: its description
/// (from `meta`, made by [`with_text_tracepoint`]), thread and values.
pub(crate) fn as_text_event<'m>(
    t: &TracingRecord<'_>,
    meta: &'m TraceMetadata,
) -> Option<(&'m TracepointDesc, u32, Vec<FieldValue>)> {
    let desc = meta
        .tracepoints
        .iter()
        .find(|d| d.id == TEXT_TRACEPOINT_ID)?;
    Some((desc, t.tid, generic_values(t)))
}

/// The generic tracepoint's values for `t`, each string escaped as the
/// dump shows it (`crate::text::escape`): a newline, an ESC or a
/// bidirectional control in a field reaches `trace-cmd report` or
/// babeltrace2 as `\n`, `\x1b`, `\u{202e}`, never as itself.
pub(crate) fn generic_values(t: &TracingRecord<'_>) -> Vec<FieldValue> {
    t.generic_values()
        .into_iter()
        .map(|v| match v {
            FieldValue::Str(s) => FieldValue::Str(crate::text::escape(&s).into_owned()),
            other => other,
        })
        .collect()
}
