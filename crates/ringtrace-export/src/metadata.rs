//! The JSON a ring file's header carries so that a reader can decode its
//! events without the program that wrote them.

use ringtrace_tracepoint::{registry, FieldKind, TracepointError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// The metadata format version this build writes and reads.
pub const METADATA_VERSION: u32 = 1;

/// What a ring file's events are, for a reader without the program.
///
/// A tracepoint event is `id u32, tid u32`, then its fields in order
/// (`tracepoint_header` says so, and is checked on parsing); an event
/// that starts with no known id may follow the `untagged` layout instead
/// (see [`Decoder`](super::Decoder) for the rule).
///
/// Keys this version does not know are ignored, so that a writer may add
/// one that older readers can do without; a change they would misread
/// takes a new version.
///
/// ```
/// use ringtrace_export::{metadata_for_tracepoints, TraceMetadata};
/// let meta = metadata_for_tracepoints()?;
/// let bytes = meta.to_bytes();
/// assert_eq!(TraceMetadata::parse(&bytes)?, meta);
/// let err = TraceMetadata::parse(br#"{"version": 7}"#).unwrap_err();
/// assert!(err.to_string().contains("version 7"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMetadata {
    /// [`METADATA_VERSION`].
    pub version: u32,
    /// What comes before a tracepoint event's fields: `id` and `tid`, each
    /// a `u32`.
    pub tracepoint_header: Vec<FieldDesc>,
    /// Every tracepoint the writing program had.
    pub tracepoints: Vec<TracepointDesc>,
    /// The layout of events that carry no tracepoint id (the hammer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untagged: Option<EventLayout>,
}

/// One tracepoint, as the metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracepointDesc {
    /// Its full name, `system:event` ([`Tracepoint::name`]). Files written
    /// before tracepoints had systems hold a bare event name, which
    /// [`system`](TracepointDesc::system) reports as no system.
    ///
    /// [`Tracepoint::name`]: ringtrace_tracepoint::Tracepoint::name
    pub name: String,
    /// Its 32-bit id, the first four bytes of its events.
    pub id: u32,
    /// Its fields, in order, after the id and tid.
    pub fields: Vec<FieldDesc>,
    /// Its text format: `{}` for each field in order (`{:x}` and `{:#x}`
    /// print an integer in hex).
    pub format: String,
}

impl TracepointDesc {
    /// The system part of [`name`](TracepointDesc::name), if it has one.
    ///
    /// ```
    /// use ringtrace_export::TracepointDesc;
    /// let desc = |name: &str| TracepointDesc { name: name.into(), id: 0, fields: vec![], format: String::new() };
    /// assert_eq!(desc("app:request_done").system(), Some("app"));
    /// assert_eq!(desc("app:request_done").event(), "request_done");
    /// assert_eq!((desc("irq_disable").system(), desc("irq_disable").event()), (None, "irq_disable"));
    /// ```
    pub fn system(&self) -> Option<&str> {
        self.name.split_once(':').map(|(system, _)| system)
    }

    /// The event part of [`name`](TracepointDesc::name): all of a name
    /// without a system.
    pub fn event(&self) -> &str {
        self.name
            .split_once(':')
            .map_or(self.name.as_str(), |(_, event)| event)
    }
}

/// The layout of events with no tracepoint id: the whole payload is these
/// fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventLayout {
    /// The name its events are shown under.
    pub name: String,
    /// Its fields, in order, from the payload's first byte.
    pub fields: Vec<FieldDesc>,
    /// Its text format, as [`TracepointDesc::format`].
    pub format: String,
}

/// A field: its name and type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDesc {
    /// Its name.
    pub name: String,
    /// Its type, in JSON one of `u8 u16 u32 u64 i8 i16 i32 i64 bool f64 str
    /// location`.
    #[serde(
        rename = "type",
        serialize_with = "kind_out",
        deserialize_with = "kind_in"
    )]
    pub kind: FieldKind,
}

impl FieldDesc {
    /// A field called `name` of type `kind`.
    pub fn new(name: &str, kind: FieldKind) -> FieldDesc {
        FieldDesc {
            name: name.to_owned(),
            kind,
        }
    }
}

