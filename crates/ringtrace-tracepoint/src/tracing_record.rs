//! The wire format of `tracing` records: what ringtrace-tracing's layer
//! and local spans write into the ring, and the callsite descriptions
//! they append to the ring's metadata annex. The writer and every reader
//! (decoder, dump, exporters) share these definitions.
//!
//! # Records
//!
//! Every record starts as a tracepoint event does: its kind's id (u32,
//! little-endian, in [`RESERVED_IDS`], which no tracepoint may have: the
//! registry's `check` refuses one), the writing thread's id (u32),
//! then the callsite's id (u32, from a [`Callsite`] record). Then, by
//! kind:
//!
//! | kind | after the callsite id |
//! |------|-----------------------|
//! | [`RecordKind::Event`] | field count (u8), fields |
//! | [`RecordKind::EventIn`] | its parent span's id (u64, 0: none), field count (u8), fields |
//! | [`RecordKind::SpanNew`] | span id (u64), parent span id (u64, 0: a root), field count (u8), fields |
//! | [`RecordKind::SpanRecord`] | span id (u64), field count (u8), fields |
//! | [`RecordKind::SpanEnter`], [`SpanExit`](RecordKind::SpanExit), [`SpanClose`](RecordKind::SpanClose) | span id (u64) |
//! | [`RecordKind::LocalSpan`] | the span's start (u64, clock ticks); the record's own time is its end |
//! | [`RecordKind::SpanFollows`] | span id (u64), the id of the span it follows from (u64) |
//!
//! # Fields
//!
//! Each field is its index among the callsite's field names (u8), a tag
//! (u8), then its value: [`TAG_I64`], [`TAG_U64`], [`TAG_F64`] 8 bytes
//! little-endian; [`TAG_BOOL`] one byte (0 or 1); [`TAG_STR`] and
//! [`TAG_DEBUG`] (a `Debug` or `Display` rendering) a u16 length then that
//! many UTF-8 bytes. A string longer than the writer's limit is cut at a
//! character boundary at or below the limit and its tag carries
//! [`CUT_FLAG`]; readers show it followed by [`CUT_MARK`].
//!
//! # Callsite records
//!
//! `RTcs` (4 bytes), version 1 (u8), kind (u8: 0 event, 1 span, 2 local
//! span), level (u8: 1 TRACE to 5 ERROR, 0 none), id (u32), line (u32, 0:
//! unknown), then name, target and file (each a u16 length and UTF-8,
//! file empty when unknown), the field count (u8) and each field name (u16
//! length and UTF-8). [`Callsite::to_record`] and [`Callsite::parse`].

use crate::FieldValue;
use std::collections::HashMap;

pub use crate::RESERVED_IDS;

/// Bytes before a record's kind-specific part: kind id, thread id,
/// callsite id.
pub const RECORD_HEADER_LEN: usize = 12;
/// A signed integer, 8 bytes.
pub const TAG_I64: u8 = 1;
/// An unsigned integer, 8 bytes.
pub const TAG_U64: u8 = 2;
/// A float, 8 bytes.
pub const TAG_F64: u8 = 3;
/// A bool, 1 byte.
pub const TAG_BOOL: u8 = 4;
/// A string: u16 length, UTF-8.
pub const TAG_STR: u8 = 5;
/// A `Debug`/`Display` rendering: u16 length, UTF-8.
pub const TAG_DEBUG: u8 = 6;
/// Or-ed into a string tag: the value was cut at the writer's limit.
pub const CUT_FLAG: u8 = 0x80;
/// What readers show after a cut string.
pub const CUT_MARK: &str = "…[cut]";
/// The first bytes of a callsite record.
pub const CALLSITE_MAGIC: [u8; 4] = *b"RTcs";
/// The callsite record version this build writes and reads.
pub const CALLSITE_VERSION: u8 = 1;
/// The id of the generic tracepoint (ringtrace-export's) under which
/// trace-cmd and CTF exports show `tracing` records.
pub const TEXT_TRACEPOINT_ID: u32 = 0xFFFF_FF00;

