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
        let pid = self.processes().get(process).map_or(0, |p| p.pid);
        let name = format!("process {pid}, CPU {cpu}");
        let chunks: Box<dyn Iterator<Item = _>> =
            match self.owners.get(process).and_then(|p| p.get(cpu)) {
                Some((dir, owner)) => Box::new(CpuChunks::new(dir, owner.clone())),
                // A CPU whose directory is gone: none of its events.
                None => Box::new(std::iter::empty()),
            };
        let mut chunks = chunks.fuse();
        // What the index counts: fewer read, with no chunk's problem to
        // say why (a CPU's directory or chunks gone), is said once all are
        // read.
        let kept = self
            .processes()
            .get(process)
            .and_then(|p| p.recovery().cpus.get(cpu))
            .map_or(0, |c| c.counts.recovered);
        let mut read = 0u64;
        let mut explained = false;
        Box::new(std::iter::from_fn(move || {
            let Some(chunk) = chunks.next() else {
                if read < kept && !explained {
                    self.note(&[format!(
                        "the session's index counts {kept} events, {read} were read (the others' chunks are gone)"
                    )], &name);
                    read = kept; // said once
                }
                return None;
            };
            explained |= !chunk.problems.is_empty();
            self.note(&chunk.problems, &name);
            read += chunk.events.len() as u64;
            Some(
                EventBatch::new(chunk.events)
                    .with_fill(chunk.fill)
                    .with_loss_notes(chunk.loss_notes),
            )
        }))
    }
}

impl Session {
    /// Notes `problems` of `name` (a process's CPU) among the stream's
    /// problems, each once: a chunk read again (a second pass) says it once.
    fn note(&self, problems: &[String], name: &str) {
        if problems.is_empty() {
            return;
        }
        if let Ok(mut all) = self.stream_problems.lock() {
            for p in problems {
                let p = format!("{name}: {p}");
                if !all.contains(&p) {
                    all.push(p);
                }
            }
        }
    }
}
