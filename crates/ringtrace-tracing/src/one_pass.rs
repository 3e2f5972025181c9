//! Records encoded in one pass, on the stack: the header, then every
//! field visited once, straight into a buffer of [`STACK_RECORD`] bytes,
//! then one whole-event write into the ring (the ring's cheapest way in).
//! A record that does not fit (long strings or renderings) is left to the
//! two passes of [`crate::encode`], which size it first and then write it
//! into its reservation.
//!
//! The bytes are the same either way (ringtrace-tracepoint's
//! `tracing_record` layout): a field is its index and tag, then its value;
//! a string or `Debug` rendering is cut at the string limit, at a
//! character boundary, and its tag marked cut.

use ringtrace_tracepoint::tracing_record::{
    floor_char_boundary, CUT_FLAG, TAG_BOOL, TAG_DEBUG, TAG_F64, TAG_I64, TAG_STR, TAG_U64,
};
use std::fmt::{self, Write as _};
use std::mem::MaybeUninit;
use tracing_core::field::{Field, Visit};

use crate::encode::{encodable, MAX_FIELDS};

/// Bytes a record encoded on the stack may take: a header, a few numbers
/// and a message of a line or two. Larger records take two passes.
pub(crate) const STACK_RECORD: usize = 256;

/// A record being encoded into a stack buffer.
///
/// `repr(C)`, the buffer last: with the counts laid out around it, the
/// optimizer merged their zeroing and the buffer's uninitialised bytes
/// into one memset of the whole buffer, 240 bytes of stores a record.
#[repr(C)]
pub(crate) struct OnePass {
    len: usize,
    /// Where the field count goes (set by [`begin_fields`](Self::begin_fields)).
    count_at: usize,
    count: usize,
    limit: usize,
    /// Strings cut at the limit.
    cuts: u32,
    /// Fields skipped: past [`MAX_FIELDS`], or not [`encodable`].
    skipped: u32,
    /// The record did not fit: nothing of it may be written.
    overflow: bool,
    /// `buf[..len]` is written; the rest is never read (not zeroed
    /// either: that would cost a record's worth of stores each time).
    buf: [MaybeUninit<u8>; STACK_RECORD],
}

impl OnePass {
    /// An empty record; strings longer than `limit` bytes are cut.
    #[inline(always)]
    pub(crate) fn new(limit: usize) -> OnePass {
        OnePass {
            buf: [MaybeUninit::uninit(); STACK_RECORD],
            len: 0,
            count_at: usize::MAX,
            count: 0,
            limit,
            cuts: 0,
            skipped: 0,
            overflow: false,
        }
    }

