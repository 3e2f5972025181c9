//! `ringtrace record --endpoint URL`: the span trees of the rings being
//! drained sent to an OpenTelemetry collector as they are made whole.
//! Each round's events are put in time order per process, decoded, and
//! given to a [`LiveExport`], which decides each tree by the keep rules
//! and sends it from a thread of its own.

use ringtrace_export::spans::ProcessKey;
use ringtrace_export::{Decoded, Decoder, WallClock};
use ringtrace_otlp::live::{LiveExport, LiveProcess};
use ringtrace_otlp::{OtlpError, OtlpOptions, OtlpSummary};
use ringtrace_ring::file::{FileClock, FileHeader};
use ringtrace_ring::PageBuf;
use std::collections::HashMap;

/// A process seen: its place, decoder and clock.
struct Known {
    key: ProcessKey,
    decoder: Decoder,
    records: usize,
    clock: FileClock,
}

/// One event of a round, waiting to be put in order.
struct Waiting {
    process: (u32, u64),
    cpu: usize,
    ticks: u64,
    payload: Vec<u8>,
}

/// The stream.
pub struct OtlpStream {
    export: LiveExport,
    known: HashMap<(u32, u64), Known>,
    round: Vec<Waiting>,
}

impl OtlpStream {
    /// Starts sending to `options`' endpoint.
    pub fn start(options: OtlpOptions) -> OtlpStream {
        OtlpStream {
            export: LiveExport::start(options),
            known: HashMap::new(),
            round: Vec::new(),
        }
    }

    /// Takes the events of `page` (see `Watch::page`).
    pub fn page(
        &mut self,
        header: &FileHeader,
        metadata: &[u8],
        records: &[Vec<u8>],
        page: &PageBuf,
    ) {
        let id = (header.pid, header.anchor_ticks);
        let stale = self
            .known
            .get(&id)
            .is_none_or(|k| k.records != records.len());
        if stale {
            let decoder = Decoder::for_ring(metadata, records);
            let key = match self.known.get(&id) {
                Some(k) => k.key,
                None => {
                    let wall = WallClock::of_process(header, records);
                    let p = LiveProcess::new(header.pid, &header.comm, &header.clock.name, wall);
                    let index = self.export.add_process(p);
                    ProcessKey::new(index, header.pid, header.anchor_ticks)
                }
            };
            self.known.insert(
                id,
                Known {
                    key,
                    decoder,
                    records: records.len(),
                    clock: header.clock.clone(),
                },
            );
        }
        for (ticks, payload) in page.events() {
            self.round.push(Waiting {
                process: id,
                cpu: page.cpu,
                ticks,
                payload: payload.to_vec(),
            });
        }
    }

    /// The round is over: its events in time order per process, applied,
    /// and the trees made whole queued for sending.
    pub fn round(&mut self) {
        let mut round = std::mem::take(&mut self.round);
        round.sort_by_key(|w| (w.process, w.ticks));
        for w in &round {
            let Some(k) = self.known.get(&w.process) else {
                continue;
            };
            let ns = |ticks: u64| k.clock.ticks_to_ns(ticks).unwrap_or(ticks);
            match k.decoder.decode(&w.payload) {
                Decoded::Tracing(r) => {
                    let start = r.start.map(ns);
                    self.export.record(k.key, &r, w.cpu, ns(w.ticks), start);
                }
                _ => self.export.other(ns(w.ticks)),
            }
        }
        round.clear();
        self.round = round;
        self.export.round();
    }

    /// Sends what is left and sums up.
    pub fn finish(mut self) -> Result<OtlpSummary, OtlpError> {
        self.round();
        self.export.finish()
    }
}