/// Every field type, with its JSON name.
const KINDS: [(FieldKind, &str); 12] = [
    (FieldKind::U8, "u8"),
    (FieldKind::U16, "u16"),
    (FieldKind::U32, "u32"),
    (FieldKind::U64, "u64"),
    (FieldKind::I8, "i8"),
    (FieldKind::I16, "i16"),
    (FieldKind::I32, "i32"),
    (FieldKind::I64, "i64"),
    (FieldKind::Bool, "bool"),
    (FieldKind::F64, "f64"),
    (FieldKind::Str, "str"),
    (FieldKind::Location, "location"),
];

/// The JSON name of a field type (`u64`, `str`, ...).
pub(crate) fn kind_name(kind: FieldKind) -> &'static str {
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or("?", |(_, n)| n)
}

fn kind_out<S: Serializer>(kind: &FieldKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind_name(*kind))
}

fn kind_in<'de, D: Deserializer<'de>>(d: D) -> Result<FieldKind, D::Error> {
    let name = String::deserialize(d)?;
    KINDS
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(k, _)| *k)
        .ok_or_else(|| {
            let valid: Vec<&str> = KINDS.iter().map(|(_, n)| *n).collect();
            serde::de::Error::custom(format!(
                "`{name}` is not a field type; valid types: {}",
                valid.join(", ")
            ))
        })
}

/// Why a file's metadata cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The file carries no metadata (it was written without any).
    #[error("the file carries no metadata (its ring was made without RingConfig::metadata)")]
    Empty,
    /// Not the JSON this build reads.
    #[error("the metadata is not valid: {0}")]
    Invalid(String),
    /// Another version.
    #[error("the metadata is version {found}; this build reads version {supported}")]
    Version {
        /// The version in the file.
        found: u64,
        /// [`METADATA_VERSION`].
        supported: u32,
    },
}

impl TraceMetadata {
    /// Metadata for `tracepoints` and no untagged layout.
    pub fn new(tracepoints: Vec<TracepointDesc>) -> TraceMetadata {
        TraceMetadata {
            version: METADATA_VERSION,
            tracepoint_header: vec![
                FieldDesc::new("id", FieldKind::U32),
                FieldDesc::new("tid", FieldKind::U32),
            ],
            tracepoints,
            untagged: None,
        }
    }

    /// The same, with `layout` for events that carry no tracepoint id.
    pub fn with_untagged(mut self, layout: EventLayout) -> TraceMetadata {
        self.untagged = Some(layout);
        self
    }

    /// The JSON, as [`RingConfig::metadata`](ringtrace_ring::RingConfig::metadata)
    /// takes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Cannot fail: every map key is a string and every value plain.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads metadata from a file's bytes. Bad JSON, another version, an
    /// unknown field type, a tracepoint header other than `id u32, tid u32`
    /// or two tracepoints with one id are errors saying what is wrong;
    /// never a panic.
    pub fn parse(bytes: &[u8]) -> Result<TraceMetadata, MetadataError> {
        if bytes.is_empty() {
            return Err(MetadataError::Empty);
        }
        let invalid = |e: serde_json::Error| MetadataError::Invalid(e.to_string());
        #[derive(Deserialize)]
        struct Versioned {
            version: u64,
        }
        let found = serde_json::from_slice::<Versioned>(bytes)
            .map_err(invalid)?
            .version;
        if found != u64::from(METADATA_VERSION) {
            return Err(MetadataError::Version {
                found,
                supported: METADATA_VERSION,
            });
        }
        let meta: TraceMetadata = serde_json::from_slice(bytes).map_err(invalid)?;
        let want = TraceMetadata::new(Vec::new()).tracepoint_header;
        if meta.tracepoint_header != want {
            let shown: Vec<String> = meta
                .tracepoint_header
                .iter()
                .map(|f| format!("{} {}", f.name, kind_name(f.kind)))
                .collect();
            return Err(MetadataError::Invalid(format!(
                "tracepoint_header is [{}]; version 1 has [id u32, tid u32]",
                shown.join(", ")
            )));
        }
        let mut ids: Vec<(u32, &str)> = meta
            .tracepoints
            .iter()
            .map(|t| (t.id, t.name.as_str()))
            .collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(MetadataError::Invalid(format!(
                "tracepoints `{}` and `{}` have the same id {:#010x}",
                w[0].1, w[1].1, w[0].0
            )));
        }
        Ok(meta)
    }
}

