//! Perfetto traces read back as Perfetto's trace processor reads them,
//! with every rule it relies on asserted on the way: each packet on a
//! sequence whose first packet says so and clears the incremental state;
//! interned ids defined before use and never redefined; tracks described
//! once, parents first, before any event uses them; timestamps through the
//! sequence's delta clock or the trace clock; each track's slices nested
//! once sorted by time; every flow joining two events or more. A protobuf
//! wire decoder of its own, so that it shares nothing with the exporter.

use std::collections::{BTreeMap, HashMap};

/// One protobuf field's value, as the wire carries it.
#[derive(Debug, Clone, Copy)]
pub enum Wire<'a> {
    /// A varint (an integer, bool or enum).
    Varint(u64),
    /// Eight bytes (a `fixed64` or `double`).
    Fixed64(u64),
    /// A length-delimited value (a string, bytes or a message).
    Bytes(&'a [u8]),
}

/// A message's fields, in order.
pub struct Message<'a>(pub Vec<(u32, Wire<'a>)>);

fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
    }
    panic!("a varint longer than ten bytes");
}

impl<'a> Message<'a> {
    /// Parses `b`, panicking on bytes that are no message.
    pub fn parse(b: &'a [u8]) -> Message<'a> {
        let mut at = 0;
        let mut fields = Vec::new();
        while at < b.len() {
            let key = varint(b, &mut at);
            let field = (key >> 3) as u32;
            let value = match key & 7 {
                0 => Wire::Varint(varint(b, &mut at)),
                1 => {
                    let v = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                    at += 8;
                    Wire::Fixed64(v)
                }
                2 => {
                    let len = varint(b, &mut at) as usize;
                    let v = &b[at..at + len];
                    at += len;
                    Wire::Bytes(v)
                }
                wire => panic!("wire type {wire} in field {field}"),
            };
            fields.push((field, value));
        }
        assert_eq!(at, b.len(), "a message runs past its end");
        Message(fields)
    }

    /// Field `field`'s values (the last one for a single value).
    pub fn all(&self, field: u32) -> impl Iterator<Item = Wire<'a>> + '_ {
        self.0
            .iter()
            .filter(move |(f, _)| *f == field)
            .map(|(_, v)| *v)
    }

    /// Field `field`'s values (the last one for a single value).
    pub fn uint(&self, field: u32) -> Option<u64> {
        self.all(field).last().map(|v| match v {
            Wire::Varint(v) | Wire::Fixed64(v) => v,
            Wire::Bytes(_) => panic!("field {field} is not a number"),
        })
    }

    /// Field `field`'s values (the last one for a single value).
    pub fn msg(&self, field: u32) -> Option<Message<'a>> {
        self.all(field).last().map(|v| match v {
            Wire::Bytes(b) => Message::parse(b),
            _ => panic!("field {field} is not a message"),
        })
    }

    /// Field `field`'s values (the last one for a single value).
    pub fn msgs(&self, field: u32) -> Vec<Message<'a>> {
        self.all(field)
            .map(|v| match v {
                Wire::Bytes(b) => Message::parse(b),
                _ => panic!("field {field} is not a message"),
            })
            .collect()
    }

    /// Field `field`'s values (the last one for a single value).
    pub fn string(&self, field: u32) -> Option<String> {
        self.all(field).last().map(|v| match v {
            Wire::Bytes(b) => String::from_utf8(b.to_vec()).expect("UTF-8"),
            _ => panic!("field {field} is not a string"),
        })
    }
}

/// A track event as the trace processor resolves it.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Its time, ns of the trace's clock.
    pub ts: u64,
    /// Its packet's index in the file.
    pub order: usize,
    /// Its track's uuid.
    pub track: u64,
    /// `TrackEvent.Type`: 1 slice begin, 2 slice end, 3 instant, 4 counter.
    pub kind: u64,
    /// Its name, interned or not.
    pub name: Option<String>,
    /// Its debug annotations, each value as text (a float as Rust prints
    /// it, a dictionary as `{dict}`).
    pub args: BTreeMap<String, String>,
    /// A counter sample's value (an integer, or a double as Rust prints it).
    pub counter: Option<String>,
    /// The flows it begins or continues.
    pub flows: Vec<u64>,
    /// The flows it ends.
    pub ends: Vec<u64>,
}

/// Per-sequence incremental state.
#[derive(Default)]
struct SeqState {
    interned: HashMap<(u32, u64), String>,
    delta: Option<u64>,
    clock: Option<u64>,
    track: Option<u64>,
}

/// A track: its descriptor's thread (tid) or name.
#[derive(Debug, Clone)]
pub struct Track {
    /// A thread track's tid.
    pub tid: Option<u64>,
    /// A named track's name.
    pub name: Option<String>,
}

