//! Records too large for the stack (see `one_pass`): fields visited
//! straight into the reserved slot, in two passes: the
//! first ([`Measure`]) sizes the record, the second ([`Encode`]) writes it
//! into the reservation. Nothing is allocated.
//!
//! A `Debug` rendering has no length until it is rendered: the first pass
//! renders it into a counter that stops at the limit, keeping the bytes in
//! a small stack scratch ([`SCRATCH`] bytes for all of a record's
//! renderings: a message, a short value) so that the second pass copies
//! them rather than rendering again. A rendering that does not fit in what
//! is left of the scratch is rendered again by the second pass, up to the
//! length the first measured (padded with spaces if it comes out shorter),
//! so a value that renders differently the second time cannot overrun its
//! slot.

use ringtrace_ring::PayloadStream;
use ringtrace_tracepoint::tracing_record::{
    floor_char_boundary, CUT_FLAG, TAG_BOOL, TAG_DEBUG, TAG_F64, TAG_I64, TAG_STR, TAG_U64,
};
use std::fmt::{self, Write as _};
use tracing_core::field::{Field, Visit};

/// Fields per record at most; those past it are skipped and counted
/// (`LayerStats::fields_dropped`).
pub(crate) const MAX_FIELDS: usize = 128;

/// Whether a field's index fits the record's one byte for it: a field
/// past the 256th of its callsite does not, and is skipped and counted.
#[inline(always)]
pub(crate) fn encodable(field: &Field) -> bool {
    field.index() <= usize::from(u8::MAX)
}
/// Bytes of `Debug` renderings a record keeps from its first pass.
pub(crate) const SCRATCH: usize = 128;

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
    cut: u128,
    /// Bit `k`: field ordinal `k`'s rendering is in the scratch.
    staged: u128,
    /// Fields skipped: past [`MAX_FIELDS`], or not [`encodable`].
    pub skipped: u32,
    /// Where each staged rendering starts in the scratch.
    staged_at: [u8; MAX_FIELDS],
    scratch: [u8; SCRATCH],
    scratch_used: usize,
}

impl Measure {
    pub(crate) fn new(limit: usize) -> Measure {
        Measure {
            limit,
            len: 0,
            count: 0,
            kept: [0; MAX_FIELDS],
            cut: 0,
            staged: 0,
            staged_at: [0; MAX_FIELDS],
            skipped: 0,
            scratch: [0; SCRATCH],
            scratch_used: 0,
        }
    }

    /// Strings cut.
    pub(crate) fn cuts(&self) -> u32 {
        self.cut.count_ones()
    }

    /// Whether `field` is kept: else it is counted skipped, as the
    /// second pass skips it.
    fn keeps(&mut self, field: &Field) -> bool {
        if self.count < MAX_FIELDS && encodable(field) {
            return true;
        }
        self.skipped += 1;
        false
    }

    fn fixed(&mut self, field: &Field, bytes: usize) {
        if self.keeps(field) {
            self.len += 2 + bytes;
            self.count += 1;
        }
    }

    /// A kept string field (after [`keeps`](Self::keeps)).
    fn string(&mut self, kept: usize, cut: bool) {
        self.kept[self.count] = kept as u16;
        self.cut |= u128::from(cut) << self.count;
        self.len += 4 + kept;
        self.count += 1;
    }
}

/// Counts what a `Debug` rendering writes, up to a limit, stopping the
/// rendering there, and keeps the bytes while they fit in `scratch`.
struct CutCounter<'a> {
    room: usize,
    taken: usize,
    cut: bool,
    scratch: &'a mut [u8],
    /// Whether every byte taken is in `scratch`.
    staged: bool,
}

impl fmt::Write for CutCounter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.room - self.taken;
        let n = if s.len() <= room {
            s.len()
        } else {
            floor_char_boundary(s, room)
        };
        if self.staged {
            match self.scratch.get_mut(self.taken..self.taken + n) {
                Some(to) => to.copy_from_slice(&s.as_bytes()[..n]),
                None => self.staged = false,
            }
        }
        self.taken += n;
        if n < s.len() {
            self.cut = true;
            // Stops the rendering: nothing more is kept.
            return Err(fmt::Error);
        }
        Ok(())
    }
}

impl Visit for Measure {
    fn record_i64(&mut self, field: &Field, _: i64) {
        self.fixed(field, 8);
    }
    fn record_u64(&mut self, field: &Field, _: u64) {
        self.fixed(field, 8);
    }
    fn record_f64(&mut self, field: &Field, _: f64) {
        self.fixed(field, 8);
    }
    fn record_bool(&mut self, field: &Field, _: bool) {
        self.fixed(field, 1);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.keeps(field) {
            let kept = floor_char_boundary(value, self.limit);
            self.string(kept, kept < value.len());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if !self.keeps(field) {
            return;
        }
        let start = self.scratch_used;
        let mut counter = CutCounter {
            room: self.limit,
            taken: 0,
            cut: false,
            scratch: &mut self.scratch[start..],
            staged: true,
        };
        // An error is the counter stopping at the limit (or the value's
        // own formatting failing): what was counted is what is kept.
        let _ = write!(counter, "{value:?}");
        let (taken, cut, staged) = (counter.taken, counter.cut, counter.staged);
        if staged {
            self.staged |= 1 << self.count;
            // `start` < SCRATCH = 128: it fits in a u8.
            self.staged_at[self.count] = start as u8;
            self.scratch_used += taken;
        }
        self.string(taken, cut);
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
    /// The field's header, or `None` for a field the first pass skipped
    /// (past [`MAX_FIELDS`], or not [`encodable`]).
    #[inline]
    fn head(&mut self, field: &Field, tag: u8) -> Option<usize> {
        let at = self.at;
        if at >= MAX_FIELDS || !encodable(field) {
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
            if self.measure.staged & (1 << at) != 0 {
                let start = usize::from(self.measure.staged_at[at]);
                self.stream.put(&self.measure.scratch[start..start + kept]);
                return;
            }
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
