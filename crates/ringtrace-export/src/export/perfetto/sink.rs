//! Packets out: each `TracePacket` encoded and written as it is made, on
//! its packet sequence, with the sequence's incremental state kept as
//! Perfetto requires.
//!
//! A sequence is one writer's: a thread's (its events, with its track
//! as the sequence's default), or a process's (its track descriptors,
//! loss markers and counters). Its first packet says so
//! (`first_packet_on_sequence`), clears the incremental state
//! (`SEQ_INCREMENTAL_STATE_CLEARED`) and sets it up: the clock snapshot,
//! and the defaults (the delta clock, the thread's track). Every later
//! packet that reads that state says so (`SEQ_NEEDS_INCREMENTAL_STATE`),
//! and carries the strings it interns first, in its own
//! `interned_data`. When a sequence's strings pass a bound (the intern
//! module's), its state is cleared and set up again the same way, so the
//! tables stay bounded. Timestamps are deltas on the sequence's delta clock
//! while they do not go back, and absolute on the trace clock when they
//! do (a local span's begin, written at its end).

use super::intern::{FnvMap, Interned, Kind};
use super::proto::{self, Msg};
use super::schema::{annotation, clock, defaults, event, interned, packet, snapshot, trace};
use super::time::TimeBase;
use ringtrace_tracepoint::FieldValue;
use std::borrow::Cow;
use std::io::{self, Write};

/// A debug annotation: a name and a typed value.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Arg<'a> {
    pub name: Cow<'a, str>,
    pub value: Cow<'a, FieldValue>,
    /// Whether a string value is interned (a value that repeats, as a
    /// level does).
    pub intern: bool,
}

impl<'a> Arg<'a> {
    /// `name` = `value`, borrowed.
    pub fn of(name: &'a str, value: &'a FieldValue) -> Arg<'a> {
        Arg {
            name: Cow::Borrowed(name),
            value: Cow::Borrowed(value),
            intern: false,
        }
    }

    /// `name` = `value`, owned.
    pub fn owned(name: impl Into<String>, value: FieldValue) -> Arg<'static> {
        Arg {
            name: Cow::Owned(name.into()),
            value: Cow::Owned(value),
            intern: false,
        }
    }

    /// The same annotation, owning its parts.
    pub fn into_owned(self) -> Arg<'static> {
        Arg {
            name: Cow::Owned(self.name.into_owned()),
            value: Cow::Owned(self.value.into_owned()),
            intern: self.intern,
        }
    }

    /// The same annotation, its string value interned.
    pub fn interned(self) -> Arg<'a> {
        Arg {
            intern: true,
            ..self
        }
    }
}

/// Whose sequence: a process's (`tid: None`) or a thread's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct SeqKey {
    pub pid: u32,
    pub tid: Option<u32>,
}

/// One sequence's state.
#[derive(Debug)]
struct Sequence {
    id: u32,
    interned: Interned,
    /// The delta clock's value: the last delta-timed packet's time.
    last_ns: u64,
    /// The track events go on when they name none.
    default_track: Option<u64>,
}

/// What a track event is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum EventType {
    Begin,
    End,
    Instant,
    /// A counter sample of this value.
    Counter(Sample),
}

/// A counter's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Sample {
    Int(i64),
    Double(f64),
}

/// One track event, by reference.
#[derive(Debug, Clone, Copy)]
pub(super) struct TrackEvent<'a> {
    pub kind: EventType,
    pub track: u64,
    /// The name (an end has none: it ends the track's innermost slice).
    pub name: Option<&'a str>,
    pub category: Option<&'a str>,
    pub args: &'a [Arg<'a>],
    /// Flows it begins or continues, and flows it ends.
    pub flows: &'a [u64],
    pub ends_flows: &'a [u64],
}

impl<'a> TrackEvent<'a> {
    /// A bare event of `kind` on `track`.
    pub fn new(kind: EventType, track: u64) -> TrackEvent<'a> {
        TrackEvent {
            kind,
            track,
            name: None,
            category: None,
            args: &[],
            flows: &[],
            ends_flows: &[],
        }
    }
}

/// Writes packets to `w`.
pub(super) struct Sink<'w> {
    w: &'w mut dyn Write,
    time: TimeBase,
    sequences: FnvMap<SeqKey, Sequence>,
    /// The packet being built, kept for its buffer.
    scratch: Msg,
    /// Packets and bytes written.
    pub packets: u64,
    pub bytes: u64,
}