    /// Appends `bytes`, or marks the record too large for the stack.
    #[inline(always)]
    pub(crate) fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        match self.buf.get_mut(self.len..end) {
            Some(to) => {
                // SAFETY: `to` is `bytes.len()` elements of `buf` (the
                // range was checked), MaybeUninit<u8> has u8's layout, and
                // `bytes` cannot overlap `buf`, which `self` borrows
                // mutably.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        to.as_mut_ptr().cast::<u8>(),
                        bytes.len(),
                    );
                }
                self.len = end;
            }
            None => self.overflow = true,
        }
    }

    /// The written bytes.
    #[inline(always)]
    fn written(&mut self) -> &mut [u8] {
        let written = &mut self.buf[..self.len];
        // SAFETY: `buf[..len]` was written (by `put`, the only place `len`
        // grows), and MaybeUninit<u8> has u8's layout.
        unsafe { &mut *(written as *mut [MaybeUninit<u8>] as *mut [u8]) }
    }

    /// Reserves the field-count byte; fields follow.
    #[inline(always)]
    pub(crate) fn begin_fields(&mut self) {
        self.count_at = self.len;
        self.put(&[0]);
    }

    /// The encoded record, or `None` if it did not fit.
    #[inline(always)]
    pub(crate) fn finish(&mut self) -> Option<&[u8]> {
        if self.overflow {
            return None;
        }
        let count = self.count as u8;
        let at = self.count_at;
        let written = self.written();
        if let Some(at) = written.get_mut(at) {
            *at = count;
        }
        Some(written)
    }

    /// Strings cut at the limit.
    pub(crate) fn cuts(&self) -> u32 {
        self.cuts
    }

    /// Fields skipped.
    pub(crate) fn skipped(&self) -> u32 {
        self.skipped
    }

    /// A field's index and tag, or `false` past [`MAX_FIELDS`] or for a
    /// field not [`encodable`] (skipped and counted, as the two-pass
    /// encoder skips it).
    #[inline(always)]
    fn head(&mut self, field: &Field, tag: u8) -> bool {
        if self.count >= MAX_FIELDS || !encodable(field) {
            self.skipped += 1;
            return false;
        }
        self.count += 1;
        self.put(&[field.index() as u8, tag]);
        true
    }

    #[inline(always)]
    fn fixed(&mut self, field: &Field, tag: u8, bytes: &[u8]) {
        if self.head(field, tag) {
            self.put(bytes);
        }
    }

    /// A string's bytes after its head: its kept length, then them.
    #[inline(always)]
    fn string_body(&mut self, tag_at: usize, value: &str) {
        let kept = floor_char_boundary(value, self.limit);
        if kept < value.len() {
            self.mark_cut(tag_at);
        }
        self.put(&(kept as u16).to_le_bytes());
        self.put(&value.as_bytes()[..kept]);
    }

    #[cold]
    fn mark_cut(&mut self, tag_at: usize) {
        self.cuts += 1;
        if let Some(tag) = self.written().get_mut(tag_at) {
            *tag |= CUT_FLAG;
        }
    }
}

/// Renders a `Debug` value into the record after its length, stopping at
/// the string limit (cut) or at the end of the buffer (overflow).
struct Render<'a> {
    pass: &'a mut OnePass,
    room: usize,
    cut: bool,
}

impl fmt::Write for Render<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = if s.len() <= self.room {
            s.len()
        } else {
            floor_char_boundary(s, self.room)
        };
        self.pass.put(&s.as_bytes()[..n]);
        self.room -= n;
        if n < s.len() {
            self.cut = true;
            // Stops the rendering: nothing more is kept.
            return Err(fmt::Error);
        }
        if self.pass.overflow {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

impl Visit for OnePass {
    #[inline]
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fixed(field, TAG_I64, &value.to_le_bytes());
    }
    #[inline]
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fixed(field, TAG_U64, &value.to_le_bytes());
    }
    #[inline]
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.fixed(field, TAG_F64, &value.to_bits().to_le_bytes());
    }
    #[inline]
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fixed(field, TAG_BOOL, &[u8::from(value)]);
    }
    #[inline]
    fn record_str(&mut self, field: &Field, value: &str) {
        let tag_at = self.len + 1;
        if self.head(field, TAG_STR) {
            self.string_body(tag_at, value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let tag_at = self.len + 1;
        if !self.head(field, TAG_DEBUG) {
            return;
        }
        let len_at = self.len;
        self.put(&[0, 0]);
        if self.overflow {
            return;
        }
        let start = self.len;
        let mut render = Render {
            room: self.limit,
            cut: false,
            pass: self,
        };
        // An error is the renderer stopping (cut, or out of room), or the
        // value's own formatting failing: what was written is kept.
        let _ = write!(render, "{value:?}");
        let cut = render.cut;
        if self.overflow {
            return;
        }
        let kept = (self.len - start) as u16;
        self.written()[len_at..len_at + 2].copy_from_slice(&kept.to_le_bytes());
        if cut {
            self.mark_cut(tag_at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_too_large_for_the_stack_is_refused_whole() {
        let mut pass = OnePass::new(1024);
        pass.begin_fields();
        pass.put(&[7; STACK_RECORD - 1]);
        assert!(pass.finish().is_some());
        pass.put(&[1]);
        assert!(pass.finish().is_none());
    }
}