/// Reads the trace as Perfetto does, asserting every rule on the way:
/// its track events in time order, and its tracks by uuid. Event kinds
/// are `TrackEvent.Type`'s: 1 slice begin, 2 slice end, 3 instant, 4
/// counter.
pub fn resolve(bytes: &[u8]) -> (Vec<Resolved>, HashMap<u64, Track>) {
    let trace = Message::parse(bytes);
    let mut seqs: HashMap<u64, SeqState> = HashMap::new();
    let mut tracks: HashMap<u64, Track> = HashMap::new();
    let mut events = Vec::new();
    for (order, p) in trace.msgs(1).into_iter().enumerate() {
        let seq = p.uint(10).expect("every packet is on a sequence");
        let flags = p.uint(13).unwrap_or(0);
        if let std::collections::hash_map::Entry::Vacant(v) = seqs.entry(seq) {
            assert_eq!(
                p.uint(87),
                Some(1),
                "packet {order}: a sequence's first packet says so"
            );
            assert_eq!(
                flags & 1,
                1,
                "packet {order}: a sequence's first packet clears its state"
            );
            v.insert(SeqState::default());
        }
        let state = seqs.get_mut(&seq).unwrap();
        if flags & 1 == 1 {
            // The state cleared: interned strings and defaults forgotten.
            *state = SeqState::default();
        }
        if let Some(snapshot) = p.msg(6) {
            for c in snapshot.msgs(1) {
                if c.uint(3) == Some(1) {
                    state.delta = c.uint(2);
                }
            }
        }
        if let Some(d) = p.msg(59) {
            state.clock = d.uint(58);
            state.track = d.msg(11).and_then(|t| t.uint(11));
        }
        if let Some(interned) = p.msg(12) {
            for kind in [1, 2, 3, 29] {
                for entry in interned.msgs(kind) {
                    let (iid, s) = (entry.uint(1).unwrap(), entry.string(2).unwrap());
                    let old = state.interned.insert((kind, iid), s.clone());
                    assert!(
                        old.is_none() || old == Some(s),
                        "packet {order}: iid redefined"
                    );
                }
            }
        }
        if let Some(d) = p.msg(60) {
            let uuid = d.uint(1).unwrap();
            if let Some(parent) = d.uint(5) {
                assert!(
                    tracks.contains_key(&parent),
                    "track {uuid}'s parent described first"
                );
            }
            let track = Track {
                tid: d.msg(4).and_then(|t| t.uint(2)),
                name: d.string(2),
            };
            assert!(
                tracks.insert(uuid, track).is_none(),
                "track {uuid} described once"
            );
        }
        let Some(te) = p.msg(11) else { continue };
        assert_eq!(
            flags & 2,
            2,
            "packet {order}: a track event needs the state"
        );
        let ts = match p.uint(58).or(state.clock) {
            Some(65) => {
                let now = state.delta.expect("a delta clock has a snapshot") + p.uint(8).unwrap();
                state.delta = Some(now);
                now
            }
            Some(64) | None => p.uint(8).unwrap(),
            Some(other) => panic!("packet {order}: clock {other}"),
        };
        let track = te.uint(11).or(state.track).expect("an event has a track");
        assert!(
            tracks.contains_key(&track),
            "packet {order}: track {track} described before use"
        );
        let lookup = |kind: u32, iid: u64| {
            state
                .interned
                .get(&(kind, iid))
                .unwrap_or_else(|| panic!("packet {order}: iid {iid} of kind {kind} undefined"))
                .clone()
        };
        for c in te.all(3) {
            let Wire::Varint(iid) = c else { panic!() };
            lookup(1, iid);
        }
        let mut args = BTreeMap::new();
        for a in te.msgs(4) {
            let name = lookup(3, a.uint(1).unwrap());
            let value = if let Some(iid) = a.uint(17) {
                lookup(29, iid)
            } else if let Some(s) = a.string(6) {
                s
            } else if let Some(v) = a.uint(3) {
                v.to_string()
            } else if let Some(v) = a.uint(4) {
                (v as i64).to_string()
            } else if let Some(v) = a.uint(2) {
                (v == 1).to_string()
            } else if let Some(v) = a.uint(5) {
                f64::from_bits(v).to_string()
            } else {
                String::from("{dict}")
            };
            args.insert(name, value);
        }
        let fixed = |field| {
            te.all(field)
                .map(|w| match w {
                    Wire::Fixed64(v) => v,
                    _ => panic!("flow ids are fixed64"),
                })
                .collect::<Vec<u64>>()
        };
        events.push(Resolved {
            ts,
            order,
            track,
            kind: te.uint(9).unwrap(),
            name: te.uint(10).map(|iid| lookup(2, iid)),
            args,
            counter: te
                .uint(30)
                .map(|v| (v as i64).to_string())
                .or_else(|| te.uint(44).map(|v| f64::from_bits(v).to_string())),
            flows: fixed(47),
            ends: fixed(48),
        });
    }
    events.sort_by_key(|e| (e.ts, e.order));
    let mut depth: HashMap<u64, i64> = HashMap::new();
    for e in &events {
        let d = depth.entry(e.track).or_default();
        match e.kind {
            1 => *d += 1,
            2 => {
                *d -= 1;
                assert!(*d >= 0, "an end with no open slice on track {}", e.track);
            }
            _ => {}
        }
    }
    assert!(
        depth.values().all(|d| *d == 0),
        "every slice ends: {depth:?}"
    );
    let mut flows: HashMap<u64, usize> = HashMap::new();
    for e in &events {
        for f in &e.flows {
            *flows.entry(*f).or_default() += 1;
        }
        for f in &e.ends {
            assert!(flows.contains_key(f), "flow {f} ends after it begins");
            *flows.entry(*f).or_default() += 1;
        }
    }
    assert!(
        flows.values().all(|n| *n >= 2),
        "every flow joins two events: {flows:?}"
    );
    (events, tracks)
}
