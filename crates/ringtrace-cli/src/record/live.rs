//! `--live`: each event printed as it is drained, as `ringtrace dump`
//! prints it (process, thread, CPU, time since the first event, name and
//! fields), a loss where a page reports one.

use ringtrace_export::text::{escape, escape_bytes, hex, seconds};
use ringtrace_export::{Decoded, Decoder};
use ringtrace_ring::file::FileHeader;
use ringtrace_ring::PageBuf;
use std::collections::HashMap;
use std::io::Write;

/// A process's decoder, and how many metadata records it was built with.
struct Known {
    decoder: Decoder,
    records: usize,
}

/// Prints drained events to stdout.
#[derive(Default)]
pub struct Printer {
    decoders: HashMap<u32, Known>,
    /// The first event's time in ns, per clock name: times print from it.
    base_ns: HashMap<String, u64>,
}

impl Printer {
    /// Prints the events of `page`, drained from the ring of the process
    /// with `header`, `metadata` and the `records` appended so far.
    pub fn page(
        &mut self,
        header: &FileHeader,
        metadata: &[u8],
        records: &[Vec<u8>],
        page: &PageBuf,
    ) {
        let pid = header.pid;
        let stale = self
            .decoders
            .get(&pid)
            .is_none_or(|k| k.records != records.len());
        if stale {
            let decoder = Decoder::for_ring(metadata, records);
            self.decoders.insert(
                pid,
                Known {
                    decoder,
                    records: records.len(),
                },
            );
        }
        let Some(known) = self.decoders.get(&pid) else {
            return;
        };
        let lost = page.header().lost;
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        if lost > 0 {
            let _ = writeln!(out, "CPU:{} [LOST {lost} EVENTS]", page.cpu);
        }
        for (ts, payload) in page.events() {
            let d = known.decoder.decode(payload);
            let time = match header.clock.ticks_to_ns(ts) {
                Some(ns) => {
                    let base = *self.base_ns.entry(header.clock.name.clone()).or_insert(ns);
                    seconds(ns.saturating_sub(base))
                }
                None => ts.to_string(),
            };
            let name = d.name().unwrap_or("raw");
            let what = match &d {
                Decoded::Raw { why } => format!("raw: {} ({why})", hex(payload)).into_bytes(),
                _ => {
                    let mut what = format!("{name}: ").into_bytes();
                    what.extend_from_slice(d.text().as_bytes());
                    what
                }
            };
            let _ = writeln!(
                out,
                "{:>16}-{:<7} [{:03}] {time:>15}: {}",
                escape(&header.comm),
                d.tid().unwrap_or(pid),
                page.cpu,
                escape_bytes(what.trim_ascii_end())
            );
        }
        let _ = out.flush();
    }
}
