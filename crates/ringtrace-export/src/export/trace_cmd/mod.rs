//! `--format trace-cmd`: a `trace.dat` (version 6) that trace-cmd reads
//! (`trace-cmd report -i FILE`), as `trace-cmd record` writes it.
//!
//! The file, every number little-endian:
//!
//! ```text
//!  "\x17\x08\x44tracing" "6\0"  endian (0)  long size (8)  page size (u32)
//!  "header_page\0"  u64 size, the page header's format
//!  "header_event\0" u64 size, the event header's format
//!  u32 0 (no ftrace formats)
//!  u32 systems; each: name\0, u32 events; each: u64 size, its format file
//!  u32 size, kallsyms       u32 size, printk formats (none)
//!  u64 size, saved_cmdlines ("pid comm" lines)
//!  u32 cpus
//!  "options  \0"  options (u16 id, u32 size, data), u16 0
//!  "flyrecord\0"  per CPU: u64 offset, u64 size; u64 size, the
//!                 trace_clock file; then the pages, each CPU's starting
//!                 at a multiple of the page size
//! ```
//!
//! docs/export.md maps ringtrace's fields to the file's. Names from the
//! trace's metadata are made C identifiers, distinct, as the format files
//! need them (`names`); the summary's warnings say which were changed.

mod events;
mod names;
mod pages;
mod symbols;

use super::{output, ExportError, ExportSummary};
use crate::decode::{Decoded, Decoder};
use crate::metadata::TraceMetadata;
use crate::trace::Trace;
use events::Formats;
use pages::Pages;
use ringtrace_ring::file::FileClock;
use ringtrace_tracepoint::FieldValue;
use std::collections::BTreeMap;
use std::path::Path;
use symbols::Symbols;

/// `TRACECMD_OPTION_TRACECLOCK`: the trace_clock file, the clock in use in
/// brackets.
const OPTION_TRACECLOCK: u16 = 4;

/// One CPU's events, encoded.
struct CpuData {
    pages: Vec<u8>,
}

/// What went into the file besides the pages.
struct Contents {
    formats: Formats,
    symbols: Symbols,
    /// The saved cmdlines: every pid and tid, with its process's comm.
    cmdlines: BTreeMap<u32, String>,
    cpus: Vec<CpuData>,
    page_size: usize,
    events: u64,
    lost: u64,
    warnings: Vec<String>,
}

/// One process's metadata (the generic `tracing` tracepoint added when
/// it has `tracing` callsites) and the decoder by it.
struct Decoding {
    meta: TraceMetadata,
    decoder: Decoder,
}

/// Writes `trace` to `out` as a trace-cmd file.
pub fn write(trace: &Trace<'_>, out: &Path) -> Result<ExportSummary, ExportError> {
    let mut decodings = Vec::new();
    let mut formats = Formats::default();
    for p in trace.processes() {
        let r = p.recovery;
        let meta = r
            .metadata
            .as_ref()
            .map_err(|e| format!("the file's metadata cannot be read: {e}"))
            .and_then(|bytes| TraceMetadata::parse(bytes).map_err(|e| e.to_string()))
            .map_err(|why| {
                ExportError::Unsupported(format!(
                    "trace-cmd needs each event's format, from the file's metadata, and {} has none usable: {why}",
                    r.path.display()
                ))
            })?;
        let count = meta.tracepoints.len() + usize::from(meta.untagged.is_some());
        if count > events::MAX_FORMATS {
            return Err(too_many(&r.path.display().to_string(), count));
        }
        // `tracing` records go under one generic event with a text payload.
        let meta = crate::tracing_export::with_text_tracepoint(&meta, r.metadata_records());
        // The run-time records beside the metadata, as every exporter's
        // decoder has them (not decoded by yet).
        let decoder = Decoder::new(&meta).with_metadata_records(r.metadata_records().to_vec());
        formats.add(&meta, p.pid());
        decodings.push(Decoding { meta, decoder });
    }
    if formats.all.len() > events::MAX_FORMATS {
        return Err(too_many(
            &format!("the {} processes", decodings.len()),
            formats.all.len(),
        ));
    }
    let c = encode(trace, &decodings, formats);
    let failed = |e: std::io::Error| ExportError::io(out, &e);
    output::write_file(out, |w| {
        let bytes = file_bytes(trace.clock(), &c);
        w.write_all(&bytes).map_err(failed)
    })?;
    Ok(ExportSummary {
        path: out.to_owned(),
        events: c.events,
        lost: c.lost,
        warnings: c.warnings,
    })
}

