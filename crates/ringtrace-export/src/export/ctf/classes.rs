//! The CTF event classes of a trace: one per tracepoint of the file's
//! metadata, one for its untagged layout, and `ringtrace:raw` for payloads
//! that cannot be decoded; with TSDL identifiers for their fields.

use crate::decode::Decoded;
use crate::metadata::{FieldDesc, TraceMetadata};
use ringtrace_tracepoint::FieldKind;
use std::collections::HashMap;

/// The name of the event class of undecodable payloads.
pub(super) const RAW_EVENT: &str = "ringtrace:raw";

/// One field of an event class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CtfField {
    /// Its TSDL identifier: `_` then the name, each character that cannot
    /// be in an identifier made `_` (readers drop the leading underscore,
    /// which keeps TSDL keywords such as `string` usable as names).
    pub ident: String,
    /// Its type.
    pub kind: FieldKind,
    /// Whether its format prints it in hex (`{:x}`, `{:#x}`): an unsigned
    /// integer then gets `base = 16`.
    pub hex: bool,
}

/// What an event class's payload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Body {
    /// These fields.
    Fields(Vec<CtfField>),
    /// `why` (a string), `length` (u32), then `payload`: `length` u8s.
    Raw,
}

/// One event class; its id is its index in [`Classes::events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EventClass {
    /// The name readers show.
    pub name: String,
    /// Its payload.
    pub body: Body,
}

/// Every event class of a trace, and which one a decoded payload is.
#[derive(Debug, Clone)]
pub(super) struct Classes {
    /// The classes, by id.
    pub events: Vec<EventClass>,
    by_tracepoint: HashMap<u32, u32>,
    untagged: Option<u32>,
    raw: u32,
}

impl Classes {
    /// The classes for `meta` (only `ringtrace:raw` without metadata).
    pub fn new(meta: Option<&TraceMetadata>) -> Classes {
        let mut events = Vec::new();
        let mut by_tracepoint = HashMap::new();
        let mut untagged = None;
        if let Some(meta) = meta {
            for tp in &meta.tracepoints {
                by_tracepoint.insert(tp.id, events.len() as u32);
                events.push(EventClass {
                    name: tp.name.clone(),
                    body: Body::Fields(fields(&tp.fields, &tp.format)),
                });
            }
            if let Some(layout) = &meta.untagged {
                untagged = Some(events.len() as u32);
                events.push(EventClass {
                    name: layout.name.clone(),
                    body: Body::Fields(fields(&layout.fields, &layout.format)),
                });
            }
        }
        let raw = events.len() as u32;
        events.push(EventClass {
            name: RAW_EVENT.to_owned(),
            body: Body::Raw,
        });
        Classes {
            events,
            by_tracepoint,
            untagged,
            raw,
        }
    }

    /// The id of the class of `decoded`.
    pub fn id_of(&self, decoded: &Decoded<'_>) -> u32 {
        match decoded {
            Decoded::Tracepoint { desc, .. } => self
                .by_tracepoint
                .get(&desc.id)
                .copied()
                .unwrap_or(self.raw),
            Decoded::Untagged { .. } => self.untagged.unwrap_or(self.raw),
            // Under the generic `tracing` class the exporter adds to the
            // metadata (crate::tracing_export), raw without metadata.
            Decoded::Tracing(_) => self
                .by_tracepoint
                .get(&ringtrace_tracepoint::tracing_record::TEXT_TRACEPOINT_ID)
                .copied()
                .unwrap_or(self.raw),
            Decoded::Raw { .. } => self.raw,
        }
    }

    /// Whether `id` is the class of undecodable payloads.
    pub fn is_raw(&self, id: u32) -> bool {
        id == self.raw
    }
}

/// The CTF fields for `descs`, hex where `format` prints them so, with
/// identifiers made distinct.
fn fields(descs: &[FieldDesc], format: &str) -> Vec<CtfField> {
    let hex = hex_placeholders(format);
    let mut out: Vec<CtfField> = Vec::with_capacity(descs.len());
    for (i, d) in descs.iter().enumerate() {
        let base = identifier(&d.name);
        let mut ident = base.clone();
        let mut n = 2;
        while out.iter().any(|f| f.ident == ident) {
            ident = format!("{base}_{n}");
            n += 1;
        }
        let unsigned = matches!(
            d.kind,
            FieldKind::U8 | FieldKind::U16 | FieldKind::U32 | FieldKind::U64
        );
        out.push(CtfField {
            ident,
            kind: d.kind,
            hex: unsigned && hex.get(i).copied().unwrap_or(false),
        });
    }
    out
}

/// `_` and `name` with every character but ASCII letters, digits and `_`
/// made `_`.
pub(super) fn identifier(name: &str) -> String {
    format!("_{}", crate::text::c_identifier_chars(name))
}

/// For each placeholder of `format` in order, whether it prints in hex (the
/// placeholders [`render`](crate::render) knows).
fn hex_placeholders(format: &str) -> Vec<bool> {
    let mut out = Vec::new();
    let mut rest = format;
    while let Some(at) = rest.find('{') {
        rest = &rest[at..];
        match ["{}", "{:x}", "{:#x}"]
            .into_iter()
            .find(|s| rest.starts_with(s))
        {
            Some(spec) => {
                out.push(spec != "{}");
                rest = &rest[spec.len()..];
            }
            None => rest = &rest[1..],
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{EventLayout, TracepointDesc};

    #[test]
    fn field_identifiers_are_tsdl_identifiers_and_distinct() {
        let descs = [
            FieldDesc::new("string", FieldKind::U8),
            FieldDesc::new("a b", FieldKind::U8),
            FieldDesc::new("a_b", FieldKind::U8),
            FieldDesc::new("é", FieldKind::U8),
        ];
        let idents: Vec<String> = fields(&descs, "").into_iter().map(|f| f.ident).collect();
        assert_eq!(idents, ["_string", "_a_b", "_a_b_2", "__"]);
    }

    #[test]
    fn hex_placeholders_mark_unsigned_fields_hex() {
        let descs = [
            FieldDesc::new("a", FieldKind::U32),
            FieldDesc::new("b", FieldKind::U64),
            FieldDesc::new("c", FieldKind::I32),
            FieldDesc::new("d", FieldKind::U8),
        ];
        let hex: Vec<bool> = fields(&descs, "{ {} {:#x} {:x} {:x}")
            .into_iter()
            .map(|f| f.hex)
            .collect();
        assert_eq!(hex, [false, true, false, true]);
    }

    #[test]
    fn tracepoints_then_the_untagged_layout_then_raw() {
        let meta = TraceMetadata::new(vec![TracepointDesc {
            name: "tp".into(),
            id: 77,
            fields: vec![],
            format: String::new(),
        }])
        .with_untagged(EventLayout {
            name: "u".into(),
            fields: vec![],
            format: String::new(),
        });
        let c = Classes::new(Some(&meta));
        let names: Vec<&str> = c.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["tp", "u", RAW_EVENT]);
        let raw = Decoded::Raw { why: "x".into() };
        assert_eq!(c.id_of(&raw), 2);
        assert_eq!(Classes::new(None).events.len(), 1);
    }
}
