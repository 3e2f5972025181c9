//! `ringtrace record --endpoint URL`: the span trees of the rings being
//! drained sent to an OpenTelemetry collector as they are made whole.
//! Each round's events are put in time order per process, decoded, and
//! given to a [`LiveExport`], which decides each tree by the keep rules
//! and sends it from a thread of its own. An event whose order an
//! earlier round does not vouch for is held a round ([`Hold`]).

use super::hold::{Hold, Timed};
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
    /// How its times map to Unix time, as last told to the export.
    wall: WallClock,
}

/// One event of a round, waiting to be put in order: its CPU and bytes.
struct Waiting {
    cpu: usize,
    payload: Vec<u8>,
}

/// The stream.
pub struct OtlpStream {
    export: LiveExport,
    known: HashMap<(u32, u64), Known>,
    /// This round's events.
    round: Vec<Timed<(u32, u64), Waiting>>,
    hold: Hold<(u32, u64), Waiting>,
}

impl OtlpStream {
    /// Starts sending to `options`' endpoint.
    pub fn start(options: OtlpOptions) -> OtlpStream {
        OtlpStream {
            export: LiveExport::start(options),
            known: HashMap::new(),
            round: Vec::new(),
            hold: Hold::new(),
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
            // Its clock anchors record may have come since (the reader of a
            // finished session maps by it too): the export is told.
            let wall = WallClock::of_process(header, records);
            let key = match self.known.get(&id) {
                Some(k) => {
                    if k.wall != wall {
                        self.export.set_wall(k.key.index, wall);
                    }
                    k.key
                }
                None => {
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
                    wall,
                },
            );
        }
        for (ticks, payload) in page.events() {
            self.round.push(Timed {
                process: id,
                ticks,
                item: Waiting {
                    cpu: page.cpu,
                    payload: payload.to_vec(),
                },
            });
        }
    }

    /// The round is over: its events and those held, as far as an earlier
    /// round vouches for their order ([`Hold`]), applied in time order per
    /// process, and the trees made whole queued for sending.
    pub fn round(&mut self) {
        let arrived = std::mem::take(&mut self.round);
        let ready = self.hold.round(arrived);
        self.apply(ready);
    }

    fn apply(&mut self, ready: Vec<Timed<(u32, u64), Waiting>>) {
        for e in &ready {
            let Some(k) = self.known.get(&e.process) else {
                continue;
            };
            let ns = |ticks: u64| k.clock.ticks_to_ns(ticks).unwrap_or(ticks);
            match k.decoder.decode(&e.item.payload) {
                Decoded::Tracing(r) => {
                    let start = r.start.map(ns);
                    self.export
                        .record(k.key, &r, e.item.cpu, ns(e.ticks), start);
                }
                _ => self.export.other(ns(e.ticks)),
            }
        }
        self.export.round();
    }

    /// Sends what is left and sums up.
    pub fn finish(mut self) -> Result<OtlpSummary, OtlpError> {
        let arrived = std::mem::take(&mut self.round);
        let ready = self.hold.finish(arrived);
        self.apply(ready);
        self.export.finish()
    }
}
