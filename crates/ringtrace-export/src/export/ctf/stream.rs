//! A CPU's stream file: its events in packets, each with its time range,
//! its CPU and the events discarded so far.

use super::classes::Classes;
use super::uuid::Uuid;
use crate::decode::{Decoded, Decoder};
use ringtrace_ring::Event;
use ringtrace_tracepoint::{FieldKind, FieldValue};

/// The magic number that starts every CTF packet.
pub(super) const PACKET_MAGIC: u32 = 0xC1FC_1FC1;
/// A packet is closed before an event that would take it past this many
/// bytes (a larger event has a packet of its own).
const PACKET_BYTES: usize = 4096;
/// Packet header (magic, uuid, stream_id) and context (timestamp_begin,
/// timestamp_end, content_size, packet_size, events_discarded, cpu_id).
const PACKET_OVERHEAD: usize = 4 + 16 + 4 + 8 * 5 + 4;

/// What every event of the trace needs to be written.
pub(super) struct Encoder<'a> {
    /// The trace's UUID, in every packet header.
    pub uuid: Uuid,
    /// The event classes.
    pub classes: &'a Classes,
    /// The file's decoder.
    pub decoder: &'a Decoder,
    /// The thread id of events that carry none (the writer's pid).
    pub pid: u32,
    /// The stream class of the process (its index in the trace).
    pub stream_id: u32,
    /// In a trace of several processes, the command name each event's
    /// context carries after the tid and pid.
    pub procname: Option<&'a str>,
    /// An event's ticks on the trace's timeline.
    pub timeline: &'a dyn Fn(u64) -> u64,
}

/// One packet being filled.
struct Packet {
    begin: u64,
    end: u64,
    discarded: u64,
    events: Vec<u8>,
}

