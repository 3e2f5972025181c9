//! Turning a recovered payload into its event, by the file's metadata
//! (never by the running program's registry).

use super::metadata::{EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_tracepoint::tracing_record::{self, Callsite, TracingRecord};
use ringtrace_tracepoint::{decode_field, FieldValue, EVENT_HEADER_LEN};
use std::borrow::Cow;
use std::collections::HashMap;

/// Decodes payloads by a file's metadata.
///
/// The rule: a payload whose first four bytes are the id of a tracepoint
/// in the metadata, and whose fields then fill it exactly, is that
/// tracepoint's event. Otherwise, if the metadata has an untagged layout
/// and the payload is exactly its fields, it is an untagged event.
/// Anything else is shown raw, with the reason.
///
/// ```
/// use ringtrace_export::{metadata_for_tracepoints, Decoded, Decoder, EventLayout, FieldDesc};
/// use ringtrace_tracepoint::FieldKind;
/// let meta = metadata_for_tracepoints()?.with_untagged(EventLayout {
///     name: "sample".into(),
///     fields: vec![FieldDesc::new("v", FieldKind::U16)],
///     format: "v={:#x}".into(),
/// });
/// let decoder = Decoder::new(&meta);
/// let event = decoder.decode(&[0x2a, 0]);
/// assert_eq!((event.name(), event.text()), (Some("sample"), "v=0x2a".to_owned()));
/// assert!(matches!(decoder.decode(&[1, 2, 3]), Decoded::Raw { .. }));
/// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Decoder {
    by_id: HashMap<u32, TracepointDesc>,
    untagged: Option<EventLayout>,
    /// Why there is nothing to decode by, when there is not.
    unusable: Option<String>,
    /// The file's metadata records appended at run time (its metadata
    /// annex), in order.
    metadata_records: Vec<Vec<u8>>,
    /// The `tracing` callsites among them, by id.
    callsites: HashMap<u32, Callsite>,
    /// Records that are damaged callsites, in words.
    callsite_problems: Vec<String>,
}

/// One payload, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded<'d> {
    /// A tracepoint's event.
    Tracepoint {
        /// The tracepoint.
        desc: &'d TracepointDesc,
        /// The id of the thread that recorded it.
        tid: u32,
        /// Its field values, in order.
        values: Vec<FieldValue>,
    },
    /// An event of the untagged layout.
    Untagged {
        /// The layout.
        layout: &'d EventLayout,
        /// Its field values, in order.
        values: Vec<FieldValue>,
    },
    /// A `tracing` record (ringtrace-tracing's layer or a local span),
    /// decoded by its callsite's record (see [`tracing_record`]).
    Tracing(TracingRecord<'d>),
    /// Not decodable.
    Raw {
        /// Why, in words.
        why: String,
    },
}

impl Decoded<'_> {
    /// The event's name: the tracepoint's full name (`system:event`), or
    /// the layout's.
    pub fn name(&self) -> Option<&str> {
        match self {
            Decoded::Tracepoint { desc, .. } => Some(&desc.name),
            Decoded::Untagged { layout, .. } => Some(&layout.name),
            Decoded::Tracing(r) => Some(r.kind.name()),
            Decoded::Raw { .. } => None,
        }
    }

    /// The thread id the event carries (tracepoint events only).
    pub fn tid(&self) -> Option<u32> {
        match self {
            Decoded::Tracepoint { tid, .. } => Some(*tid),
            Decoded::Tracing(r) => Some(r.tid),
            _ => None,
        }
    }

    /// The fields with their names, in order (none for a raw payload).
    pub fn fields(&self) -> Vec<(&str, &FieldValue)> {
        let (fields, values) = match self {
            Decoded::Tracepoint { desc, values, .. } => (&desc.fields, values),
            Decoded::Untagged { layout, values } => (&layout.fields, values),
            Decoded::Tracing(r) => return r.fields.iter().map(|f| (f.name, &f.value)).collect(),
            Decoded::Raw { .. } => return Vec::new(),
        };
        fields
            .iter()
            .map(|f| f.name.as_str())
            .zip(values.iter())
            .collect()
    }

    /// The fields by the event's format (empty for a raw payload). A
    /// string field that is not UTF-8 shows U+FFFD for its bytes that are
    /// not.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.text_bytes()).into_owned()
    }

    /// [`text`](Decoded::text) with each string field's bytes as they
    /// were written, for the dump to escape.
    pub(crate) fn text_bytes(&self) -> Vec<u8> {
        match self {
            Decoded::Tracepoint { desc, values, .. } => render_bytes(&desc.format, values),
            Decoded::Untagged { layout, values } => render_bytes(&layout.format, values),
            Decoded::Tracing(r) => r.text_bytes(),
            Decoded::Raw { .. } => Vec::new(),
        }
    }
}

