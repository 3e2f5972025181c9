//! Turning a tracepoint event's payload back into its tracepoint, thread
//! and field values.

use super::{by_id, TracepointError};
use crate::field::{decode_field, render, FieldValue};
use crate::sink::EVENT_HEADER_LEN;
use crate::tracepoint::Tracepoint;

/// A decoded tracepoint event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecodedEvent {
    /// The tracepoint that recorded it.
    pub tracepoint: &'static Tracepoint,
    /// The id (`gettid`) of the thread that recorded it.
    pub tid: u32,
    /// Its field values, in order.
    pub values: Vec<FieldValue>,
}

impl DecodedEvent {
    /// The event as text: the tracepoint's full name, `: ` and its format
    /// filled in.
    pub fn text(&self) -> String {
        format!(
            "{}: {}",
            self.tracepoint.name,
            render(self.tracepoint.format, &self.values)
        )
    }
}

/// Decodes an event payload recorded by a tracepoint: its tracepoint's id
/// and the writing thread's id (u32 each, little-endian), then the fields.
/// Bytes after the last field are ignored.
///
/// ```
/// use ringtrace_tracepoint::{registry, tracepoint};
/// tracepoint! {
///     system = docs;
///     /// A doc example's tracepoint.
///     pub fn decoded_example(value: u32) = "value={}";
/// }
/// let mut payload = decoded_example::TRACEPOINT.id.to_le_bytes().to_vec();
/// payload.extend_from_slice(&1234u32.to_le_bytes()); // the thread's id
/// payload.extend_from_slice(&7u32.to_le_bytes());
/// let event = registry::decode(&payload)?;
/// assert_eq!((event.tid, event.text()), (1234, "docs:decoded_example: value=7".to_owned()));
/// assert!(registry::decode(&payload[..6]).is_err()); // cut off: an error, not a panic
/// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
/// ```
pub fn decode(payload: &[u8]) -> Result<DecodedEvent, TracepointError> {
    let word = |at: usize| {
        payload
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let (Some(id), Some(tid)) = (word(0), word(4)) else {
        return Err(TracepointError::Decode(format!(
            "{} bytes is too short for an id and a thread id ({EVENT_HEADER_LEN} bytes)",
            payload.len()
        )));
    };
    let tracepoint = by_id(id)
        .ok_or_else(|| TracepointError::Decode(format!("no tracepoint has id {id:#010x}")))?;
    let mut rest = &payload[EVENT_HEADER_LEN..];
    let mut values = Vec::with_capacity(tracepoint.fields.len());
    for field in tracepoint.fields {
        let (value, used) = decode_field(field.kind, rest).ok_or_else(|| {
            TracepointError::Decode(format!(
                "{}: field `{}` is cut off",
                tracepoint.name, field.name
            ))
        })?;
        values.push(value);
        rest = &rest[used..];
    }
    Ok(DecodedEvent {
        tracepoint,
        tid,
        values,
    })
}
