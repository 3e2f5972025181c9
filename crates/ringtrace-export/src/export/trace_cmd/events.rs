//! The kernel's event formats for ringtrace's tracepoints (what
//! `/sys/kernel/tracing/events/SYSTEM/NAME/format` says), and each event
//! encoded as the kernel's entry: the common fields, the fixed fields at
//! their offsets, then the strings (`__data_loc char[]`) after them.

use super::symbols::Symbols;
use crate::metadata::{EventLayout, FieldDesc, TraceMetadata};
use ringtrace_tracepoint::{FieldKind, FieldValue};
use std::collections::HashMap;

/// The system of the untagged layout, and of tracepoints named without a
/// system (in files written before tracepoints had systems).
pub const SYSTEM: &str = "ringtrace";
/// The kernel's system of the irq and preempt tracepoints, and
/// ringtrace's.
pub const PREEMPTIRQ: &str = "preemptirq";
/// The tracepoints of [`PREEMPTIRQ`] given the kernel's layout (when their
/// fields are two locations): the kernel's four, and ringtrace's softirq
/// pair beside them.
const PREEMPTIRQ_EVENTS: [&str; 6] = [
    "irq_disable",
    "irq_enable",
    "preempt_disable",
    "preempt_enable",
    "softirqs_disable",
    "softirqs_enable",
];
/// The first event id given out (the kernel's own ftrace entries use the
/// small ones).
const FIRST_ID: u16 = 100;
/// The most event formats a file holds: the ids after [`FIRST_ID`].
pub const MAX_FORMATS: usize = (u16::MAX - FIRST_ID) as usize + 1;
/// Bytes of the common fields.
const COMMON_LEN: usize = 8;
/// The common fields, as every kernel format lists them.
const COMMON_FIELDS: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
    \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
    \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
    \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

/// How one field is stored in the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// An integer or bool, of its own size.
    Fixed { size: usize, signed: bool },
    /// A `__data_loc char[]`: a u32 (length << 16 | offset) pointing at a
    /// NUL-terminated string after the fixed fields. Strings, locations
    /// (`file:line:col`) and floats (as ringtrace prints them).
    Text,
    /// A preemptirq location: an s32 offset from `_stext` to its symbol.
    SymbolOffset,
}

/// One field of an event format.
#[derive(Debug, Clone)]
struct Slot {
    name: String,
    kind: FieldKind,
    storage: Storage,
    offset: usize,
}

/// One event's format.
#[derive(Debug, Clone)]
pub struct EventFormat {
    /// `common_type`.
    pub id: u16,
    /// Its system: the tracepoint's (`events/<system>/<name>/format`).
    pub system: String,
    /// Its name within the system.
    /// Its name.
    pub name: String,
    slots: Vec<Slot>,
    /// Bytes before the strings.
    fixed_len: usize,
    print: String,
}

/// Every event format of a trace, by process and ringtrace's ids.
#[derive(Debug, Clone, Default)]
pub struct Formats {
    /// In id order.
    pub all: Vec<EventFormat>,
    /// Where each of `all` comes from, to share it between processes.
    origins: Vec<Origin>,
    by_tracepoint: HashMap<(usize, u32), usize>,
    untagged: Vec<Option<usize>>,
    /// The format of undecodable events, once one was met.
    raw: Option<usize>,
}

/// The name of the event undecodable payloads are shown as, in [`SYSTEM`].
pub const RAW_EVENT: &str = "raw";

/// What an event format was made from: two processes' events share a
/// format when theirs are the same.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    system: String,
    event: String,
    fields: Vec<FieldDesc>,
    format: String,
    untagged: bool,
}

impl Formats {
    /// The formats for `meta`'s tracepoints (one process's).
    #[cfg(test)]
    pub fn new(meta: &TraceMetadata) -> Formats {
        let mut formats = Formats::default();
        formats.add(meta, 0);
        formats
    }

