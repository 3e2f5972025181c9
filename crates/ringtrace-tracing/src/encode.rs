//! Fields visited straight into the reserved slot, in two passes: the
//! first ([`Measure`]) sizes the record (rendering each `Debug` value into
//! a counter that stops at the limit), the second ([`Encode`]) writes it
//! into the reservation. Nothing is allocated and nothing is staged.
//!
//! A `Debug` value that renders differently the second time cannot
//! overrun its slot: it is written up to the length the first pass
//! measured and padded with spaces if shorter.

use ringtrace_export::tracing_format::{
    floor_char_boundary, CUT_FLAG, TAG_BOOL, TAG_DEBUG, TAG_F64, TAG_I64, TAG_STR, TAG_U64,
};
use ringtrace_ring::PayloadStream;
use std::fmt::{self, Write as _};
use tracing_core::field::{Field, Visit};

/// Fields per record at most (`tracing` allows 32 per callsite).
pub(crate) const MAX_FIELDS: usize = 32;

/// The first pass: the fields' encoded length, their count, and each
/// string's length after cutting.
pub(crate) struct Measure {
    limit: usize,
    /// Bytes the fields take.
    pub len: usize,
    /// Fields seen (up to [`MAX_FIELDS`]).
    pub count: usize,
    /// Each string field's kept length, by field ordinal.
    kept: [u16; MAX_FIELDS],
    /// Bit `k`: field ordinal `k` was cut.
    cut: u32,
}

impl Measure {
    pub(crate) fn new(limit: usize) -> Measure {
        Measure {
            limit,
            len: 0,
            count: 0,
            kept: [0; MAX_FIELDS],
            cut: 0,
        }
    }

    /// Strings cut.
    pub(crate) fn cuts(&self) -> u32 {
        self.cut.count_ones()
    }

    fn fixed(&mut self, bytes: usize) {
        if self.count < MAX_FIELDS {
            self.len += 2 + bytes;
            self.count += 1;
        }
    }

    fn string(&mut self, kept: usize, cut: bool) {
        if self.count < MAX_FIELDS {
            self.kept[self.count] = kept as u16;
            self.cut |= u32::from(cut) << self.count;
            self.len += 4 + kept;
            self.count += 1;
        }
    }
}

/// Counts what a `Debug` rendering writes, up to a limit, stopping the
/// rendering there.
struct CutCounter {
    room: usize,
    taken: usize,
    cut: bool,
}

impl fmt::Write for CutCounter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.room - self.taken;
        if s.len() <= room {
            self.taken += s.len();
            return Ok(());
        }
        self.taken += floor_char_boundary(s, room);
        self.cut = true;
        // Stops the rendering: nothing more is kept.
        Err(fmt::Error)
    }
}

impl Visit for Measure {
    fn record_i64(&mut self, _: &Field, _: i64) {
        self.fixed(8);
    }
    fn record_u64(&mut self, _: &Field, _: u64) {
        self.fixed(8);
    }
    fn record_f64(&mut self, _: &Field, _: f64) {
        self.fixed(8);
    }
    fn record_bool(&mut self, _: &Field, _: bool) {
        self.fixed(1);
    }
    fn record_str(&mut self, _: &Field, value: &str) {
        let kept = floor_char_boundary(value, self.limit);
        self.string(kept, kept < value.len());
    }
    fn record_debug(&mut self, _: &Field, value: &dyn fmt::Debug) {
        let mut counter = CutCounter {
            room: self.limit,
            taken: 0,
            cut: false,
        };
        // An error is the counter stopping at the limit (or the value's
        // own formatting failing): what was counted is what is kept.
        let _ = write!(counter, "{value:?}");
        self.string(counter.taken, counter.cut);
    }
}

/// The second pass: each field as its index, tag and value.
pub(crate) struct Encode<'m, 's, 'r> {
    pub measure: &'m Measure,
    pub stream: &'s mut PayloadStream<'r>,
    /// The next field's ordinal.
    pub at: usize,
}

/// Writes a rendering into the stream, at most `room` bytes.
struct SlotWriter<'s, 'r> {
    stream: &'s mut PayloadStream<'r>,
    room: usize,
}

impl fmt::Write for SlotWriter<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = floor_char_boundary(s, self.room);
        self.stream.put(&s.as_bytes()[..n]);
        self.room -= n;
        if n < s.len() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

impl Encode<'_, '_, '_> {
    /// The field's header, or `None` past [`MAX_FIELDS`] (as the first
    /// pass skipped it).
    #[inline]
    fn head(&mut self, field: &Field, tag: u8) -> Option<usize> {
        let at = self.at;
        if at >= MAX_FIELDS {
            return None;
        }
        self.at += 1;
        let tag = if self.measure.cut & (1 << at) != 0 {
            tag | CUT_FLAG
        } else {
            tag
        };
        self.stream.put(&[field.index() as u8, tag]);
        Some(at)
    }

    #[inline]
    fn fixed(&mut self, field: &Field, tag: u8, bytes: &[u8]) {
        if self.head(field, tag).is_some() {
            self.stream.put(bytes);
        }
    }
}

impl Visit for Encode<'_, '_, '_> {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fixed(field, TAG_I64, &value.to_le_bytes());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fixed(field, TAG_U64, &value.to_le_bytes());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.fixed(field, TAG_F64, &value.to_bits().to_le_bytes());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fixed(field, TAG_BOOL, &[u8::from(value)]);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(at) = self.head(field, TAG_STR) {
            let kept = self.measure.kept[at];
            self.stream.put(&kept.to_le_bytes());
            // The first pass cut it at a character boundary.
            self.stream
                .put(&value.as_bytes()[..usize::from(kept).min(value.len())]);
            for _ in value.len()..usize::from(kept) {
                self.stream.put(b" ");
            }
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if let Some(at) = self.head(field, TAG_DEBUG) {
            let kept = usize::from(self.measure.kept[at]);
            self.stream.put(&(kept as u16).to_le_bytes());
            let mut w = SlotWriter {
                stream: self.stream,
                room: kept,
            };
            // An error is the writer stopping at the measured length.
            let _ = write!(w, "{value:?}");
            // Rendered shorter this time: the slot's length stands.
            for _ in 0..w.room {
                self.stream.put(b" ");
            }
        }
    }
}
