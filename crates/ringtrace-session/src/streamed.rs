//! A session opened streamed gives its events a chunk at a time: each
//! CPU's chunks are read in order when a reader asks for them, and what is
//! wrong with them is noted as they are read.

use crate::cpu_read::CpuChunks;
use crate::reader::Session;
use ringtrace_ring::file::{EventBatch, EventSource};

impl EventSource for Session {
    /// Process `process`'s CPU `cpu`: a chunk's events at a time when the
    /// session was opened streamed, else all its events as one batch.
    fn batches(&self, process: usize, cpu: usize) -> Box<dyn Iterator<Item = EventBatch> + '_> {
        if !self.streamed {
            let events = self
                .processes()
                .get(process)
                .and_then(|p| p.recovery().cpus.get(cpu))
                .map(|c| {
                    EventBatch::new(c.events.clone())
                        .with_fill(c.fill.clone())
                        .with_loss_notes(c.loss_notes.clone())
                });
            return Box::new(events.into_iter());
        }
        let Some((dir, owner)) = self.owners.get(process).and_then(|p| p.get(cpu)) else {
            return Box::new(std::iter::empty());
        };
        let pid = self.processes().get(process).map_or(0, |p| p.pid);
        let name = format!("process {pid}, CPU {cpu}");
        Box::new(CpuChunks::new(dir, owner.clone()).map(move |chunk| {
            if !chunk.problems.is_empty() {
                if let Ok(mut all) = self.stream_problems.lock() {
                    // A chunk read again (a second pass) says it once.
                    for p in &chunk.problems {
                        let p = format!("{name}: {p}");
                        if !all.contains(&p) {
                            all.push(p);
                        }
                    }
                }
            }
            EventBatch::new(chunk.events)
                .with_fill(chunk.fill)
                .with_loss_notes(chunk.loss_notes)
        }))
    }
}