impl Encoder<'_> {
    /// The stream file of CPU `cpu` holding `events` (oldest first); `start`
    /// is the time of the packet a stream without events has, and of the
    /// empty packet that comes before the first event when events were lost
    /// before it (so that a reader counts them from zero).
    ///
    /// An event after a loss starts a packet of its own, whose
    /// `events_discarded` counts the loss: a reader reports the events
    /// discarded between the end of the packet before and that event.
    ///
    /// `unplaced` events lost that no event carries
    /// (`CpuRecovery::unplaced`: a CPU with no event's, refused writes,
    /// losses after the last event) close the stream with an empty packet
    /// at the last event's time (`start` with no event), whose
    /// `events_discarded` counts them: a reader reports them discarded
    /// after the last event (with no event, after an empty packet at 0).
    ///
    /// A timestamp earlier than the one before it (which a sound file never
    /// has) is raised to it, as a stream is in time order.
    pub fn stream(&self, cpu: usize, events: &[Event], start: u64, unplaced: u64) -> Vec<u8> {
        let mut packets: Vec<Packet> = Vec::new();
        let mut current: Option<Packet> = None;
        let mut discarded = 0u64;
        let mut last = 0u64;
        for e in events {
            let ts = (self.timeline)(e.ts).max(last);
            last = ts;
            let bytes = self.event(e, ts);
            let full = current.as_ref().is_some_and(|p| {
                !p.events.is_empty()
                    && PACKET_OVERHEAD + p.events.len() + bytes.len() > PACKET_BYTES
            });
            if e.lost_before > 0 || full || current.is_none() {
                packets.extend(current.take());
                if e.lost_before > 0 && packets.is_empty() {
                    let t = start.min(ts);
                    packets.push(Packet {
                        begin: t,
                        end: t,
                        discarded: 0,
                        events: Vec::new(),
                    });
                }
                discarded = discarded.saturating_add(e.lost_before);
                current = Some(Packet {
                    begin: ts,
                    end: ts,
                    discarded,
                    events: Vec::new(),
                });
            }
            if let Some(p) = current.as_mut() {
                p.end = ts;
                p.events.extend_from_slice(&bytes);
            }
            if e.lost_before > 0 {
                // Alone in its packet, so that a reader's discarded-events
                // range ends at it.
                packets.extend(current.take());
            }
        }
        packets.extend(current);
        if packets.is_empty() {
            packets.push(Packet {
                begin: start,
                end: start,
                discarded: 0,
                events: Vec::new(),
            });
        }
        if unplaced > 0 {
            let t = if events.is_empty() { start } else { last };
            packets.push(Packet {
                begin: t,
                end: t,
                discarded: discarded.saturating_add(unplaced),
                events: Vec::new(),
            });
        }
        let mut out = Vec::with_capacity(
            packets
                .iter()
                .map(|p| PACKET_OVERHEAD + p.events.len())
                .sum(),
        );
        for p in &packets {
            self.packet(&mut out, cpu, p);
        }
        out
    }

    fn packet(&self, out: &mut Vec<u8>, cpu: usize, p: &Packet) {
        let bits = ((PACKET_OVERHEAD + p.events.len()) as u64) * 8;
        out.extend_from_slice(&PACKET_MAGIC.to_le_bytes());
        out.extend_from_slice(&self.uuid.0);
        out.extend_from_slice(&self.stream_id.to_le_bytes());
        out.extend_from_slice(&p.begin.to_le_bytes());
        out.extend_from_slice(&p.end.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes()); // content_size
        out.extend_from_slice(&bits.to_le_bytes()); // packet_size
        out.extend_from_slice(&p.discarded.to_le_bytes());
        out.extend_from_slice(&u32::try_from(cpu).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&p.events);
    }

    /// One event: header (class id, timestamp), context (tid, and pid and
    /// procname in a trace of several processes), payload.
    fn event(&self, e: &Event, ts: u64) -> Vec<u8> {
        let mut decoded = self.decoder.decode(&e.payload);
        let class = self.classes.id_of(&decoded);
        if matches!(decoded, Decoded::Tracing(_)) && self.classes.is_raw(class) {
            decoded = Decoded::Raw {
                why: "a `tracing` record, and the file has no metadata to declare its class by"
                    .into(),
            };
        }
        let mut out = Vec::with_capacity(16 + e.payload.len() + 8);
        out.extend_from_slice(&class.to_le_bytes());
        out.extend_from_slice(&ts.to_le_bytes());
        out.extend_from_slice(&decoded.tid().unwrap_or(self.pid).to_le_bytes());
        if let Some(procname) = self.procname {
            out.extend_from_slice(&self.pid.to_le_bytes());
            put_str(&mut out, procname);
        }
        match &decoded {
            Decoded::Tracepoint { desc, values, .. } => {
                for (f, v) in desc.fields.iter().zip(values) {
                    put(&mut out, f.kind, v);
                }
            }
            Decoded::Untagged { layout, values } => {
                for (f, v) in layout.fields.iter().zip(values) {
                    put(&mut out, f.kind, v);
                }
            }
            Decoded::Tracing(t) => {
                for v in crate::tracing_export::generic_values(t) {
                    put(&mut out, FieldKind::Str, &v);
                }
            }
            Decoded::Raw { why } => {
                put_str(&mut out, why);
                let len = u32::try_from(e.payload.len()).unwrap_or(u32::MAX);
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(&e.payload[..len as usize]);
            }
        }
        out
    }
}

/// Appends `v` as a field of `kind`: integers in their size, little-endian;
/// bool as a u8 of 0 or 1; f64 as its bits; strings NUL-terminated.
fn put(out: &mut Vec<u8>, kind: FieldKind, v: &FieldValue) {
    let bits = match v {
        FieldValue::Unsigned(n) => *n,
        FieldValue::Signed(n) => *n as u64,
        FieldValue::Bool(b) => u64::from(*b),
        FieldValue::Float(f) => f.to_bits(),
        FieldValue::Str(_) | FieldValue::Bytes(_) | FieldValue::Location { .. } => 0,
    };
    let le = bits.to_le_bytes();
    match kind {
        FieldKind::U8 | FieldKind::I8 | FieldKind::Bool => out.push(le[0]),
        FieldKind::U16 | FieldKind::I16 => out.extend_from_slice(&le[..2]),
        FieldKind::U32 | FieldKind::I32 => out.extend_from_slice(&le[..4]),
        FieldKind::U64 | FieldKind::I64 | FieldKind::F64 => out.extend_from_slice(&le),
        FieldKind::Str => match v {
            FieldValue::Str(s) => put_str(out, s),
            other => put_str(out, &other.to_string()),
        },
        FieldKind::Location => {
            let (file, line, column) = match v {
                FieldValue::Location { file, line, column } => (file.as_str(), *line, *column),
                _ => ("", 0, 0),
            };
            put_str(out, file);
            out.extend_from_slice(&line.to_le_bytes());
            out.extend_from_slice(&column.to_le_bytes());
        }
    }
}