fn too_many(what: &str, formats: usize) -> ExportError {
    ExportError::Unsupported(format!(
        "{what} describes {formats} events; a trace-cmd file's 16-bit event ids hold {}",
        events::MAX_FORMATS
    ))
}

/// An event's timestamp in the file: ns by the timeline's clock, or its
/// ticks when they are not time.
fn timestamp(clock: &FileClock, ticks: u64) -> u64 {
    clock.ticks_to_ns(ticks).unwrap_or(ticks)
}

/// One CPU's entries: (timestamp, pid of the process for ties, the entry,
/// events lost before it).
type Entries = Vec<(u64, u32, Vec<u8>, u64)>;

/// Decodes every event, each by its own process's decoder, and encodes it
/// as the kernel would have; each CPU's entries of every process merged in
/// time order.
fn encode(trace: &Trace<'_>, decodings: &[Decoding], mut formats: Formats) -> Contents {
    let processes = trace.processes();
    // The symbols first: every preemptirq location.
    let mut symbols = Symbols::default();
    let mut symbols_full = false;
    for (i, (p, d)) in processes.iter().zip(decodings).enumerate() {
        for e in p.recovery.cpus.iter().flat_map(|c| &c.events) {
            if let Decoded::Tracepoint { desc, values, .. } = d.decoder.decode(&e.payload) {
                if formats
                    .tracepoint(i, desc.id)
                    .is_some_and(|f| f.uses_symbols())
                {
                    for v in &values {
                        if let FieldValue::Location { file, line, column } = v {
                            symbols_full |= !symbols.add(file, *line, *column);
                        }
                    }
                }
            }
        }
    }
    let mut cmdlines = BTreeMap::new();
    for p in processes {
        cmdlines
            .entry(p.pid())
            .or_insert_with(|| p.comm().to_owned());
    }
    let (mut events, mut lost, mut raw, mut left_out, mut cut) = (0u64, 0u64, 0u64, 0u64, 0usize);
    let mut unmarked = Vec::new();
    let mut unplaced = Vec::new();
    let cpus = processes
        .iter()
        .map(|p| p.recovery.cpus.len())
        .max()
        .unwrap_or(0);
    let mut encoded: Vec<Entries> = vec![Vec::new(); cpus];
    for (i, (p, d)) in processes.iter().zip(decodings).enumerate() {
        let r = p.recovery;
        for (slot, c) in encoded.iter_mut().zip(&r.cpus) {
            let mut carried = 0u64;
            for e in &c.events {
                let pending_loss = carried + e.lost_before;
                let (format, pid, values) = match d.decoder.decode(&e.payload) {
                    Decoded::Tracepoint { desc, tid, values } => {
                        (formats.tracepoint(i, desc.id), tid, escaped(values))
                    }
                    Decoded::Untagged { values, .. } => {
                        (formats.untagged(i), p.pid(), escaped(values))
                    }
                    Decoded::Tracing(t) => {
                        match crate::tracing_export::as_text_event(&t, &d.meta) {
                            Some((desc, tid, values)) => {
                                (formats.tracepoint(i, desc.id), tid, values)
                            }
                            None => (None, 0, Vec::new()),
                        }
                    }
                    Decoded::Raw { .. } => (None, 0, Vec::new()),
                };
                let (format, pid, values) = match format {
                    Some(format) => (format, pid, values),
                    // Bytes no metadata decodes (a program's own `write`):
                    // shown as `ringtrace:raw`, their hex.
                    None => match formats.raw() {
                        Some(at) => {
                            raw += 1;
                            let hex = crate::text::hex(&e.payload);
                            (&formats.all[at], p.pid(), vec![FieldValue::Str(hex)])
                        }
                        None => {
                            left_out += 1;
                            // The loss goes on the next event written.
                            carried = pending_loss;
                            continue;
                        }
                    },
                };
                let (entry, strings_cut) = format.entry(pid, &values, &symbols);
                cut += strings_cut;
                cmdlines.entry(pid).or_insert_with(|| p.comm().to_owned());
                let ts = timestamp(trace.clock(), p.timeline(e.ts));
                slot.push((ts, p.pid(), entry, pending_loss));
                lost += pending_loss;
                carried = 0;
                events += 1;
            }
            let u = c.unplaced().total();
            if u > 0 {
                lost += u;
                unplaced.push(if trace.is_single() {
                    format!("CPU {}: {u}", c.cpu)
                } else {
                    format!("process {} CPU {}: {u}", p.pid(), c.cpu)
                });
            }
            if carried > 0 {
                unmarked.push(if trace.is_single() {
                    format!("CPU {}: {carried}", c.cpu)
                } else {
                    format!("process {} CPU {}: {carried}", p.pid(), c.cpu)
                });
            }
        }
    }
    if !trace.is_single() {
        // Each process's entries are in time order: merged, a smaller pid
        // first at one time.
        for entries in &mut encoded {
            entries.sort_by_key(|(ts, pid, _, _)| (*ts, *pid));
        }
    }
    let largest = encoded
        .iter()
        .flatten()
        .map(|(_, _, entry, _)| entry.len())
        .max()
        .unwrap_or(0);
    let page_size = pages::page_size_for(largest);
    let cpus = encoded
        .into_iter()
        .map(|entries| {
            let mut p = Pages::new(page_size);
            for (ts, _, entry, lost) in entries {
                p.push(ts, &entry, lost);
            }
            CpuData {
                pages: p.into_bytes(),
            }
        })
        .collect();
    // The names changed first: they say what the file's formats are.
    let mut warnings = formats.change_warnings();
    if raw > 0 {
        warnings.push(format!(
            "{raw} events no metadata of the file decodes (a program's own bytes, or damage) are shown as `{}:{}` with their bytes in hex",
            events::SYSTEM,
            events::RAW_EVENT
        ));
    }
    if left_out > 0 {
        warnings.push(format!(
            "{left_out} events could not be decoded by the file's metadata and, the file's event ids all taken, were left out (run `ringtrace dump` to see them)"
        ));
    }
    if !unmarked.is_empty() {
        warnings.push(format!(
            "events lost with no decodable event after them to mark the loss on, so trace-cmd does not show them: {}",
            unmarked.join(", ")
        ));
    }
    if !unplaced.is_empty() {
        warnings.push(format!(
            "events lost that no event carries (a CPU with no event recovered, writes the ring refused, whose times a ring file does not record, losses after a CPU's last event) are counted as lost but not shown, as a trace-cmd page's missed-events count marks only the event after them: {}",
            unplaced.join(", ")
        ));
    }
    if cut > 0 {
        warnings.push(format!(
            "{cut} strings were cut short: an event's strings end 64 KiB into it, where the kernel's 16-bit offsets end"
        ));
    }
    if symbols_full {
        warnings.push(
            "too many distinct preemptirq locations for s32 offsets: some print as _stext".into(),
        );
    }
    Contents {
        formats,
        symbols,
        cmdlines,
        cpus,
        page_size,
        events,
        lost,
        warnings,
    }
}