impl Decoder {
    /// A decoder for `meta`.
    pub fn new(meta: &TraceMetadata) -> Decoder {
        Decoder {
            by_id: meta.tracepoints.iter().map(|t| (t.id, t.clone())).collect(),
            untagged: meta.untagged.clone(),
            unusable: None,
            metadata_records: Vec::new(),
            callsites: HashMap::new(),
            callsite_problems: Vec::new(),
        }
    }

    /// The decoder of a ring whose metadata (JSON, as the ring file
    /// holds it) is `metadata` and whose metadata records so far are
    /// `records`; one that shows every payload raw, saying why, when the
    /// metadata does not parse. For readers of rings being written, which
    /// have no [`Recovery`](ringtrace_ring::file::Recovery).
    pub fn for_ring(metadata: &[u8], records: &[Vec<u8>]) -> Decoder {
        match TraceMetadata::parse(metadata) {
            Ok(meta) => Decoder::new(&meta),
            Err(e) => Decoder::unusable(e.to_string()),
        }
        .with_metadata_records(records.to_vec())
    }

    /// A decoder with no metadata, which shows every payload raw giving
    /// `why`.
    pub fn unusable(why: impl Into<String>) -> Decoder {
        Decoder {
            by_id: HashMap::new(),
            untagged: None,
            unusable: Some(why.into()),
            metadata_records: Vec::new(),
            callsites: HashMap::new(),
            callsite_problems: Vec::new(),
        }
    }

    /// This decoder with the trace's metadata records beside its metadata
    /// (`Recovery::metadata_records`: what a `tracing` layer appended at
    /// run time). [`metadata_decoder`](crate::metadata_decoder) sets them.
    /// The `tracing` callsites among them decode the `tracing` records
    /// (even when the metadata itself is unusable); other records are kept
    /// as they are.
    pub fn with_metadata_records(mut self, records: Vec<Vec<u8>>) -> Decoder {
        let found = tracing_record::callsites(&records);
        (self.callsites, self.callsite_problems) = (found.by_id, found.problems);
        self.metadata_records = records;
        self
    }

    /// The `tracing` callsites among the metadata records, by id.
    pub fn callsites(&self) -> &HashMap<u32, Callsite> {
        &self.callsites
    }

    /// What is wrong with metadata records that are damaged callsite
    /// records, in words.
    pub fn callsite_problems(&self) -> &[String] {
        &self.callsite_problems
    }

    /// The trace's metadata records appended at run time, in order (empty
    /// unless set by [`Decoder::with_metadata_records`]).
    pub fn metadata_records(&self) -> &[Vec<u8>] {
        &self.metadata_records
    }

