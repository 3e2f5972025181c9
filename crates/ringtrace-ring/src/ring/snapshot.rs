//! A live ring of this process as a [`Recovery`]: what an exporter or a
//! dump takes, for a ring in memory (at exit, say) as for a file.

use super::RingBuffer;
use crate::file::header::{fnv1a64, FileClock, FileHeader, VERSION};
use crate::file::layout::FileLayout;
use crate::file::recover::{CpuRecovery, Recovery, RecoveryCounts, WriterState};
use ringtrace_clock::Clock;

impl<C: Clock> RingBuffer<C> {
    /// Every event the ring holds now, unread, as a [`Recovery`], without
    /// consuming anything: each CPU buffer's non-consuming iterator, so
    /// events committed while it runs may or may not be in it. `metadata`
    /// describes the events (ringtrace's facade:
    /// `metadata_for_tracepoints()?.to_bytes()`). The header is this ring's
    /// (a file ring's path, or `<memory>`), with the wall-clock anchor taken
    /// when the ring was opened (a file ring's header's: a snapshot reads
    /// neither clock); the first event of each CPU reports in `lost_before` the
    /// events overwritten or lost before it, and the counts are the
    /// buffers' own. The metadata records appended so far
    /// ([`RingBuffer::append_metadata`]) come with it, for a memory ring as
    /// for a file ring.
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(8192), Counter::new())?;
    /// ring.write(b"now")?;
    /// let snapshot = ring.snapshot(Vec::new());
    /// assert_eq!(snapshot.merged()[0].payload, b"now");
    /// assert_eq!(ring.stats().entries, 1); // nothing consumed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self, metadata: Vec<u8>) -> Recovery {
        let geometry = self.geometry();
        let anchor = self.anchor();
        // The layout the ring would have in a file (it has none).
        let layout =
            FileLayout::for_geometry(&geometry, metadata.len()).unwrap_or(FileLayout::NONE);
        let header = FileHeader {
            version: VERSION,
            page_size: geometry.page_size,
            pages_per_cpu: geometry.pages_per_cpu,
            cpus: geometry.cpus,
            quarantine_pages: geometry.quarantine_pages,
            mode: geometry.mode,
            layout,
            clock: FileClock::from_info(&self.clock_info()),
            wall_ns: anchor.wall_ns,
            anchor_ticks: anchor.ticks,
            pid: std::process::id(),
            comm: crate::file::create::comm(),
            metadata_checksum: fnv1a64(&metadata),
        };
        let cpus = self
            .cpu_buffers()
            .iter()
            .map(|buffer| {
                let cpu = buffer.cpu();
                let mut events: Vec<_> = self.iter(cpu).into_iter().flatten().collect();
                let stats = buffer.stats();
                if let Some(first) = events.first_mut() {
                    first.lost_before = stats.overrun.saturating_add(stats.lost);
                }
                CpuRecovery {
                    cpu,
                    counts: RecoveryCounts {
                        recovered: events.len() as u64,
                        ..RecoveryCounts::default()
                    },
                    events,
                    file_stats: stats,
                    problems: Vec::new(),
                    loss_notes: Vec::new(),
                    fill: Vec::new(),
                }
            })
            .collect();
        Recovery {
            path: self
                .file_path()
                .map_or_else(|| crate::file::MEMORY_PATH.into(), |p| p.to_owned()),
            header,
            metadata: Ok(metadata),
            writer: WriterState::Live,
            cpus,
            metadata_records: self.metadata_records(),
            annex_problems: Vec::new(),
        }
    }
}