    /// Adds the formats of the next process's `meta`, by
    /// [`tracepoint`](Formats::tracepoint)'s process index the number of
    /// processes added before: each tracepoint in its own system (a name
    /// without one in [`SYSTEM`]), then its untagged layout in [`SYSTEM`].
    /// An event of an earlier process with the same name and layout is
    /// shared; one with the same name and another layout stays apart,
    /// named `<event>_<pid>` after this process's `pid`. At most
    /// [`MAX_FORMATS`] in all, which the caller checks.
    pub fn add(&mut self, meta: &TraceMetadata, pid: u32) {
        let process = self.untagged.len();
        let earlier = self.all.len();
        for tp in &meta.tracepoints {
            let system = tp.system().unwrap_or(SYSTEM);
            let event = tp.event();
            let preemptirq = PREEMPTIRQ_EVENTS.contains(&event)
                && matches!(tp.system(), None | Some(PREEMPTIRQ))
                && tp.fields.len() == 2
                && tp.fields.iter().all(|f| f.kind == FieldKind::Location);
            let origin = Origin {
                system: if preemptirq { PREEMPTIRQ } else { system }.to_owned(),
                event: event.to_owned(),
                fields: tp.fields.clone(),
                format: tp.format.clone(),
                untagged: false,
            };
            let at = self.place(origin, earlier, pid, |id, name| {
                if preemptirq {
                    EventFormat::preemptirq(id, name)
                } else {
                    EventFormat::new(id, system, name, &tp.fields, &tp.format)
                }
            });
            self.by_tracepoint.insert((process, tp.id), at);
        }
        let untagged = meta.untagged.as_ref().map(|u: &EventLayout| {
            // A tracepoint of the same system and name keeps it; the layout
            // steps aside.
            let taken = |name: &str| {
                self.all[earlier..]
                    .iter()
                    .any(|e| e.system == SYSTEM && e.name == name)
            };
            let name = if taken(&u.name) {
                format!("{}_untagged", u.name)
            } else {
                u.name.clone()
            };
            let origin = Origin {
                system: SYSTEM.to_owned(),
                event: name,
                fields: u.fields.clone(),
                format: u.format.clone(),
                untagged: true,
            };
            self.place(origin, earlier, pid, |id, name| {
                EventFormat::new(id, SYSTEM, name, &u.fields, &u.format)
            })
        });
        self.untagged.push(untagged);
    }

    /// The index of the format made from `origin`: an earlier process's
    /// (before `earlier`) when it has the same, else a new one made by
    /// `make` (given its id and name).
    fn place(
        &mut self,
        origin: Origin,
        earlier: usize,
        pid: u32,
        make: impl FnOnce(u16, &str) -> EventFormat,
    ) -> usize {
        if let Some(at) = self.origins[..earlier].iter().position(|o| *o == origin) {
            return at;
        }
        let clash = self.all[..earlier]
            .iter()
            .any(|e| e.system == origin.system && e.name == origin.event);
        let name = if clash {
            format!("{}_{pid}", origin.event)
        } else {
            origin.event.clone()
        };
        let id = FIRST_ID.saturating_add(self.all.len() as u16);
        self.all.push(make(id, &name));
        self.origins.push(origin);
        self.all.len() - 1
    }

    /// The format of the tracepoint whose ringtrace id is `id` in the
    /// `process`th process added.
    pub fn tracepoint(&self, process: usize, id: u32) -> Option<&EventFormat> {
        self.by_tracepoint
            .get(&(process, id))
            .map(|&i| &self.all[i])
    }