impl<'w> Sink<'w> {
    pub fn new(w: &'w mut dyn Write, time: TimeBase) -> Sink<'w> {
        Sink {
            w,
            time,
            sequences: FnvMap::default(),
            scratch: Msg::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// The time base.
    pub fn time(&self) -> &TimeBase {
        &self.time
    }

    /// Begins `seq` (if new) with `default_track` as its events' track:
    /// writes its first packet.
    pub fn begin(&mut self, seq: SeqKey, default_track: Option<u64>) -> io::Result<()> {
        if self.sequences.contains_key(&seq) {
            return Ok(());
        }
        let id = self.sequences.len() as u32 + 1;
        let last_ns = self
            .time
            .snapshot
            .iter()
            .find(|(c, _)| *c == clock::TRACE_DELTA)
            .map_or(0, |(_, ns)| *ns);
        self.sequences.insert(
            seq,
            Sequence {
                id,
                interned: Interned::default(),
                last_ns,
                default_track,
            },
        );
        self.clear_state(seq, true)
    }

    /// Writes the packet that clears `seq`'s incremental state and sets
    /// it up again: the clock snapshot at the delta clock's value, and the
    /// defaults; `first` on the sequence's first packet. Its interned
    /// strings are forgotten.
    fn clear_state(&mut self, seq: SeqKey, first: bool) -> io::Result<()> {
        let Some(s) = self.sequences.get_mut(&seq) else {
            return Ok(());
        };
        s.interned = Interned::default();
        let mut p = Msg::new();
        p.uint(packet::SEQUENCE_ID, u64::from(s.id));
        if first {
            p.bool(packet::FIRST_ON_SEQUENCE, true);
        }
        p.uint(packet::SEQUENCE_FLAGS, packet::STATE_CLEARED);
        let snapshot = self.time.snapshot_at(s.last_ns);
        if !snapshot.is_empty() {
            p.message(packet::CLOCK_SNAPSHOT, |c| {
                for &(clock_id, ns) in &snapshot {
                    c.message(snapshot::CLOCKS, |c| {
                        c.uint(snapshot::CLOCK_ID, u64::from(clock_id))
                            .uint(snapshot::CLOCK_TIMESTAMP, ns);
                        if clock_id == clock::TRACE_DELTA {
                            c.bool(snapshot::IS_INCREMENTAL, true);
                        }
                    });
                }
                c.uint(snapshot::PRIMARY, u64::from(self.time.primary));
            });
        }
        let delta = !snapshot.is_empty();
        let default_track = s.default_track;
        if delta || default_track.is_some() {
            p.message(packet::DEFAULTS, |d| {
                if delta {
                    d.uint(defaults::TIMESTAMP_CLOCK_ID, u64::from(clock::TRACE_DELTA));
                }
                if let Some(track) = default_track {
                    d.message(defaults::TRACK_EVENT, |t| {
                        t.uint(defaults::TRACK_UUID, track);
                    });
                }
            });
        }
        self.frame(&p)
    }

    /// Writes a `TrackDescriptor` packet on `seq` (begun first if new).
    pub fn describe(&mut self, seq: SeqKey, descriptor: &Msg) -> io::Result<()> {
        self.begin(seq, None)?;
        let id = self.sequences[&seq].id;
        let mut p = Msg::new();
        p.uint(packet::SEQUENCE_ID, u64::from(id))
            .bytes(packet::TRACK_DESCRIPTOR, &descriptor.bytes);
        self.frame(&p)
    }

    /// Writes `e` at `ns` (of the trace's clock) on `seq`, which must have
    /// begun.
    pub fn event(&mut self, seq: SeqKey, ns: u64, e: &TrackEvent<'_>) -> io::Result<()> {
        match self.sequences.get(&seq) {
            None => self.begin(seq, None)?,
            Some(s) if s.interned.is_full() => self.clear_state(seq, false)?,
            Some(_) => {}
        }
        let is_time = self.time.is_time();
        let Some(s) = self.sequences.get_mut(&seq) else {
            return Ok(());
        };
        let mut p = std::mem::take(&mut self.scratch);
        p.bytes.clear();
        p.uint(packet::SEQUENCE_ID, u64::from(s.id))
            .uint(packet::SEQUENCE_FLAGS, packet::NEEDS_STATE);
        if !is_time {
            p.uint(packet::TIMESTAMP, ns);
        } else if ns >= s.last_ns {
            p.uint(packet::TIMESTAMP, ns - s.last_ns);
            s.last_ns = ns;
        } else {
            p.uint(packet::TIMESTAMP, ns)
                .uint(packet::TIMESTAMP_CLOCK_ID, u64::from(clock::TRACE));
        }
        let interned = &mut s.interned;
        let name = e.name.map(|n| interned.id(Kind::EventName, n));
        let category = e.category.map(|c| interned.id(Kind::Category, c));
        let default_track = s.default_track;
        p.message(packet::TRACK_EVENT, |te| {
            match e.kind {
                EventType::Begin => te.uint(event::TYPE, event::SLICE_BEGIN),
                EventType::End => te.uint(event::TYPE, event::SLICE_END),
                EventType::Instant => te.uint(event::TYPE, event::INSTANT),
                EventType::Counter(_) => te.uint(event::TYPE, event::COUNTER),
            };
            if default_track != Some(e.track) {
                te.uint(event::TRACK_UUID, e.track);
            }
            if let Some(category) = category {
                te.uint(event::CATEGORY_IIDS, category);
            }
            if let Some(name) = name {
                te.uint(event::NAME_IID, name);
            }
            for arg in e.args {
                let iid = interned.id(Kind::AnnotationName, &arg.name);
                te.message(event::DEBUG_ANNOTATIONS, |a| match &*arg.value {
                    FieldValue::Str(v) if arg.intern => {
                        let value = interned.id(Kind::StringValue, v);
                        a.uint(annotation::NAME_IID, iid)
                            .uint(annotation::STRING_IID, value);
                    }
                    value => annotate(a, iid, value, interned),
                });
            }
            match e.kind {
                EventType::Counter(Sample::Int(v)) => {
                    te.int(event::COUNTER_VALUE, v);
                }
                EventType::Counter(Sample::Double(v)) => {
                    te.double(event::DOUBLE_COUNTER_VALUE, v);
                }
                _ => {}
            }
            for &f in e.flows {
                te.fixed64(event::FLOW_IDS, f);
            }
            for &f in e.ends_flows {
                te.fixed64(event::TERMINATING_FLOW_IDS, f);
            }
        });
        if !interned.fresh.is_empty() {
            let fresh = std::mem::take(&mut interned.fresh);
            p.message(packet::INTERNED_DATA, |d| {
                for (kind, iid, s) in &fresh {
                    d.message(kind.field(), |entry| {
                        entry.uint(interned::IID, *iid).string(interned::NAME, s);
                    });
                }
            });
        }
        let written = self.frame(&p);
        self.scratch = p;
        written
    }

    /// Writes `p` as one `Trace.packet`: its key and length, then it.
    fn frame(&mut self, p: &Msg) -> io::Result<()> {
        let mut head = [0u8; 16];
        let n = proto::len_prefix(trace::PACKET, p.bytes.len(), &mut head);
        self.packets += 1;
        self.bytes += (n + p.bytes.len()) as u64;
        self.w.write_all(&head[..n])?;
        self.w.write_all(&p.bytes)
    }

    /// Flushes the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// A `DebugAnnotation` of `value` named by interned name `iid`: an
/// unsigned, signed, double, bool or string value, a location as a
/// dictionary of `file`, `line` and `column`.
fn annotate(a: &mut Msg, iid: u64, value: &FieldValue, names: &mut Interned) {
    a.uint(annotation::NAME_IID, iid);
    match value {
        FieldValue::Unsigned(v) => a.uint(annotation::UINT, *v),
        FieldValue::Signed(v) => a.int(annotation::INT, *v),
        FieldValue::Bool(v) => a.bool(annotation::BOOL, *v),
        FieldValue::Float(v) => a.double(annotation::DOUBLE, *v),
        FieldValue::Str(s) => a.string(annotation::STRING, s),
        // Strings are UTF-8 in protobuf: bytes that are not become U+FFFD.
        FieldValue::Bytes(b) => a.string(annotation::STRING, &String::from_utf8_lossy(b)),
        FieldValue::Location { file, line, column } => {
            for (key, v) in [
                ("file", FieldValue::Str(file.clone())),
                ("line", FieldValue::Unsigned(u64::from(*line))),
                ("column", FieldValue::Unsigned(u64::from(*column))),
            ] {
                let iid = names.id(Kind::AnnotationName, key);
                a.message(annotation::DICT_ENTRIES, |e| annotate(e, iid, &v, names));
            }
            a
        }
    };
}