/// What a record is; its value is the record's first four bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum RecordKind {
    /// A `tracing` event.
    Event = 0xFFFF_FF01,
    /// A span was created (with its fields).
    SpanNew = 0xFFFF_FF02,
    /// Values recorded into a span after its creation.
    SpanRecord = 0xFFFF_FF03,
    /// A thread entered a span.
    SpanEnter = 0xFFFF_FF04,
    /// A thread left a span.
    SpanExit = 0xFFFF_FF05,
    /// A span was closed (its last handle dropped).
    SpanClose = 0xFFFF_FF06,
    /// A local span, written once when it ends (as fastrace records
    /// one): its start in ticks is in the record, its end is the
    /// record's timestamp. One ring write per span instead of two; a span
    /// still open when the process dies is not in the trace.
    LocalSpan = 0xFFFF_FF07,
    /// A span follows from another (`Span::follows_from`: a causal link
    /// that is not a parent, as a task woken by another's message); the
    /// callsite is the span's.
    SpanFollows = 0xFFFF_FF08,
    /// A `tracing` event whose parent was given where it was made
    /// (`parent: &span`, or `parent: None` for an event in no span),
    /// rather than taken from the thread's current span as an
    /// [`Event`](RecordKind::Event)'s is. Read as `tracing:event`.
    EventIn = 0xFFFF_FF09,
}

impl RecordKind {
    const ALL: [RecordKind; 9] = [
        RecordKind::Event,
        RecordKind::SpanNew,
        RecordKind::SpanRecord,
        RecordKind::SpanEnter,
        RecordKind::SpanExit,
        RecordKind::SpanClose,
        RecordKind::LocalSpan,
        RecordKind::SpanFollows,
        RecordKind::EventIn,
    ];

    /// The kind whose id is `id`.
    pub fn from_id(id: u32) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| *k as u32 == id)
    }

    /// The record's id, its first four bytes.
    pub const fn id(self) -> u32 {
        self as u32
    }

    /// The name readers show: `tracing:event`, `tracing:span_enter`, ...
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Event | RecordKind::EventIn => "tracing:event",
            RecordKind::SpanNew => "tracing:span_new",
            RecordKind::SpanRecord => "tracing:span_record",
            RecordKind::SpanEnter => "tracing:span_enter",
            RecordKind::SpanExit => "tracing:span_exit",
            RecordKind::SpanClose => "tracing:span_close",
            RecordKind::LocalSpan => "tracing:local_span",
            RecordKind::SpanFollows => "tracing:span_follows",
        }
    }

    /// Whether a span id (u64) follows the callsite id.
    pub fn has_span(self) -> bool {
        matches!(
            self,
            RecordKind::SpanNew
                | RecordKind::SpanRecord
                | RecordKind::SpanEnter
                | RecordKind::SpanExit
                | RecordKind::SpanClose
                | RecordKind::SpanFollows
        )
    }

    /// Whether fields follow.
    pub fn has_fields(self) -> bool {
        matches!(
            self,
            RecordKind::Event | RecordKind::EventIn | RecordKind::SpanNew | RecordKind::SpanRecord
        )
    }

    /// Whether it is an event ([`Event`](RecordKind::Event) or
    /// [`EventIn`](RecordKind::EventIn)).
    pub fn is_event(self) -> bool {
        matches!(self, RecordKind::Event | RecordKind::EventIn)
    }
}

/// What a callsite is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallsiteKind {
    /// A `tracing` event's callsite.
    Event,
    /// A `tracing` span's callsite.
    Span,
    /// A local span (`local_span!`).
    LocalSpan,
}

/// A callsite's level: 1 TRACE to 5 ERROR, as `tracing` orders them (0:
/// none, for a local span).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Level(pub u8);

impl Level {
    /// `TRACE`, `DEBUG`, `INFO`, `WARN`, `ERROR`, or `-` for none.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "TRACE",
            2 => "DEBUG",
            3 => "INFO",
            4 => "WARN",
            5 => "ERROR",
            _ => "-",
        }
    }
}

