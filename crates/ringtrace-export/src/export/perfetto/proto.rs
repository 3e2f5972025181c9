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

    /// A nested message field, built by `build`.
    pub fn message(&mut self, field: u32, build: impl FnOnce(&mut Msg)) -> &mut Msg {
        let mut inner = Msg::new();
        build(&mut inner);
        self.bytes(field, &inner.bytes)
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
}