/// The kernel's name for the trace clock of the file's timestamps, so
/// that trace-cmd prints them as seconds (`local`, `global`, `mono`,
/// `mono_raw`), or as counts (`counter`: ticks that are not time).
/// ringtrace's clocks keep their kernel name where they have one; others,
/// converted to ns, are named by their ordering: `global` when readings
/// are ordered across CPUs, `local` when only on each.
fn trace_clock(clock: &FileClock) -> &'static str {
    let base = clock.name.split('@').next().unwrap_or_default();
    if clock.mult.is_none() {
        return "counter";
    }
    match base {
        "mono" => "mono",
        "mono-raw" => "mono_raw",
        "local" => "local",
        _ if clock.guarantee == ringtrace_clock::Guarantee::Global => "global",
        _ => "local",
    }
}

/// The kernel's trace_clock file with `name` in use: every clock, the one
/// in use in brackets.
fn trace_clock_file(name: &str) -> String {
    let mut out: Vec<String> = ["local", "global", "counter", "mono", "mono_raw"]
        .iter()
        .map(|c| {
            if *c == name {
                format!("[{c}]")
            } else {
                (*c).to_owned()
            }
        })
        .collect();
    out.push("\n".into());
    out.join(" ").replace(" \n", "\n")
}

fn u16le(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn u32le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn u64le(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The header_page file: the kernel's `buffer_data_page` on a 64-bit
/// machine.
fn header_page(page_size: usize) -> String {
    format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:16;\tsize:{};\tsigned:1;\n",
        page_size - pages::HEADER
    )
}

/// The header_event file: the kernel's event header.
const HEADER_EVENT: &str = "# compressed entry header\n\
    \ttype_len    :    5 bits\n\
    \ttime_delta  :   27 bits\n\
    \tarray       :   32 bits\n\
    \n\
    \tpadding     : type == 29\n\
    \ttime_extend : type == 30\n\
    \ttime_stamp : type == 31\n\
    \tdata max type_len  == 28\n";

/// The whole file, its timestamps by `clock`.
fn file_bytes(clock: &FileClock, c: &Contents) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(b"\x17\x08\x44tracing6\0");
    f.push(0); // little-endian
    f.push(8); // sizeof(long)
    u32le(&mut f, c.page_size as u32);

    f.extend_from_slice(b"header_page\0");
    let text = header_page(c.page_size);
    u64le(&mut f, text.len() as u64);
    f.extend_from_slice(text.as_bytes());
    f.extend_from_slice(b"header_event\0");
    u64le(&mut f, HEADER_EVENT.len() as u64);
    f.extend_from_slice(HEADER_EVENT.as_bytes());

    u32le(&mut f, 0); // ftrace's own event formats: none
    let mut systems: Vec<&str> = c.formats.all.iter().map(|e| e.system.as_str()).collect();
    systems.dedup();
    systems.sort_unstable();
    systems.dedup();
    u32le(&mut f, systems.len() as u32);
    for system in systems {
        f.extend_from_slice(system.as_bytes());
        f.push(0);
        let of: Vec<_> = c
            .formats
            .all
            .iter()
            .filter(|e| e.system == system)
            .collect();
        u32le(&mut f, of.len() as u32);
        for e in of {
            let text = e.format_file();
            u64le(&mut f, text.len() as u64);
            f.extend_from_slice(text.as_bytes());
        }
    }

    let kallsyms = c.symbols.kallsyms();
    u32le(&mut f, kallsyms.len() as u32);
    f.extend_from_slice(kallsyms.as_bytes());
    u32le(&mut f, 0); // printk formats: none

    let cmdlines: String = c
        .cmdlines
        .iter()
        .map(|(pid, comm)| {
            let name: String = comm
                .chars()
                .map(|ch| if ch.is_control() { '?' } else { ch })
                .collect();
            format!("{pid} {name}\n")
        })
        .collect();
    u64le(&mut f, cmdlines.len() as u64);
    f.extend_from_slice(cmdlines.as_bytes());

    u32le(&mut f, c.cpus.len() as u32);
    f.extend_from_slice(b"options  \0");
    let clock = trace_clock_file(trace_clock(clock));
    u16le(&mut f, OPTION_TRACECLOCK);
    u32le(&mut f, clock.len() as u32 + 1);
    f.extend_from_slice(clock.as_bytes());
    f.push(0);
    u16le(&mut f, 0); // TRACECMD_OPTION_DONE

    f.extend_from_slice(b"flyrecord\0");
    let table = f.len();
    f.resize(table + 16 * c.cpus.len(), 0);
    // Version 6 has the trace_clock file again here.
    u64le(&mut f, clock.len() as u64);
    f.extend_from_slice(clock.as_bytes());
    for (i, cpu) in c.cpus.iter().enumerate() {
        let start = f.len().next_multiple_of(c.page_size);
        f.resize(start, 0);
        f.extend_from_slice(&cpu.pages);
        let entry = table + 16 * i;
        f[entry..entry + 8].copy_from_slice(&(start as u64).to_le_bytes());
        f[entry + 8..entry + 16].copy_from_slice(&(cpu.pages.len() as u64).to_le_bytes());
    }
    f
}

/// A tracepoint's values with their strings escaped as the dump escapes
/// them: `trace-cmd report` prints a string as it is, so a newline in one
/// would break the event's line, an escape sequence would reach the
/// terminal, and a NUL would end it. (The generic `tracing` event's
/// strings are the dump's text, escaped already.)
fn escaped(values: Vec<FieldValue>) -> Vec<FieldValue> {
    values
        .into_iter()
        .map(|v| match v {
            FieldValue::Str(s) => FieldValue::Str(crate::text::escape(&s).into_owned()),
            FieldValue::Bytes(b) => FieldValue::Str(crate::text::escape_bytes(&b).into_owned()),
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracepoints_strings_are_escaped_as_one_line_with_nothing_cut() {
        let values = escaped(vec![
            FieldValue::Str("a\nb\u{1b}[2J\0c\\".into()),
            FieldValue::Bytes(vec![b'x', 0xff, b'\n']),
            FieldValue::Unsigned(7),
        ]);
        assert_eq!(
            values,
            [
                FieldValue::Str(r"a\nb\x1b[2J\x00c\\".into()),
                FieldValue::Str(r"x\xff\n".into()),
                FieldValue::Unsigned(7),
            ]
        );
    }
}