/// A callsite's description, registered once and named by its id in
/// every record it writes.
///
/// ```
/// use ringtrace_tracepoint::tracing_record::{Callsite, CallsiteKind, Level};
/// let c = Callsite {
///     id: 7,
///     kind: CallsiteKind::Event,
///     level: Level(3),
///     name: "event src/main.rs:4".into(),
///     target: "app".into(),
///     file: Some("src/main.rs".into()),
///     line: Some(4),
///     fields: vec!["message".into(), "n".into()],
/// };
/// assert_eq!(Callsite::parse(&c.to_record()), Ok(Some(c)));
/// assert_eq!(Callsite::parse(b"something else"), Ok(None));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callsite {
    /// Its id, unique in the ring.
    pub id: u32,
    /// Event, span or local span.
    pub kind: CallsiteKind,
    /// Its level.
    pub level: Level,
    /// Its name (`tracing`'s: a span's name, `event file:line` for an
    /// event).
    pub name: String,
    /// Its target (the module path, unless given).
    pub target: String,
    /// Its source file, when known.
    pub file: Option<String>,
    /// Its line, when known.
    pub line: Option<u32>,
    /// Its field names, in order; a field's index in a record is its
    /// index here.
    pub fields: Vec<String>,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    let s = &s.as_bytes()[..floor_char_boundary(s, u16::MAX as usize)];
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s);
}

/// The largest index `<= limit` that is a character boundary of `s`.
pub fn floor_char_boundary(s: &str, limit: usize) -> usize {
    if limit >= s.len() {
        return s.len();
    }
    (0..=limit)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

/// What is wrong with a callsite record or a `tracing` record that cannot
/// be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The bytes end before a part of the record does.
    #[error("{what} is cut off ({needed} bytes needed, {left} left)")]
    CutOff {
        /// The part, in words (`the name`, `field name 2`, a field's name).
        what: String,
        /// The bytes it needs.
        needed: usize,
        /// The bytes that were left.
        left: usize,
    },
    /// A callsite record of another version.
    #[error("callsite record version {found}; this build reads version {CALLSITE_VERSION}")]
    Version {
        /// The record's version.
        found: u8,
    },
    /// A callsite kind that is none of the three.
    #[error("callsite kind {found} is not 0 (event), 1 (span) or 2 (local span)")]
    CallsiteKind {
        /// The kind byte found.
        found: u8,
    },
    /// A record naming a callsite the trace does not describe.
    #[error("{kind}: callsite {callsite} is not among the trace's {known} callsite records")]
    UnknownCallsite {
        /// The record's kind, by name.
        kind: &'static str,
        /// The callsite id it names.
        callsite: u32,
        /// How many callsites the trace describes.
        known: usize,
    },
    /// A field index beyond the callsite's field names.
    #[error("field index {index}, and callsite `{callsite}` has {fields} fields")]
    FieldIndex {
        /// The index found.
        index: u8,
        /// The callsite's name.
        callsite: String,
        /// How many field names it has.
        fields: usize,
    },
    /// A field tag that is no field type.
    #[error("field `{field}` has tag {tag}, which is no field type")]
    FieldTag {
        /// The field's name.
        field: String,
        /// The tag found.
        tag: u8,
    },
    /// Bytes after the record's last part.
    #[error("{kind}: {left} bytes are left after the record")]
    TrailingBytes {
        /// The record's kind, by name.
        kind: &'static str,
        /// How many bytes are left.
        left: usize,
    },
}

/// Reads the front of a byte slice, never panicking.
struct Cursor<'b>(&'b [u8]);

impl<'b> Cursor<'b> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'b [u8], RecordError> {
        if self.0.len() < n {
            return Err(RecordError::CutOff {
                what: what.to_owned(),
                needed: n,
                left: self.0.len(),
            });
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &str) -> Result<u8, RecordError> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, RecordError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, RecordError> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(w))
    }
    fn bytes(&mut self, what: &str) -> Result<&'b [u8], RecordError> {
        let b = self.take(2, what)?;
        let len = u16::from_le_bytes([b[0], b[1]]) as usize;
        self.take(len, what)
    }
    fn str(&mut self, what: &str) -> Result<String, RecordError> {
        Ok(String::from_utf8_lossy(self.bytes(what)?).into_owned())
    }
}