/// Metadata describing every tracepoint registered in this program
/// ([`registry::all`]), and no untagged layout.
///
/// Fails with the registry's first problem ([`registry::check`]) when two
/// tracepoints share a name or an id: their events could not be told apart
/// in the file.
pub fn metadata_for_tracepoints() -> Result<TraceMetadata, TracepointError> {
    registry::check()?;
    Ok(TraceMetadata::new(
        registry::all()
            .into_iter()
            .map(|tp| TracepointDesc {
                name: tp.name.to_owned(),
                id: tp.id,
                fields: tp
                    .fields
                    .iter()
                    .map(|f| FieldDesc::new(f.name, f.kind))
                    .collect(),
                format: tp.format.to_owned(),
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TraceMetadata, String> {
        TraceMetadata::parse(text.as_bytes()).map_err(|e| e.to_string())
    }

    const HEADER: &str =
        r#""tracepoint_header": [{"name": "id", "type": "u32"}, {"name": "tid", "type": "u32"}]"#;

    #[test]
    fn round_trips_with_an_untagged_layout() {
        let meta = TraceMetadata::new(vec![TracepointDesc {
            name: "a".into(),
            id: 7,
            fields: vec![FieldDesc::new("x", FieldKind::Location)],
            format: "x={}".into(),
        }])
        .with_untagged(EventLayout {
            name: "u".into(),
            fields: vec![FieldDesc::new("v", FieldKind::I16)],
            format: "v={:#x}".into(),
        });
        let text = String::from_utf8(meta.to_bytes()).unwrap();
        assert!(text.contains(r#""type":"location""#), "{text}");
        assert_eq!(TraceMetadata::parse(text.as_bytes()).unwrap(), meta);
    }

    #[test]
    fn bad_metadata_is_an_error_saying_what_is_wrong() {
        assert!(parse("").unwrap_err().contains("no metadata"));
        assert!(parse("{not json").unwrap_err().contains("not valid"));
        assert!(parse("[1, 2]").unwrap_err().contains("not valid"));
        assert!(parse(r#"{"version": 2}"#)
            .unwrap_err()
            .contains("version 2"));
        assert!(parse(r#"{"version": "1"}"#)
            .unwrap_err()
            .contains("not valid"));
        let bad_type = format!(
            r#"{{"version": 1, {HEADER}, "tracepoints": [{{"name": "a", "id": 1, "fields": [{{"name": "x", "type": "u128"}}], "format": ""}}]}}"#
        );
        let err = parse(&bad_type).unwrap_err();
        assert!(
            err.contains("`u128` is not a field type") && err.contains("location"),
            "{err}"
        );
        let dup = format!(
            r#"{{"version": 1, {HEADER}, "tracepoints": [{{"name": "a", "id": 1, "fields": [], "format": ""}}, {{"name": "b", "id": 1, "fields": [], "format": ""}}]}}"#
        );
        assert!(parse(&dup)
            .unwrap_err()
            .contains("`a` and `b` have the same id"));
        let header = r#"{"version": 1, "tracepoint_header": [{"name": "id", "type": "u64"}], "tracepoints": []}"#;
        assert!(parse(header).unwrap_err().contains("[id u64]"));
        let extra = format!(r#"{{"version": 1, {HEADER}, "tracepoints": [], "later": true}}"#);
        assert!(parse(&extra).is_ok(), "unknown keys are ignored");
        let negative = format!(
            r#"{{"version": 1, {HEADER}, "tracepoints": [{{"name": "a", "id": -1, "fields": [], "format": ""}}]}}"#
        );
        assert!(parse(&negative).unwrap_err().contains("not valid"));
    }

    #[test]
    fn this_programs_tracepoints_are_described() {
        let meta = metadata_for_tracepoints().unwrap();
        let irq = meta
            .tracepoints
            .iter()
            .find(|t| t.name == "preemptirq:irq_disable")
            .expect("the preemptirq tracepoints are linked in");
        assert_eq!(irq.fields.len(), 2);
        assert_eq!(irq.fields[0].kind, FieldKind::Location);
    }
}
