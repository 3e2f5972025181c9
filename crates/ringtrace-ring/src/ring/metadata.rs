//! The ring's metadata annex, as the ring's user sees it: records
//! appended at run time beside the events.

use super::RingBuffer;
use crate::annex::AppendMetadataError;
use ringtrace_clock::Clock;

impl<C: Clock> RingBuffer<C> {
    /// Appends `record` to the ring's metadata annex: bytes that describe
    /// events (a `tracing` layer's description of a callsite, learnt at
    /// run time), opaque to the ring. A file ring keeps them in its file,
    /// where [`file::recover`](crate::file::recover) finds them after a
    /// crash; a memory ring keeps them for [`RingBuffer::snapshot`].
    /// Records come back in the order they were appended.
    ///
    /// A record that does not fit in what is left of
    /// [`RingConfig::metadata_capacity`](crate::RingConfig::metadata_capacity)
    /// is refused ([`AppendMetadataError::Full`]) and the earlier ones are kept;
    /// so is an empty one. Appends are serialised by a lock: not for the
    /// hot path, and not async-signal-safe (never from a signal handler).
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::{AppendMetadataError, RingBuffer, RingConfig};
    /// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).metadata_capacity(16);
    /// let ring = RingBuffer::new(config, Counter::new())?;
    /// ring.append_metadata(b"callsite 1")?; // 4 + 10 bytes of 16
    /// let err = ring.append_metadata(b"callsite 2").unwrap_err();
    /// assert_eq!(err, AppendMetadataError::Full { needed: 14, free: 2, capacity: 16 });
    /// assert!(err.to_string().contains("raise RingConfig::metadata_capacity"));
    /// assert_eq!(ring.metadata_records(), vec![b"callsite 1".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append_metadata(&self, record: &[u8]) -> Result<(), AppendMetadataError> {
        self.annex.append(record)
    }

    /// The records appended so far (by this run, and for a file ring
    /// appended to, by the earlier runs first), in order.
    pub fn metadata_records(&self) -> Vec<Vec<u8>> {
        self.annex.records()
    }

    /// Bytes of the metadata records so far, each with its 4-byte length:
    /// it grows with every record appended, so that a reader (a stream's
    /// consumer) reads the records again only when there are new ones.
    pub fn metadata_len(&self) -> usize {
        self.annex.len()
    }
}