impl Callsite {
    /// The record appended to the ring's metadata annex.
    pub fn to_record(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.name.len() + self.target.len());
        out.extend_from_slice(&CALLSITE_MAGIC);
        out.push(CALLSITE_VERSION);
        out.push(match self.kind {
            CallsiteKind::Event => 0,
            CallsiteKind::Span => 1,
            CallsiteKind::LocalSpan => 2,
        });
        out.push(self.level.0);
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.line.unwrap_or(0).to_le_bytes());
        put_str(&mut out, &self.name);
        put_str(&mut out, &self.target);
        put_str(&mut out, self.file.as_deref().unwrap_or(""));
        let fields = &self.fields[..self.fields.len().min(u8::MAX as usize)];
        out.push(fields.len() as u8);
        for f in fields {
            put_str(&mut out, f);
        }
        out
    }

    /// Reads a metadata record: `Ok(None)` when it is not a callsite
    /// record (another magic), an error saying what is wrong when it is a
    /// damaged or newer one. Never panics.
    pub fn parse(record: &[u8]) -> Result<Option<Callsite>, RecordError> {
        if !record.starts_with(&CALLSITE_MAGIC) {
            return Ok(None);
        }
        let mut c = Cursor(&record[4..]);
        let version = c.u8("the version")?;
        if version != CALLSITE_VERSION {
            return Err(RecordError::Version { found: version });
        }
        let kind = match c.u8("the kind")? {
            0 => CallsiteKind::Event,
            1 => CallsiteKind::Span,
            2 => CallsiteKind::LocalSpan,
            k => return Err(RecordError::CallsiteKind { found: k }),
        };
        let level = Level(c.u8("the level")?);
        let id = c.u32("the id")?;
        let line = c.u32("the line")?;
        let name = c.str("the name")?;
        let target = c.str("the target")?;
        let file = c.str("the file")?;
        let count = c.u8("the field count")?;
        let fields = (0..count)
            .map(|i| c.str(&format!("field name {i}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Callsite {
            id,
            kind,
            level,
            name,
            target,
            file: (!file.is_empty()).then_some(file),
            line: (line != 0).then_some(line),
            fields,
        }))
    }
}

/// A local span record's start (ticks), read without decoding the rest:
/// for a reader that needs the earliest time in a trace before it decodes
/// it. `None` for any other payload.
pub fn local_span_start(payload: &[u8]) -> Option<u64> {
    let id = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?);
    if id != RecordKind::LocalSpan.id() {
        return None;
    }
    let start = payload.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + 8)?;
    Some(u64::from_le_bytes(start.try_into().ok()?))
}

/// The callsites among a trace's metadata records, and what was wrong
/// with the records that are not readable callsites.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Callsites {
    /// The readable callsites, by id.
    pub by_id: HashMap<u32, Callsite>,
    /// One line for each record that claims to be a callsite and is not
    /// readable, naming it by its index.
    pub problems: Vec<String>,
}

/// The callsites among a trace's metadata records (see [`Callsites`]).
pub fn callsites(records: &[Vec<u8>]) -> Callsites {
    let mut found = Callsites::default();
    for (i, r) in records.iter().enumerate() {
        match Callsite::parse(r) {
            Ok(Some(c)) => {
                found.by_id.insert(c.id, c);
            }
            Ok(None) => {}
            Err(why) => found.problems.push(format!("metadata record {i}: {why}")),
        }
    }
    found
}

/// One field of a decoded record.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingField<'d> {
    /// Its name (the callsite's).
    pub name: &'d str,
    /// Its value; a cut string ends with [`CUT_MARK`].
    pub value: FieldValue,
    /// Whether the writer cut it at its limit.
    pub cut: bool,
}

/// A decoded `tracing` record.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingRecord<'d> {
    /// What it is.
    pub kind: RecordKind,
    /// The thread that wrote it.
    pub tid: u32,
    /// Its callsite.
    pub callsite: &'d Callsite,
    /// The span, for span records.
    pub span: Option<u64>,
    /// A new span's parent (none for a root); an
    /// [`EventIn`](RecordKind::EventIn)'s given parent (none: in no span).
    pub parent: Option<u64>,
    /// The span a [`RecordKind::SpanFollows`] record's span follows from.
    pub follows: Option<u64>,
    /// A local span's start, in clock ticks (its end is the record's
    /// timestamp).
    pub start: Option<u64>,
    /// Its fields, in the order written.
    pub fields: Vec<TracingField<'d>>,
}

