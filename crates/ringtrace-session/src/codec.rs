//! Little-endian fields in order, both ways: what the chunk, process and
//! index files are made of. Reading never panics: a field past the end is
//! an error naming the field.

pub(crate) use ringtrace_ring::file::fnv1a64;

/// CRC-32 (IEEE) of `bytes`, as the u64 a chunk stores: an entry's
/// payload, a chunk's body.
pub(crate) fn crc32(bytes: &[u8]) -> u64 {
    u64::from(crc32fast::hash(bytes))
}

/// Bytes being written, field by field.
#[derive(Debug, Default)]
pub(crate) struct Put(pub Vec<u8>);

impl Put {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A u16 length, then the UTF-8 bytes (cut at a character boundary
    /// to 65,535 bytes).
    pub fn str(&mut self, s: &str) {
        let mut end = s.len().min(usize::from(u16::MAX));
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.0.extend_from_slice(&(end as u16).to_le_bytes());
        self.0.extend_from_slice(&s.as_bytes()[..end]);
    }
    /// The FNV-1a 64 of every byte so far, appended.
    pub fn checksum(&mut self) {
        let sum = fnv1a64(&self.0);
        self.u64(sum);
    }
}

/// Why bytes could not be read: which field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bad {
    pub field: &'static str,
    pub why: String,
}

pub(crate) fn bad(field: &'static str, why: impl Into<String>) -> Bad {
    Bad {
        field,
        why: why.into(),
    }
}

/// Bytes being read, field by field.
pub(crate) struct Take<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl<'a> Take<'a> {
    pub fn new(bytes: &'a [u8]) -> Take<'a> {
        Take { bytes, at: 0 }
    }
    pub fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], Bad> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| bad(field, "the bytes end before it"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    pub fn u8(&mut self, field: &'static str) -> Result<u8, Bad> {
        Ok(self.bytes(1, field)?[0])
    }
    pub fn u32(&mut self, field: &'static str) -> Result<u32, Bad> {
        let b = self.bytes(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn i32(&mut self, field: &'static str) -> Result<i32, Bad> {
        let b = self.bytes(4, field)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&mut self, field: &'static str) -> Result<u64, Bad> {
        let b = self.bytes(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    pub fn str(&mut self, field: &'static str) -> Result<String, Bad> {
        let b = self.bytes(2, field)?;
        let len = usize::from(u16::from_le_bytes([b[0], b[1]]));
        let b = self.bytes(len, field)?;
        String::from_utf8(b.to_vec()).map_err(|_| bad(field, "not UTF-8"))
    }
    /// Checks that the last 8 bytes are the FNV-1a 64 of all before them,
    /// and that they follow right after what was read.
    pub fn checksum(&mut self) -> Result<(), Bad> {
        let body = &self.bytes[..self.at];
        let want = fnv1a64(body);
        let got = self.u64("checksum")?;
        if got != want {
            return Err(bad(
                "checksum",
                format!("{got:#018x} does not match the bytes before it ({want:#018x})"),
            ));
        }
        if self.at != self.bytes.len() {
            return Err(bad(
                "checksum",
                format!("{} bytes follow it", self.bytes.len() - self.at),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_and_a_flipped_byte_fails_the_checksum() {
        let mut p = Put::default();
        p.u8(7);
        p.u32(8);
        p.i32(-9);
        p.u64(10);
        p.str("comm é");
        p.checksum();
        let mut t = Take::new(&p.0);
        assert_eq!(t.u8("a").unwrap(), 7);
        assert_eq!(t.u32("b").unwrap(), 8);
        assert_eq!(t.i32("c").unwrap(), -9);
        assert_eq!(t.u64("d").unwrap(), 10);
        assert_eq!(t.str("e").unwrap(), "comm é");
        t.checksum().unwrap();
        let mut bytes = p.0.clone();
        bytes[2] ^= 1;
        let mut t = Take::new(&bytes);
        t.bytes(bytes.len() - 8, "all").unwrap();
        assert_eq!(t.checksum().unwrap_err().field, "checksum");
        assert_eq!(Take::new(&[1]).u32("short").unwrap_err().field, "short");
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926); // the CRC-32 check value
    }
}
