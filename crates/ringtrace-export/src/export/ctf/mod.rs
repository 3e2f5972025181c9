//! The CTF format: a CTF 1.8 trace directory that babeltrace2 and Trace
//! Compass read: a TSDL `metadata` file and one stream file per CPU
//! buffer (`stream_0`, `stream_1`, ...). docs/export.md maps the fields.

mod classes;
mod clock;
mod stream;
mod tsdl;
mod uuid;

use super::{output, ExportError, ExportSummary};
use crate::metadata::TraceMetadata;
use crate::summary::metadata_decoder;
use crate::text::comm;
use classes::Classes;
use clock::CtfClock;
use ringtrace_ring::file::{Recovery, WriterState};
use std::path::Path;
use uuid::Uuid;

/// Writes `recovery` as the CTF trace directory `out`.
pub(super) fn write(recovery: &Recovery, out: &Path) -> Result<ExportSummary, ExportError> {
    let h = &recovery.header;
    let meta = recovery
        .metadata
        .as_ref()
        .ok()
        .and_then(|bytes| TraceMetadata::parse(bytes).ok())
        .map(|m| crate::tracing_export::with_text_tracepoint(&m, recovery.metadata_records()));
    let decoder = metadata_decoder(recovery).decoder;
    let classes = Classes::new(meta.as_ref());
    let uuid = Uuid::of(h, "trace");
    let env = tsdl::Env {
        hostname: hostname(recovery),
        pid: h.pid,
        comm: comm(recovery).to_owned(),
        clock: h.clock.name.clone(),
        mode: h.mode.name().to_owned(),
    };
    let text = tsdl::metadata(&classes, &CtfClock::of(h), uuid, &env);
    let encoder = stream::Encoder {
        uuid,
        classes: &classes,
        decoder: &decoder,
        pid: h.pid,
    };
    // A stream with no events, and the empty packet before a first loss,
    // are at the ring's opening (or the first event, if earlier).
    let first = recovery
        .cpus
        .iter()
        .filter_map(|c| c.events.first().map(|e| e.ts))
        .min();
    let start = first.map_or(h.anchor_ticks, |f| f.min(h.anchor_ticks));
    output::write_dir(out, |dir| {
        let failed = |name: &str, e: std::io::Error| ExportError::Output {
            path: out.to_owned(),
            reason: format!("{name}: {e}"),
            kind: Some(e.kind()),
        };
        std::fs::write(dir.join("metadata"), text).map_err(|e| failed("metadata", e))?;
        // One CPU's stream in memory at a time.
        for c in &recovery.cpus {
            let name = format!("stream_{}", c.cpu);
            let bytes = encoder.stream(c.cpu, &c.events, start);
            std::fs::write(dir.join(&name), bytes).map_err(|e| failed(&name, e))?;
        }
        Ok(())
    })?;
    let events = recovery.cpus.iter().map(|c| c.events.len() as u64).sum();
    let lost = recovery
        .cpus
        .iter()
        .flat_map(|c| c.events.iter())
        .map(|e| e.lost_before)
        .sum();
    Ok(ExportSummary {
        path: out.to_owned(),
        events,
        lost,
        // Nothing is left out: undecodable payloads are `ringtrace:raw`.
        warnings: Vec::new(),
    })
}

/// The machine the trace was recorded on, when that is known: this one,
/// for a writer still alive here. The file does not name its machine, so
/// a file whose writer is gone may come from another.
fn hostname(recovery: &Recovery) -> Option<String> {
    if recovery.writer != WriterState::Live {
        return None;
    }
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(name.trim().to_owned()).filter(|n| !n.is_empty())
}