/// Decodes `payload` as a `tracing` record whose callsite is in
/// `callsites`. `Ok(None)` when its first four bytes are no record kind;
/// an error saying what is wrong when they are but the rest does not fit.
/// Never panics.
pub fn decode<'d>(
    payload: &[u8],
    callsites: &'d HashMap<u32, Callsite>,
) -> Result<Option<TracingRecord<'d>>, RecordError> {
    let mut c = Cursor(payload);
    let Ok(id) = c.u32("the id") else {
        return Ok(None);
    };
    let Some(kind) = RecordKind::from_id(id) else {
        return Ok(None);
    };
    let tid = c.u32("the thread id")?;
    let callsite_id = c.u32("the callsite id")?;
    let callsite = callsites
        .get(&callsite_id)
        .ok_or_else(|| RecordError::UnknownCallsite {
            kind: kind.name(),
            callsite: callsite_id,
            known: callsites.len(),
        })?;
    let span = kind.has_span().then(|| c.u64("the span id")).transpose()?;
    let parent = match kind {
        RecordKind::SpanNew | RecordKind::EventIn => {
            Some(c.u64("the parent span id")?).filter(|&p| p != 0)
        }
        _ => None,
    };
    let start = match kind {
        RecordKind::LocalSpan => Some(c.u64("the local span's start")?),
        _ => None,
    };
    let follows = match kind {
        RecordKind::SpanFollows => Some(c.u64("the span it follows from")?),
        _ => None,
    };
    let mut fields = Vec::new();
    if kind.has_fields() {
        let count = c.u8("the field count")?;
        for _ in 0..count {
            let index = c.u8("a field index")?;
            let tag = c.u8("a field tag")?;
            let name = callsite
                .fields
                .get(index as usize)
                .map(String::as_str)
                .ok_or_else(|| RecordError::FieldIndex {
                    index,
                    callsite: callsite.name.clone(),
                    fields: callsite.fields.len(),
                })?;
            let cut = tag & CUT_FLAG != 0;
            let value = match tag & !CUT_FLAG {
                TAG_I64 => FieldValue::Signed(c.u64(name)? as i64),
                TAG_U64 => FieldValue::Unsigned(c.u64(name)?),
                TAG_F64 => FieldValue::Float(f64::from_bits(c.u64(name)?)),
                TAG_BOOL => FieldValue::Bool(c.u8(name)? != 0),
                TAG_STR | TAG_DEBUG => {
                    let mut bytes = c.bytes(name)?.to_vec();
                    if cut {
                        bytes.extend_from_slice(CUT_MARK.as_bytes());
                    }
                    match String::from_utf8(bytes) {
                        Ok(s) => FieldValue::Str(s),
                        Err(e) => FieldValue::Bytes(e.into_bytes()),
                    }
                }
                t => {
                    return Err(RecordError::FieldTag {
                        field: name.to_owned(),
                        tag: t,
                    })
                }
            };
            fields.push(TracingField { name, value, cut });
        }
    }
    if !c.0.is_empty() {
        return Err(RecordError::TrailingBytes {
            kind: kind.name(),
            left: c.0.len(),
        });
    }
    Ok(Some(TracingRecord {
        kind,
        tid,
        callsite,
        span,
        parent,
        follows,
        start,
        fields,
    }))
}