/// Appends `s` NUL-terminated, a NUL inside it replaced by U+FFFD (a CTF
/// string ends at its first NUL).
fn put_str(out: &mut Vec<u8>, s: &str) {
    if s.contains('\0') {
        out.extend_from_slice(s.replace('\0', "\u{FFFD}").as_bytes());
    } else {
        out.extend_from_slice(s.as_bytes());
    }
    out.push(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each packet's (begin, end, events_discarded, cpu_id, bytes).
    fn packets(mut stream: &[u8]) -> Vec<(u64, u64, u64, u32, usize)> {
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let mut out = Vec::new();
        while !stream.is_empty() {
            assert_eq!(stream[..4], PACKET_MAGIC.to_le_bytes());
            let size = (u64_at(stream, 48) / 8) as usize;
            assert_eq!(u64_at(stream, 40), u64_at(stream, 48), "no padding");
            let cpu = u32::from_le_bytes(stream[64..68].try_into().unwrap());
            out.push((
                u64_at(stream, 24),
                u64_at(stream, 32),
                u64_at(stream, 56),
                cpu,
                size,
            ));
            stream = &stream[size..];
        }
        out
    }

    #[test]
    fn packets_split_at_4_kib_and_at_losses_whose_count_accumulates() {
        let classes = Classes::new(None);
        let decoder = Decoder::unusable("none");
        let encoder = Encoder {
            uuid: Uuid([7; 16]),
            classes: &classes,
            decoder: &decoder,
            pid: 9,
            stream_id: 0,
            procname: None,
            timeline: &|t| t,
        };
        let event = |ts, lost_before| Event {
            cpu: 3,
            ts,
            payload: vec![0xAB; 200],
            lost_before,
        };
        let mut events = vec![event(100, 5)];
        events.extend((1..40).map(|i| event(100 + i, 0)));
        events.push(event(500, 2));
        events.push(event(501, 0));
        let got = packets(&encoder.stream(3, &events, 50, 0));
        let summary: Vec<(u64, u64, u64, u32)> = got.iter().map(|p| (p.0, p.1, p.2, p.3)).collect();
        // An empty packet at the start, the first event after the loss
        // alone, 4 KiB packets, then the second loss alone.
        assert_eq!(summary[0], (50, 50, 0, 3));
        assert_eq!(summary[1], (100, 100, 5, 3));
        assert_eq!(summary[summary.len() - 2], (500, 500, 7, 3));
        assert_eq!(summary[summary.len() - 1], (501, 501, 7, 3));
        assert!(got.iter().all(|p| p.4 <= PACKET_BYTES), "{got:?}");
        let middle = &summary[2..summary.len() - 2];
        assert!(middle.len() >= 2, "{summary:?}");
        assert_eq!(middle[0].0, 101);
        assert_eq!(middle[middle.len() - 1].1, 139);
        assert!(middle.windows(2).all(|w| w[0].1 < w[1].0 && w[1].2 == 5));
    }

    #[test]
    fn a_stream_without_events_is_one_empty_packet_and_time_never_goes_back() {
        let classes = Classes::new(None);
        let decoder = Decoder::unusable("none");
        let encoder = Encoder {
            uuid: Uuid([7; 16]),
            classes: &classes,
            decoder: &decoder,
            pid: 9,
            stream_id: 0,
            procname: None,
            timeline: &|t| t,
        };
        assert_eq!(
            packets(&encoder.stream(1, &[], 42, 0)),
            [(42, 42, 0, 1, PACKET_OVERHEAD)]
        );
        let event = |ts| Event {
            cpu: 0,
            ts,
            payload: vec![1],
            lost_before: 0,
        };
        let got = packets(&encoder.stream(0, &[event(10), event(5)], 0, 0));
        assert_eq!((got[0].0, got[0].1), (10, 10));
        // Losses no event carries: an empty packet closes the stream, at
        // the last event's time, or after an empty one at the start.
        let got = packets(&encoder.stream(0, &[event(10), event(20)], 0, 4));
        let last = got[got.len() - 1];
        assert_eq!(
            (last.0, last.1, last.2, last.4),
            (20, 20, 4, PACKET_OVERHEAD)
        );
        assert_eq!(
            packets(&encoder.stream(1, &[], 42, 3)),
            [
                (42, 42, 0, 1, PACKET_OVERHEAD),
                (42, 42, 3, 1, PACKET_OVERHEAD)
            ]
        );
    }
}
