//! The CTF format: a CTF 1.8 trace directory that babeltrace2 and Trace
//! Compass read: a TSDL `metadata` file and one stream file per CPU
//! buffer (`stream_0`, `stream_1`, ...; with several processes, one per
//! process and CPU: `stream_<pid>_<cpu>`). docs/export.md maps the fields.

mod classes;
mod clock;
mod stream;
mod tsdl;
mod uuid;

use super::{output, ExportError, ExportSummary};
use crate::metadata::TraceMetadata;
use crate::text::comm;
use crate::trace::{Alignment, Trace};
use classes::Classes;
use clock::CtfClock;
use ringtrace_ring::file::{FileHeader, Recovery, WriterState};
use std::path::Path;
use uuid::Uuid;

/// Writes `trace` as the CTF trace directory `out`: one stream class per
/// process, each with its own event classes, and one stream per process
/// and CPU.
pub(super) fn write(trace: &Trace<'_>, out: &Path) -> Result<ExportSummary, ExportError> {
    let processes = trace.processes();
    let single = trace.is_single();
    let first = &processes[0].recovery.header;
    let classes: Vec<Classes> = processes
        .iter()
        .map(|p| {
            let r = p.recovery;
            let meta = r
                .metadata
                .as_ref()
                .ok()
                .and_then(|bytes| TraceMetadata::parse(bytes).ok())
                .map(|m| crate::tracing_export::with_text_tracepoint(&m, r.metadata_records()));
            Classes::new(meta.as_ref())
        })
        .collect();
    // The CTF clock is the timeline's: the shared clock, placed in real
    // time by the first process's anchor; or wall-clock ns since the epoch.
    let clock_header = match trace.alignment() {
        Alignment::WallClock => FileHeader {
            clock: trace.clock().clone(),
            wall_ns: 0,
            anchor_ticks: 0,
            ..first.clone()
        },
        _ => first.clone(),
    };
    let uuid = if single {
        Uuid::of(first, "trace")
    } else {
        let all: Vec<String> = processes
            .iter()
            .map(|p| {
                let h = &p.recovery.header;
                format!("{}:{}:{}:{}", h.pid, h.comm, h.wall_ns, h.anchor_ticks)
            })
            .collect();
        Uuid::of(first, &format!("trace|{}", all.join("|")))
    };
    let env = tsdl::Env {
        hostname: processes.iter().find_map(|p| hostname(p.recovery)),
        process: single.then(|| (first.pid, comm(processes[0].recovery).to_owned())),
        processes: (!single).then(|| {
            let all: Vec<String> = processes
                .iter()
                .map(|p| format!("{} {}", p.pid(), p.comm()))
                .collect();
            all.join(", ")
        }),
        alignment: (!single).then(|| {
            let notes = trace.alignment_notes();
            if notes.is_empty() {
                "one clock shared by every process".to_owned()
            } else {
                notes.join("; ")
            }
        }),
        clock: trace.clock().name.clone(),
        mode: first.mode.name().to_owned(),
    };
    let streams: Vec<&Classes> = classes.iter().collect();
    let text = tsdl::metadata(&streams, &CtfClock::of(&clock_header), uuid, &env);
    let names = stream_names(trace);
    output::write_dir(out, |dir| {
        let failed = |name: &str, e: std::io::Error| ExportError::Output {
            path: out.to_owned(),
            reason: format!("{name}: {e}"),
            kind: Some(e.kind()),
        };
        std::fs::write(dir.join("metadata"), text).map_err(|e| failed("metadata", e))?;
        for (i, (p, classes)) in processes.iter().zip(&classes).enumerate() {
            let timeline = |ticks| p.timeline(ticks);
            let encoder = stream::Encoder {
                uuid,
                classes,
                decoder: p.decoder(),
                pid: p.pid(),
                stream_id: u32::try_from(i).unwrap_or(u32::MAX),
                procname: (!single).then(|| p.comm()),
                timeline: &timeline,
            };
            // A stream with no events, and the empty packet before a first
            // loss, are at its ring's opening (or its first event, if
            // earlier).
            let start = p.start();
            // One CPU's stream in memory at a time.
            for c in &p.recovery.cpus {
                let name = format!("{}{}", names[i], c.cpu);
                let bytes = encoder.stream(c.cpu, &c.events, start, c.unplaced().total());
                std::fs::write(dir.join(&name), bytes).map_err(|e| failed(&name, e))?;
            }
        }
        Ok(())
    })?;
    let all_cpus = || processes.iter().flat_map(|p| &p.recovery.cpus);
    let events = all_cpus().map(|c| c.events.len() as u64).sum();
    let lost = all_cpus()
        .flat_map(|c| c.events.iter())
        .map(|e| e.lost_before)
        .sum::<u64>()
        + all_cpus().map(|c| c.unplaced().total()).sum::<u64>();
    Ok(ExportSummary {
        path: out.to_owned(),
        events,
        lost,
        // Nothing is left out: undecodable payloads are `ringtrace:raw`.
        warnings: Vec::new(),
    })
}

/// Each process's stream files' prefix, the CPU to follow: `stream_` for
/// one process; `stream_<pid>_` for several (`stream_<pid>.<index>_` when
/// two share a pid).
fn stream_names(trace: &Trace<'_>) -> Vec<String> {
    let processes = trace.processes();
    if trace.is_single() {
        return vec!["stream_".to_owned()];
    }
    processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let shared = processes.iter().filter(|q| q.pid() == p.pid()).count() > 1;
            if shared {
                format!("stream_{}.{i}_", p.pid())
            } else {
                format!("stream_{}_", p.pid())
            }
        })
        .collect()
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