    /// The format of the events no metadata decodes (a program's own
    /// bytes, written with `write`): `ringtrace:raw`, one string field
    /// `bytes` of their hex, added the first time it is asked for. None
    /// when the file's event ids are all taken.
    pub fn raw(&mut self) -> Option<usize> {
        if let Some(at) = self.raw {
            return Some(at);
        }
        if self.all.len() >= MAX_FORMATS {
            return None;
        }
        let taken = |name: &str| {
            self.all
                .iter()
                .any(|e| e.system == SYSTEM && e.name == name)
        };
        let name = if taken(RAW_EVENT) {
            format!("{RAW_EVENT}_bytes")
        } else {
            RAW_EVENT.to_owned()
        };
        let fields = [FieldDesc {
            name: "bytes".to_owned(),
            kind: FieldKind::Str,
        }];
        let id = FIRST_ID.saturating_add(self.all.len() as u16);
        self.all
            .push(EventFormat::new(id, SYSTEM, &name, &fields, "bytes={}"));
        self.origins.push(Origin {
            system: SYSTEM.to_owned(),
            event: name,
            fields: fields.to_vec(),
            format: "bytes={}".to_owned(),
            untagged: false,
        });
        self.raw = Some(self.all.len() - 1);
        self.raw
    }

    /// The format of the `process`th process's untagged events.
    pub fn untagged(&self, process: usize) -> Option<&EventFormat> {
        self.untagged
            .get(process)
            .copied()
            .flatten()
            .map(|i| &self.all[i])
    }
}

fn storage(kind: FieldKind) -> Storage {
    let fixed = |size, signed| Storage::Fixed { size, signed };
    match kind {
        FieldKind::U8 | FieldKind::Bool => fixed(1, false),
        FieldKind::U16 => fixed(2, false),
        FieldKind::U32 => fixed(4, false),
        FieldKind::U64 => fixed(8, false),
        FieldKind::I8 => fixed(1, true),
        FieldKind::I16 => fixed(2, true),
        FieldKind::I32 => fixed(4, true),
        FieldKind::I64 => fixed(8, true),
        FieldKind::Str | FieldKind::Location | FieldKind::F64 => Storage::Text,
    }
}

/// The C type a format names.
fn c_type(kind: FieldKind) -> &'static str {
    match kind {
        FieldKind::U8 => "u8",
        FieldKind::U16 => "u16",
        FieldKind::U32 => "u32",
        FieldKind::U64 => "u64",
        FieldKind::I8 => "s8",
        FieldKind::I16 => "s16",
        FieldKind::I32 => "s32",
        FieldKind::I64 => "s64",
        FieldKind::Bool => "bool",
        FieldKind::Str | FieldKind::Location | FieldKind::F64 => "__data_loc char[]",
    }
}

impl EventFormat {
    fn new(id: u16, system: &str, name: &str, fields: &[FieldDesc], format: &str) -> EventFormat {
        let mut offset = COMMON_LEN;
        let slots: Vec<Slot> = fields
            .iter()
            .map(|f| {
                let storage = storage(f.kind);
                let size = match storage {
                    Storage::Fixed { size, .. } => size,
                    Storage::Text | Storage::SymbolOffset => 4,
                };
                // Natural alignment, as the kernel's C struct has it.
                offset = offset.next_multiple_of(size);
                let slot = Slot {
                    name: f.name.clone(),
                    kind: f.kind,
                    storage,
                    offset,
                };
                offset += size;
                slot
            })
            .collect();
        let print = print_fmt(format, &slots);
        EventFormat {
            id,
            system: system.to_owned(),
            name: name.to_owned(),
            slots,
            fixed_len: offset,
            print,
        }
    }

    /// The kernel's preemptirq layout: `caller_offs` and `parent_offs`,
    /// s32 offsets from `_stext`, printed with `%ps` (the kernel has
    /// `%pS`, which adds `+0x0` to a symbol that is a whole location).
    fn preemptirq(id: u16, name: &str) -> EventFormat {
        let slot = |name: &str, offset| Slot {
            name: name.to_owned(),
            kind: FieldKind::Location,
            storage: Storage::SymbolOffset,
            offset,
        };
        EventFormat {
            id,
            system: PREEMPTIRQ.to_owned(),
            name: name.to_owned(),
            slots: vec![slot("caller_offs", 8), slot("parent_offs", 12)],
            fixed_len: 16,
            print: "\"caller=%ps parent=%ps\", \
                (void *)((unsigned long)(_stext) + REC->caller_offs), \
                (void *)((unsigned long)(_stext) + REC->parent_offs)"
                .to_owned(),
        }
    }