    /// Decodes one payload; never panics, whatever its bytes.
    pub fn decode(&self, payload: &[u8]) -> Decoded<'_> {
        match tracing_record::decode(payload, &self.callsites) {
            Ok(Some(record)) => return Decoded::Tracing(record),
            Ok(None) => {}
            Err(why) => {
                return Decoded::Raw {
                    why: why.to_string(),
                }
            }
        }
        if let Some(why) = &self.unusable {
            return Decoded::Raw { why: why.clone() };
        }
        let id = payload
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let tagged = id.and_then(|id| self.by_id.get(&id).map(|d| (id, d)));
        let mut why = match (id, tagged) {
            (Some(_), Some((_, desc))) => match payload.get(4..EVENT_HEADER_LEN) {
                Some(t) => match fill(&desc.fields, &payload[EVENT_HEADER_LEN..]) {
                    Ok(values) => {
                        return Decoded::Tracepoint {
                            desc,
                            tid: u32::from_le_bytes([t[0], t[1], t[2], t[3]]),
                            values,
                        }
                    }
                    Err(e) => format!("tracepoint `{}`: {e}", desc.name),
                },
                None => format!(
                    "tracepoint `{}`: {} bytes is too short for its id and thread id",
                    desc.name,
                    payload.len()
                ),
            },
            (Some(id), None) => {
                format!("no tracepoint in the file's metadata has id {id:#010x}")
            }
            (None, _) => format!("{} bytes is too short for a tracepoint id", payload.len()),
        };
        if let Some(layout) = &self.untagged {
            match fill(&layout.fields, payload) {
                Ok(values) => return Decoded::Untagged { layout, values },
                Err(e) => {
                    why.push_str(&format!("; not the untagged `{}` layout: {e}", layout.name))
                }
            }
        }
        Decoded::Raw { why }
    }
}

/// Decodes `fields` from `bytes`, which they must fill exactly.
fn fill(fields: &[FieldDesc], mut bytes: &[u8]) -> Result<Vec<FieldValue>, String> {
    let mut values = Vec::with_capacity(fields.len());
    for f in fields {
        let (value, used) =
            decode_field(f.kind, bytes).ok_or_else(|| format!("field `{}` is cut off", f.name))?;
        values.push(value);
        bytes = bytes.get(used..).unwrap_or_default();
    }
    if !bytes.is_empty() {
        return Err(format!(
            "{} bytes are left after its last field",
            bytes.len()
        ));
    }
    Ok(values)
}

/// Fills the placeholders of `format` with `values` in order: `{}` as the
/// value is shown, `{:x}` and `{:#x}` an integer in hex (bare, or with
/// `0x`). Extra placeholders stay as they are; extra values are appended,
/// as [`ringtrace_tracepoint::render`] does. A string value that is not
/// UTF-8 is kept as its bytes.
fn render_bytes(format: &str, values: &[FieldValue]) -> Vec<u8> {
    let mut out = Vec::with_capacity(format.len() + 8 * values.len());
    let mut values = values.iter();
    let mut rest = format;
    while let Some(at) = rest.find('{') {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        rest = &rest[at..];
        let spec = ["{}", "{:x}", "{:#x}"]
            .into_iter()
            .find(|s| rest.starts_with(s));
        let Some(spec) = spec else {
            out.push(b'{');
            rest = &rest[1..];
            continue;
        };
        match values.next() {
            Some(v) => out.extend_from_slice(&shown(v, spec)),
            None => out.extend_from_slice(spec.as_bytes()),
        }
        rest = &rest[spec.len()..];
    }
    out.extend_from_slice(rest.as_bytes());
    for v in values {
        out.push(b' ');
        out.extend_from_slice(&v.shown_bytes());
    }
    out
}