impl TracingRecord<'_> {
    /// The record in words, as `ringtrace dump` shows it after its name:
    /// an event as `LEVEL target: message k=v ...`, a span's record as
    /// `LEVEL target: verb name#id k=v ...`, a local span's as
    /// `span name began=TICKS` (the dump adds how long it lasted). A
    /// string field that is not UTF-8 shows U+FFFD for its bytes that are
    /// not.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.text_bytes()).into_owned()
    }

    /// [`text`](TracingRecord::text) with each string field's bytes as
    /// they were written, for the dump to escape.
    pub fn text_bytes(&self) -> Vec<u8> {
        let c = self.callsite;
        let mut out = Vec::new();
        if c.kind != CallsiteKind::LocalSpan {
            out.extend_from_slice(format!("{} {}: ", c.level.name(), c.target).as_bytes());
        }
        self.push_body(&mut out);
        out
    }

    /// The text without the level and target: `message k=v ...`, `verb
    /// name#id k=v ...`.
    pub fn body(&self) -> String {
        let mut out = Vec::new();
        self.push_body(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn push_body(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let c = self.callsite;
        let verb = match self.kind {
            RecordKind::Event | RecordKind::EventIn => "",
            RecordKind::SpanNew => "new",
            RecordKind::SpanRecord => "record",
            RecordKind::SpanEnter => "enter",
            RecordKind::SpanExit => "exit",
            RecordKind::LocalSpan => "span",
            RecordKind::SpanClose => "close",
            RecordKind::SpanFollows => "follows",
        };
        if !verb.is_empty() {
            out.extend_from_slice(format!("{verb} {}", c.name).as_bytes());
            if let Some(span) = self.span {
                out.extend_from_slice(format!("#{span}").as_bytes());
            }
        }
        if let Some(parent) = self.parent {
            out.extend_from_slice(format!(" parent=#{parent}").as_bytes());
        }
        if let Some(follows) = self.follows {
            out.extend_from_slice(format!(" from=#{follows}").as_bytes());
        }
        if let Some(start) = self.start {
            out.extend_from_slice(format!(" began={start}").as_bytes());
        }
        for f in &self.fields {
            if out.len() > start {
                out.push(b' ');
            }
            if f.name != "message" {
                out.extend_from_slice(f.name.as_bytes());
                out.push(b'=');
            }
            out.extend_from_slice(&f.value.shown_bytes());
        }
    }

    /// The values of the generic tracepoint (see [`TEXT_TRACEPOINT_ID`]):
    /// record kind, level, target, callsite name, the text without level
    /// and target ([`body`](TracingRecord::body)).
    pub fn generic_values(&self) -> Vec<FieldValue> {
        let c = self.callsite;
        vec![
            FieldValue::Str(self.kind.name().trim_start_matches("tracing:").to_owned()),
            FieldValue::Str(c.level.name().to_owned()),
            FieldValue::Str(c.target.clone()),
            FieldValue::Str(c.name.clone()),
            FieldValue::Str(self.body()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(id: u32, kind: CallsiteKind, fields: &[&str]) -> Callsite {
        Callsite {
            id,
            kind,
            level: Level(3),
            name: "work".into(),
            target: "app::db".into(),
            file: None,
            line: None,
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    fn record(kind: RecordKind, callsite: u32, rest: &[u8]) -> Vec<u8> {
        let mut p = kind.id().to_le_bytes().to_vec();
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(&callsite.to_le_bytes());
        p.extend_from_slice(rest);
        p
    }

    #[test]
    fn an_event_decodes_with_every_field_type_and_the_cut_mark() {
        let sites = HashMap::from([(
            1,
            site(
                1,
                CallsiteKind::Event,
                &["message", "n", "u", "f", "b", "s"],
            ),
        )]);
        let mut rest = vec![6, 0, TAG_DEBUG | CUT_FLAG, 2, 0, b'h', b'i'];
        rest.extend_from_slice(&[1, TAG_I64]);
        rest.extend_from_slice(&(-5i64).to_le_bytes());
        rest.extend_from_slice(&[2, TAG_U64]);
        rest.extend_from_slice(&7u64.to_le_bytes());
        rest.extend_from_slice(&[3, TAG_F64]);
        rest.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
        rest.extend_from_slice(&[4, TAG_BOOL, 1, 5, TAG_STR, 1, 0, b'x']);
        let p = record(RecordKind::Event, 1, &rest);
        let r = decode(&p, &sites).unwrap().unwrap();
        assert_eq!(r.tid, 42);
        assert!(r.fields[0].cut);
        assert_eq!(
            r.text(),
            format!("INFO app::db: hi{CUT_MARK} n=-5 u=7 f=1.5 b=true s=x")
        );
        for cut in 4..p.len() {
            assert!(decode(&p[..cut], &sites).is_err(), "{cut} bytes decoded");
        }
    }

    #[test]
    fn span_records_carry_their_span_and_parent() {
        let sites = HashMap::from([(9, site(9, CallsiteKind::Span, &["k"]))]);
        let mut rest = 5u64.to_le_bytes().to_vec();
        rest.extend_from_slice(&3u64.to_le_bytes());
        rest.extend_from_slice(&[1, 0, TAG_BOOL, 0]);
        let r = decode(&record(RecordKind::SpanNew, 9, &rest), &sites)
            .unwrap()
            .unwrap();
        assert_eq!((r.span, r.parent), (Some(5), Some(3)));
        assert_eq!(r.text(), "INFO app::db: new work#5 parent=#3 k=false");
        let enter = record(RecordKind::SpanEnter, 9, &5u64.to_le_bytes());
        assert_eq!(
            decode(&enter, &sites).unwrap().unwrap().text(),
            "INFO app::db: enter work#5"
        );
        let mut long = enter.clone();
        long.push(0);
        assert_eq!(
            decode(&long, &sites),
            Err(RecordError::TrailingBytes {
                kind: "tracing:span_enter",
                left: 1
            })
        );
    }

    #[test]
    fn unknown_callsites_kinds_and_tags_are_errors_or_not_records() {
        let sites = HashMap::from([(1, site(1, CallsiteKind::LocalSpan, &[]))]);
        assert_eq!(decode(&[1, 2, 3, 4, 0, 0, 0, 0], &sites), Ok(None));
        assert_eq!(decode(&[1, 2], &sites), Ok(None));
        let err = decode(&record(RecordKind::LocalSpan, 2, &[]), &sites).unwrap_err();
        assert!(
            matches!(
                err,
                RecordError::UnknownCallsite {
                    callsite: 2,
                    known: 1,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("callsite 2 is not among"), "{err}");
        let local = record(RecordKind::LocalSpan, 1, &77u64.to_le_bytes());
        let decoded = decode(&local, &sites).unwrap().unwrap();
        assert_eq!(
            (decoded.text(), decoded.start),
            ("span work began=77".into(), Some(77))
        );
        let err = decode(&record(RecordKind::LocalSpan, 1, &[1, 2]), &sites).unwrap_err();
        assert!(
            matches!(&err, RecordError::CutOff { what, needed: 8, left: 2 } if what.contains("start")),
            "{err}"
        );
        let sites = HashMap::from([(1, site(1, CallsiteKind::Event, &["a"]))]);
        let err = decode(&record(RecordKind::Event, 1, &[1, 0, 77]), &sites).unwrap_err();
        assert_eq!(
            err,
            RecordError::FieldTag {
                field: "a".into(),
                tag: 77
            }
        );
        let err = decode(&record(RecordKind::Event, 1, &[1, 3, TAG_BOOL, 1]), &sites).unwrap_err();
        assert!(
            matches!(
                err,
                RecordError::FieldIndex {
                    index: 3,
                    fields: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn damaged_callsite_records_are_errors_and_others_are_skipped() {
        let good = site(4, CallsiteKind::Span, &["a", "b"]).to_record();
        for cut in 4..good.len() {
            assert!(Callsite::parse(&good[..cut]).is_err(), "{cut} bytes parsed");
        }
        let mut newer = good.clone();
        newer[4] = 9;
        assert_eq!(
            Callsite::parse(&newer),
            Err(RecordError::Version { found: 9 })
        );
        let Callsites { by_id, problems } = callsites(&[good, b"other".to_vec(), newer]);
        assert_eq!(by_id.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("metadata record 2"), "{problems:?}");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_or_fail_without_a_panic(
            kind in 0usize..RecordKind::ALL.len(),
            fields in 0usize..4,
            damage in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
            rest in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..96),
        ) {
            // A valid callsite record, then bytes overwritten from its
            // sixth on: damaged records must be refused, not trusted.
            let names = ["a", "b", "message", "é"];
            let mut record = site(1, CallsiteKind::Event, &names[..fields]).to_record();
            for (i, b) in damage.iter().enumerate() {
                if let Some(at) = record.get_mut(5 + i * 3) {
                    *at = *b;
                }
            }
            let sites = callsites(&[record]).by_id;
            let mut p = RecordKind::ALL[kind].id().to_le_bytes().to_vec();
            p.extend_from_slice(&7u32.to_le_bytes());
            p.extend_from_slice(&1u32.to_le_bytes());
            p.extend_from_slice(&rest);
            if let Ok(Some(r)) = decode(&p, &sites) {
                let _ = (r.text(), r.generic_values());
            }
        }
    }

    #[test]
    fn record_kinds_are_reserved_ids() {
        for k in RecordKind::ALL {
            assert!(RESERVED_IDS.contains(&k.id()));
            assert_eq!(RecordKind::from_id(k.id()), Some(k));
        }
        assert!(RESERVED_IDS.contains(&TEXT_TRACEPOINT_ID));
        assert_eq!(floor_char_boundary("aé", 2), 1);
    }
}