    /// Whether its fields are source locations kept as symbols.
    pub fn uses_symbols(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.storage == Storage::SymbolOffset)
    }

    /// The text of its `format` file.
    pub fn format_file(&self) -> String {
        let mut out = format!(
            "name: {}\nID: {}\nformat:\n{COMMON_FIELDS}\n",
            self.name, self.id
        );
        for s in &self.slots {
            let (ty, size, signed) = match s.storage {
                Storage::Fixed { size, signed } => (c_type(s.kind), size, signed),
                Storage::Text => ("__data_loc char[]", 4, true),
                Storage::SymbolOffset => ("s32", 4, true),
            };
            out.push_str(&format!(
                "\tfield:{ty} {};\toffset:{};\tsize:{size};\tsigned:{};\n",
                s.name,
                s.offset,
                u8::from(signed)
            ));
        }
        out.push_str(&format!("\nprint fmt: {}\n", self.print));
        out
    }

    /// The entry for `values` (the fields in order) recorded by `pid`.
    /// Strings are cut where the kernel's 16-bit offsets and lengths end;
    /// the second value says how many were.
    pub fn entry(&self, pid: u32, values: &[FieldValue], symbols: &Symbols) -> (Vec<u8>, usize) {
        let mut out = vec![0u8; self.fixed_len];
        out[0..2].copy_from_slice(&self.id.to_le_bytes());
        // common_flags and common_preempt_count: 0.
        out[4..8].copy_from_slice(&pid.to_le_bytes());
        let mut cut = 0;
        for (slot, value) in self.slots.iter().zip(values) {
            let at = slot.offset;
            match slot.storage {
                Storage::Fixed { size, .. } => {
                    let bits = match value {
                        FieldValue::Unsigned(n) => *n,
                        FieldValue::Signed(n) => *n as u64,
                        FieldValue::Bool(b) => u64::from(*b),
                        _ => 0,
                    };
                    out[at..at + size].copy_from_slice(&bits.to_le_bytes()[..size]);
                }
                Storage::SymbolOffset => {
                    let offs = match value {
                        FieldValue::Location { file, line, column } => {
                            symbols.offset_of(file, *line, *column)
                        }
                        _ => 0,
                    };
                    out[at..at + 4].copy_from_slice(&offs.to_le_bytes());
                }
                Storage::Text => {
                    let text = value.to_string();
                    let start = out.len();
                    // Offset and length (NUL included) are 16 bits each.
                    let room = (u16::MAX as usize).saturating_sub(start + 1);
                    let mut len = text.len().min(room);
                    while !text.is_char_boundary(len) {
                        len -= 1;
                    }
                    if len < text.len() {
                        cut += 1;
                    }
                    let loc = ((len as u32 + 1) << 16) | start.min(u16::MAX as usize) as u32;
                    out[at..at + 4].copy_from_slice(&loc.to_le_bytes());
                    out.extend_from_slice(&text.as_bytes()[..len]);
                    out.push(0);
                }
            }
        }
        (out, cut)
    }
}