fn shown<'v>(v: &'v FieldValue, spec: &str) -> Cow<'v, [u8]> {
    let hex = match (v, spec) {
        (FieldValue::Unsigned(n), "{:x}") => format!("{n:x}"),
        (FieldValue::Unsigned(n), "{:#x}") => format!("{n:#x}"),
        (FieldValue::Signed(n), "{:x}") => format!("{n:x}"),
        (FieldValue::Signed(n), "{:#x}") => format!("{n:#x}"),
        _ => return v.shown_bytes(),
    };
    Cow::Owned(hex.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`render_bytes`] as text.
    fn render(format: &str, values: &[FieldValue]) -> String {
        String::from_utf8_lossy(&render_bytes(format, values)).into_owned()
    }
    use ringtrace_tracepoint::FieldKind;

    fn meta() -> TraceMetadata {
        TraceMetadata::new(vec![TracepointDesc {
            name: "tp".into(),
            id: 0x0102_0304,
            fields: vec![
                FieldDesc::new("n", FieldKind::U32),
                FieldDesc::new("s", FieldKind::Str),
            ],
            format: "n={} s={}".into(),
        }])
    }

    fn event(tid: u32, n: u32, s: &str) -> Vec<u8> {
        let mut p = 0x0102_0304u32.to_le_bytes().to_vec();
        p.extend_from_slice(&tid.to_le_bytes());
        p.extend_from_slice(&n.to_le_bytes());
        p.extend_from_slice(&(s.len() as u16).to_le_bytes());
        p.extend_from_slice(s.as_bytes());
        p
    }

    #[test]
    fn a_tracepoint_event_decodes_with_its_thread_id() {
        let m = meta();
        let d = Decoder::new(&m);
        let got = d.decode(&event(77, 5, "hi"));
        assert_eq!(got.name(), Some("tp"));
        assert_eq!(got.tid(), Some(77));
        assert_eq!(got.text(), "n=5 s=hi");
        assert_eq!(got.fields()[1], ("s", &FieldValue::Str("hi".into())));
    }

    #[test]
    fn cut_off_unknown_or_overlong_payloads_are_raw_with_a_reason() {
        let m = meta();
        let d = Decoder::new(&m);
        let full = event(1, 2, "abc");
        for cut in 0..full.len() {
            let Decoded::Raw { why } = d.decode(&full[..cut]) else {
                panic!("{cut} bytes decoded");
            };
            assert!(!why.is_empty());
        }
        let Decoded::Raw { why } = d.decode(&full[..10]) else {
            panic!()
        };
        assert!(why.contains("field `n` is cut off"), "{why}");
        let Decoded::Raw { why } = d.decode(&[9, 9, 9, 9, 0, 0, 0, 0]) else {
            panic!()
        };
        assert!(
            why.contains("no tracepoint") && why.contains("0x09090909"),
            "{why}"
        );
        let mut long = full.clone();
        long.push(0);
        let Decoded::Raw { why } = d.decode(&long) else {
            panic!()
        };
        assert!(why.contains("1 bytes are left"), "{why}");
        let Decoded::Raw { why } = Decoder::unusable("no metadata").decode(&full) else {
            panic!()
        };
        assert_eq!(why, "no metadata");
    }

    #[test]
    fn untagged_payloads_decode_when_no_tracepoint_fits() {
        let m = meta().with_untagged(EventLayout {
            name: "u".into(),
            fields: vec![
                FieldDesc::new("a", FieldKind::U16),
                FieldDesc::new("b", FieldKind::I32),
            ],
            format: "a={} b={:#x} c={:x}".into(),
        });
        let d = Decoder::new(&m);
        let got = d.decode(&[1, 0, 0xff, 0, 0, 0]);
        assert_eq!(got.name(), Some("u"));
        assert_eq!(got.tid(), None);
        assert_eq!(got.text(), "a=1 b=0xff c={:x}");
        let Decoded::Raw { why } = d.decode(&[1, 0, 0xff]) else {
            panic!()
        };
        assert!(
            why.contains("untagged `u` layout: field `b` is cut off"),
            "{why}"
        );
        // A tracepoint's event still wins when it fits exactly.
        assert_eq!(d.decode(&event(3, 4, "")).name(), Some("tp"));
    }

    #[test]
    fn render_handles_stray_braces() {
        let v = [FieldValue::Unsigned(10), FieldValue::Signed(-1)];
        assert_eq!(render("{ {x} {:x}", &v), "{ {x} a -1");
        assert_eq!(render("{", &[]), "{");
        assert_eq!(render("é{}", &v[..1]), "é10");
    }
}
