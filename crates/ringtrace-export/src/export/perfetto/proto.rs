//! The protobuf wire format, as much of it as a trace needs: varints,
//! 64-bit fixed and double values, strings, and nested messages, each
//! written into a byte buffer (a nested message is encoded into its own
//! buffer first, so that its length can precede it).

/// A message being encoded.
#[derive(Debug, Default, Clone)]
pub(super) struct Msg {
    pub bytes: Vec<u8>,
}

/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes into `out` the key of length-delimited field `field` and the
/// length `len`, as they precede the field's bytes; returns how many bytes
/// (at most 15).
pub(super) fn len_prefix(field: u32, len: usize, out: &mut [u8; 16]) -> usize {
    let mut at = 0;
    for mut x in [(u64::from(field) << 3) | LEN, len as u64] {
        while x >= 0x80 {
            out[at] = (x as u8) | 0x80;
            x >>= 7;
            at += 1;
        }
        out[at] = x as u8;
        at += 1;
    }
    at
}

impl Msg {
    /// An empty message.
    pub fn new() -> Msg {
        Msg::default()
    }

    fn key(&mut self, field: u32, wire: u64) {
        put_varint(&mut self.bytes, (u64::from(field) << 3) | wire);
    }

    /// A `uint32`, `uint64`, `bool` or enum field.
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Msg {
        self.key(field, VARINT);
        put_varint(&mut self.bytes, v);
        self
    }

    /// An `int32` or `int64` field (two's complement, ten bytes when
    /// negative, as protobuf writes them).
    pub fn int(&mut self, field: u32, v: i64) -> &mut Msg {
        self.uint(field, v as u64)
    }

    /// A `bool` field.
    pub fn bool(&mut self, field: u32, v: bool) -> &mut Msg {
        self.uint(field, u64::from(v))
    }

    /// A `fixed64` field.
    pub fn fixed64(&mut self, field: u32, v: u64) -> &mut Msg {
        self.key(field, FIXED64);
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `double` field.
    pub fn double(&mut self, field: u32, v: f64) -> &mut Msg {
        self.fixed64(field, v.to_bits())
    }

    /// A `string` or `bytes` field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Msg {
        self.key(field, LEN);
        put_varint(&mut self.bytes, v.len() as u64);
        self.bytes.extend_from_slice(v);
        self
    }

    /// A `string` field.
    pub fn string(&mut self, field: u32, v: &str) -> &mut Msg {
        self.bytes(field, v.as_bytes())
    }

    /// A nested message field, built by `build` in place: its length is
    /// written before it as one byte, and moved right by the bytes a
    /// longer length needs (no buffer of its own).
    pub fn message(&mut self, field: u32, build: impl FnOnce(&mut Msg)) -> &mut Msg {
        self.key(field, LEN);
        let at = self.bytes.len();
        self.bytes.push(0);
        build(self);
        let len = self.bytes.len() - at - 1;
        if len < 0x80 {
            self.bytes[at] = len as u8;
        } else {
            let mut prefix = Vec::with_capacity(10);
            put_varint(&mut prefix, len as u64);
            self.bytes.splice(at..=at, prefix);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_encoded_as_protobuf_writes_them() {
        let mut m = Msg::new();
        m.uint(1, 150);
        assert_eq!(m.bytes, [0x08, 0x96, 0x01]); // the protobuf guide's example
        let mut m = Msg::new();
        m.string(2, "testing");
        assert_eq!(
            m.bytes,
            [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']
        );
        let mut m = Msg::new();
        m.int(4, -1);
        assert_eq!(m.bytes.len(), 1 + 10);
        assert_eq!(m.bytes[10], 0x01);
        let mut m = Msg::new();
        m.message(3, |inner| {
            inner.uint(1, 150);
        });
        assert_eq!(m.bytes, [0x1a, 0x03, 0x08, 0x96, 0x01]);
        let mut m = Msg::new();
        m.fixed64(47, 1).double(5, 1.0);
        assert_eq!(&m.bytes[..2], &[0xF9, 0x02]); // field 47, wire type 1
        assert_eq!(&m.bytes[2..10], &1u64.to_le_bytes());
        assert_eq!(&m.bytes[10..], &[0x29, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F]);
        let mut m = Msg::new();
        m.uint(87, u64::MAX);
        assert_eq!(m.bytes.len(), 2 + 10);
    }

    #[test]
    fn a_length_prefix_is_the_key_and_length_a_field_would_have() {
        for len in [0usize, 5, 127, 128, 1 << 20, u32::MAX as usize] {
            let mut head = [0u8; 16];
            let n = len_prefix(1, len, &mut head);
            let mut m = Msg::new();
            m.key(1, LEN);
            put_varint(&mut m.bytes, len as u64);
            assert_eq!(&head[..n], &m.bytes[..], "length {len}");
        }
    }

    #[test]
    fn a_nested_message_of_any_length_is_prefixed_by_its_length() {
        for len in [0usize, 1, 127, 128, 300, 16_384, 70_000] {
            let text = "x".repeat(len);
            let mut m = Msg::new();
            m.uint(1, 7).message(2, |inner| {
                inner.string(3, &text).message(4, |deeper| {
                    deeper.uint(5, 1);
                });
            });
            let mut inner = Msg::new();
            inner.string(3, &text).bytes(4, &[0x28, 1]);
            let mut expected = Msg::new();
            expected.uint(1, 7).bytes(2, &inner.bytes);
            assert_eq!(m.bytes, expected.bytes, "length {len}");
        }
    }
}