/// ringtrace's format (`{}`, `{:x}`, `{:#x}` for each field in order) as
/// the kernel's `print fmt`: a printf string and its arguments. Like
/// ringtrace's rendering, extra placeholders stay as they are and extra
/// fields are appended after a space.
fn print_fmt(format: &str, slots: &[Slot]) -> String {
    let mut text = String::new();
    let mut args = Vec::new();
    let mut next = slots.iter();
    let mut rest = format;
    while !rest.is_empty() {
        let spec = ["{}", "{:x}", "{:#x}"]
            .into_iter()
            .find(|s| rest.starts_with(s));
        if let Some(spec) = spec {
            if let Some(slot) = next.next() {
                let (conversion, arg) = conversion(slot, spec);
                text.push_str(&conversion);
                args.push(arg);
                rest = &rest[spec.len()..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        push_literal(&mut text, c);
        rest = &rest[c.len_utf8()..];
    }
    for slot in next {
        let (conversion, arg) = conversion(slot, "{}");
        text.push(' ');
        text.push_str(&conversion);
        args.push(arg);
    }
    let mut out = format!("\"{text}\"");
    for a in args {
        out.push_str(", ");
        out.push_str(&a);
    }
    out
}

/// A character of a format's text, escaped for a C string and printf.
fn push_literal(out: &mut String, c: char) {
    match c {
        '%' => out.push_str("%%"),
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c => out.push(c),
    }
}

/// The printf conversion and argument of one field for ringtrace's `spec`.
fn conversion(slot: &Slot, spec: &str) -> (String, String) {
    let field = format!("REC->{}", slot.name);
    match slot.storage {
        Storage::Text => ("%s".into(), format!("__get_str({})", slot.name)),
        Storage::SymbolOffset => (
            "%ps".into(),
            format!("(void *)((unsigned long)(_stext) + {field})"),
        ),
        Storage::Fixed { .. } if slot.kind == FieldKind::Bool => {
            ("%s".into(), format!("{field} ? \"true\" : \"false\""))
        }
        Storage::Fixed { size, signed } => {
            // The size's qualifier: libtraceevent reads a field as
            // unsigned, and sign-extends it by the conversion.
            let long = match size {
                1 => "hh",
                2 => "h",
                8 => "ll",
                _ => "",
            };
            let conv = match (spec, signed) {
                ("{:x}", _) => format!("%{long}x"),
                ("{:#x}", _) => format!("0x%{long}x"),
                (_, true) => format!("%{long}d"),
                (_, false) => format!("%{long}u"),
            };
            (conv, field)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::TracepointDesc;

    fn desc(name: &str, id: u32) -> TracepointDesc {
        TracepointDesc {
            name: name.into(),
            id,
            fields: vec![
                FieldDesc::new("ip", FieldKind::Location),
                FieldDesc::new("parent", FieldKind::Location),
            ],
            format: "caller={} parent={}".into(),
        }
    }

    #[test]
    fn each_tracepoint_goes_in_its_own_system_and_only_the_built_ins_get_the_kernel_layout() {
        let meta = TraceMetadata::new(vec![
            desc("preemptirq:irq_disable", 1),
            desc("app:irq_disable", 2),
            desc("irq_enable", 3), // a file from before systems
        ]);
        let formats = Formats::new(&meta);
        let shown = |id| {
            let f = formats.tracepoint(0, id).unwrap();
            (f.system.as_str(), f.name.as_str(), f.uses_symbols())
        };
        assert_eq!(shown(1), ("preemptirq", "irq_disable", true));
        assert_eq!(shown(2), ("app", "irq_disable", false));
        assert_eq!(shown(3), ("preemptirq", "irq_enable", true));
    }

    #[test]
    fn processes_share_a_format_of_the_same_layout_and_not_one_of_another() {
        let u32_field = |name: &str, id| TracepointDesc {
            fields: vec![FieldDesc::new("n", FieldKind::U32)],
            format: "n={}".into(),
            ..desc(name, id)
        };
        let mut formats = Formats::new(&TraceMetadata::new(vec![
            desc("preemptirq:irq_disable", 1),
            u32_field("app:request", 2),
        ]));
        formats.add(
            &TraceMetadata::new(vec![
                desc("preemptirq:irq_disable", 7), // the same layout
                desc("app:request", 8),            // another
            ]),
            4242,
        );
        let shown = |process, id| {
            let f = formats.tracepoint(process, id).unwrap();
            (f.id, f.system.as_str(), f.name.as_str())
        };
        assert_eq!(shown(1, 7), shown(0, 1));
        assert_eq!(shown(0, 2), (101, "app", "request"));
        assert_eq!(shown(1, 8), (102, "app", "request_4242"));
        assert_eq!(formats.all.len(), 3);
    }
}
