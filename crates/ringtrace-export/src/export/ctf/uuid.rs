//! The trace's and the clock's UUIDs, derived from the file header so that
//! exporting one file twice gives the same trace.

use ringtrace_ring::file::{fnv1a64, FileHeader};

/// A UUID: its 16 bytes (as the packet header carries them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The UUID named `what` (`trace`, `clock`) of the file with `header`:
    /// two FNV-1a 64 hashes of the header's fields and `what`, marked as an
    /// RFC 9562 version 8 (custom) UUID.
    pub fn of(header: &FileHeader, what: &str) -> Uuid {
        let c = &header.clock;
        let fields = format!(
            "{what}|{}|{}|{}|{}|{}|{}|{}|{:?}|{:?}|{}|{}|{:?}|{}|{}|{}|{}|{}",
            header.version,
            header.page_size,
            header.pages_per_cpu,
            header.cpus,
            header.quarantine_pages,
            header.mode.name(),
            c.name,
            c.frequency_hz,
            c.mult,
            c.shift,
            c.ticks_are_ns,
            c.precision_ns,
            header.wall_ns,
            header.anchor_ticks,
            header.pid,
            header.comm,
            header.metadata_checksum,
        );
        let hi = fnv1a64(format!("hi|{fields}").as_bytes());
        let lo = fnv1a64(format!("lo|{fields}").as_bytes());
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi.to_be_bytes());
        b[8..].copy_from_slice(&lo.to_be_bytes());
        b[6] = (b[6] & 0x0f) | 0x80; // version 8
        b[8] = (b[8] & 0x3f) | 0x80; // variant 10
        Uuid(b)
    }
}

impl std::fmt::Display for Uuid {
    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
