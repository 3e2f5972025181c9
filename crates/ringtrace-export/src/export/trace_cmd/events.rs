//! The kernel's event formats for ringtrace's tracepoints (what
//! `/sys/kernel/tracing/events/SYSTEM/NAME/format` says), and each event
//! encoded as the kernel's entry: the common fields, the fixed fields at
//! their offsets, then the strings (`__data_loc char[]`) after them.

use super::names;
use super::symbols::Symbols;
use crate::metadata::{EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_tracepoint::{FieldKind, FieldValue};
use std::collections::{HashMap, HashSet};

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
/// The names of the common fields, which an event's own fields cannot
/// have (libtraceevent finds a field by name, the common ones first).
const COMMON_NAMES: [&str; 4] = [
    "common_type",
    "common_flags",
    "common_preempt_count",
    "common_pid",
];
/// The most name changes said one by one; the rest are counted.
const MAX_CHANGES_SHOWN: usize = 20;

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
    /// Its system: the tracepoint's (`events/<system>/<name>/format`), a
    /// C identifier.
    pub system: String,
    /// Its name within the system, a C identifier.
    pub name: String,
    slots: Vec<Slot>,
    /// Bytes before the strings.
    fixed_len: usize,
    print: String,
    /// How many characters of its format's text the print fmt has as `?`.
    replaced: usize,
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
    /// The index in `all` of each (system, name).
    by_name: HashMap<(String, String), usize>,
    /// What was changed of the metadata's names (and formats' text) for
    /// trace-cmd to read them, said.
    changed: Vec<String>,
}

/// The name of the event undecodable payloads are shown as, in [`SYSTEM`].
pub const RAW_EVENT: &str = "raw";

/// What [`Formats::place`] needs of the process being added.
struct Adding {
    /// How many formats the earlier processes made.
    earlier: usize,
    /// Its pid.
    pid: u32,
    /// The (system, event) names of its tracepoints that are C identifiers
    /// already.
    reserved: HashSet<(String, String)>,
}

/// A tracepoint's system and event in the file, before they are made C
/// identifiers, and whether it gets the kernel's preemptirq layout: its
/// system ([`SYSTEM`] when it has none), [`PREEMPTIRQ`] for the
/// preemptirq events.
fn file_name(tp: &TracepointDesc) -> (&str, &str, bool) {
    let event = tp.event();
    let preemptirq = PREEMPTIRQ_EVENTS.contains(&event)
        && matches!(tp.system(), None | Some(PREEMPTIRQ))
        && tp.fields.len() == 2
        && tp.fields.iter().all(|f| f.kind == FieldKind::Location);
    let system = if preemptirq {
        PREEMPTIRQ
    } else {
        tp.system().unwrap_or(SYSTEM)
    };
    (system, event, preemptirq)
}

/// An event as ringtrace names it, for what the exporter says.
#[derive(Debug, Clone, Copy)]
struct Shown<'a> {
    /// The name in the metadata.
    name: &'a str,
    /// Whether it has a system (`system:event`), so that the file's name
    /// is said with its system too.
    qualified: bool,
}

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
        // The tracepoints' names that need no change keep them: a name
        // changed to one of them steps aside.
        let reserved = meta
            .tracepoints
            .iter()
            .map(file_name)
            .filter(|(system, event, _)| {
                names::is_identifier(system) && names::is_identifier(event)
            })
            .map(|(system, event, _)| (system.to_owned(), event.to_owned()))
            .collect();
        let adding = Adding {
            earlier: self.all.len(),
            pid,
            reserved,
        };
        let earlier = adding.earlier;
        for tp in &meta.tracepoints {
            let (system, event, preemptirq) = file_name(tp);
            let origin = Origin {
                system: system.to_owned(),
                event: event.to_owned(),
                fields: tp.fields.clone(),
                format: tp.format.clone(),
                untagged: false,
            };
            let shown = Shown {
                name: &tp.name,
                qualified: tp.system().is_some(),
            };
            let at = self.place(origin, &adding, shown, |id, system, name| {
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
            let name = if taken(&names::identifier(&u.name)) {
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
            let shown = Shown {
                name: &u.name,
                qualified: false,
            };
            self.place(origin, &adding, shown, |id, system, name| {
                EventFormat::new(id, system, name, &u.fields, &u.format)
            })
        });
        self.untagged.push(untagged);
    }

    /// The index of the format made from `origin`: an earlier process's
    /// (before `adding.earlier`) when it has the same, else a new one made
    /// by `make` (given its id, system and name). Its system and name are
    /// `origin`'s made C identifiers; a name an earlier process's event of
    /// another layout has gets `_<pid>`, and one taken still `_2`, `_3`...
    /// (a changed name also when a tracepoint of the process has it
    /// unchanged). Names changed other than by `_<pid>` are said, with
    /// `shown`.
    fn place(
        &mut self,
        origin: Origin,
        adding: &Adding,
        shown: Shown<'_>,
        make: impl FnOnce(u16, &str, &str) -> EventFormat,
    ) -> usize {
        let (earlier, pid) = (adding.earlier, adding.pid);
        if let Some(at) = self.origins[..earlier].iter().position(|o| *o == origin) {
            return at;
        }
        let system = names::identifier(&origin.system);
        let event = names::identifier(&origin.event);
        let changed = system != origin.system || event != origin.event;
        let clash = self
            .by_name
            .get(&(system.clone(), event.clone()))
            .is_some_and(|&at| at < earlier);
        let (event, unchanged) = if clash {
            (format!("{event}_{pid}"), format!("{}_{pid}", origin.event))
        } else {
            (event, origin.event.clone())
        };
        let name = names::unique(&event, |n| {
            let key = (system.clone(), n.to_owned());
            self.by_name.contains_key(&key) || (changed && adding.reserved.contains(&key))
        });
        let id = FIRST_ID.saturating_add(self.all.len() as u16);
        let format = make(id, &system, &name);
        if system != origin.system || name != unchanged {
            let named = if shown.qualified {
                format!("{system}:{name}")
            } else {
                name.clone()
            };
            self.changed.push(format!(
                "event {:?} is named {named} in the trace-cmd file",
                shown.name
            ));
        }
        if format.replaced > 0 {
            self.changed.push(format!(
                "the format of event {:?} has {} characters trace-cmd cannot print (only printable ASCII, tab, newline and carriage return): each is ? in the trace-cmd file",
                shown.name, format.replaced
            ));
        }
        // The kernel's preemptirq layout has its own fields' names.
        let fields = if format.uses_symbols() {
            &[][..]
        } else {
            &origin.fields[..]
        };
        for (slot, field) in format.slots.iter().zip(fields) {
            if slot.name != field.name {
                self.changed.push(format!(
                    "field {:?} of event {:?} is named {} in the trace-cmd file",
                    field.name, shown.name, slot.name
                ));
            }
        }
        self.push(format, origin)
    }

    /// Adds `format`, made from `origin`; its index.
    fn push(&mut self, format: EventFormat, origin: Origin) -> usize {
        let at = self.all.len();
        self.by_name
            .insert((format.system.clone(), format.name.clone()), at);
        self.all.push(format);
        self.origins.push(origin);
        at
    }

    /// What the exporter says of the names (and formats' text) it changed:
    /// each change, the first [`MAX_CHANGES_SHOWN`] of them, then how many
    /// more.
    pub fn change_warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .changed
            .iter()
            .take(MAX_CHANGES_SHOWN)
            .cloned()
            .collect();
        let more = self.changed.len().saturating_sub(MAX_CHANGES_SHOWN);
        if more > 0 {
            out.push(format!(
                "{more} more names of events and fields, or characters of their formats, were changed for the trace-cmd file, which holds names only as distinct C identifiers (letters, digits and `_`, not first a digit) and formats only in printable ASCII"
            ));
        }
        out
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
            self.by_name
                .contains_key(&(SYSTEM.to_owned(), name.to_owned()))
        };
        let name = if taken(RAW_EVENT) {
            names::unique(&format!("{RAW_EVENT}_bytes"), taken)
        } else {
            RAW_EVENT.to_owned()
        };
        let fields = [FieldDesc {
            name: "bytes".to_owned(),
            kind: FieldKind::Str,
        }];
        let id = FIRST_ID.saturating_add(self.all.len() as u16);
        let format = EventFormat::new(id, SYSTEM, &name, &fields, "bytes={}");
        let origin = Origin {
            system: SYSTEM.to_owned(),
            event: name,
            fields: fields.to_vec(),
            format: "bytes={}".to_owned(),
            untagged: false,
        };
        self.raw = Some(self.push(format, origin));
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
    /// The format of an event `name` of `system` (both C identifiers)
    /// with `fields`, each named its name made a C identifier distinct
    /// from the others' and the common fields'.
    fn new(id: u16, system: &str, name: &str, fields: &[FieldDesc], format: &str) -> EventFormat {
        // Names that need no change first, each kept by its first field;
        // then the others, made identifiers distinct from those.
        let mut taken: HashSet<String> = COMMON_NAMES.iter().map(|n| (*n).to_owned()).collect();
        let mut field_names: Vec<Option<String>> = fields
            .iter()
            .map(|f| {
                let keep = names::is_identifier(&f.name) && taken.insert(f.name.clone());
                keep.then(|| f.name.clone())
            })
            .collect();
        for (f, field_name) in fields.iter().zip(&mut field_names) {
            if field_name.is_none() {
                let made = names::unique(&names::identifier(&f.name), |n| taken.contains(n));
                taken.insert(made.clone());
                *field_name = Some(made);
            }
        }
        let field_names = field_names.into_iter().flatten();
        let mut offset = COMMON_LEN;
        let slots: Vec<Slot> = fields
            .iter()
            .zip(field_names)
            .map(|(f, field_name)| {
                let storage = storage(f.kind);
                let size = match storage {
                    Storage::Fixed { size, .. } => size,
                    Storage::Text | Storage::SymbolOffset => 4,
                };
                // Natural alignment, as the kernel's C struct has it.
                offset = offset.next_multiple_of(size);
                let slot = Slot {
                    name: field_name,
                    kind: f.kind,
                    storage,
                    offset,
                };
                offset += size;
                slot
            })
            .collect();
        let (print, replaced) = print_fmt(format, &slots);
        EventFormat {
            id,
            system: system.to_owned(),
            name: name.to_owned(),
            slots,
            fixed_len: offset,
            print,
            replaced,
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
            replaced: 0,
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
/// fields are appended after a space. Characters of the text other than
/// printable ASCII, tab, newline and carriage return are `?`; the second
/// value says how many.
fn print_fmt(format: &str, slots: &[Slot]) -> (String, usize) {
    let mut replaced = 0;
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
        if c.is_ascii() && (!c.is_ascii_control() || matches!(c, '\n' | '\t' | '\r')) {
            push_literal(&mut text, c);
        } else {
            // libtraceevent reads only printable ASCII in a string (and the
            // escapes `\n`, `\t`, `\r`): a format with another character
            // fails to parse. Its `%c` prints a field, not a constant.
            text.push('?');
            replaced += 1;
        }
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
    (out, replaced)
}

/// A character of a format's text, escaped for a C string and printf.
fn push_literal(out: &mut String, c: char) {
    match c {
        '%' => out.push_str("%%"),
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
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

    #[test]
    fn names_become_distinct_identifiers_a_valid_one_keeping_its_own_and_each_change_is_said() {
        let tp = |name: &str, id, field: &str| TracepointDesc {
            name: name.into(),
            id,
            fields: vec![FieldDesc::new(field, FieldKind::U32)],
            format: "{}".into(),
        };
        let mut formats = Formats::new(&TraceMetadata::new(vec![
            tp("app:ham mer", 1, "a b"),
            tp("app:ham_mer", 2, "n"),
            tp("app:ham_mer", 3, "n"), // the same name, another id
            desc("preemptirq:irq_disable", 4),
        ]));
        formats.add(
            &TraceMetadata::new(vec![tp("app:ham mer", 7, "other")]),
            4242,
        );
        let shown = |process, id| {
            let f = formats.tracepoint(process, id).unwrap();
            (f.system.as_str(), f.name.as_str())
        };
        assert_eq!(shown(0, 1), ("app", "ham_mer_2"));
        assert_eq!(shown(0, 2), ("app", "ham_mer"));
        assert_eq!(shown(0, 3), ("app", "ham_mer_3"));
        assert_eq!(shown(0, 4), ("preemptirq", "irq_disable"));
        assert_eq!(shown(1, 7), ("app", "ham_mer_4242"));
        assert_eq!(
            formats.change_warnings(),
            [
                "event \"app:ham mer\" is named app:ham_mer_2 in the trace-cmd file",
                "field \"a b\" of event \"app:ham mer\" is named a_b in the trace-cmd file",
                "event \"app:ham_mer\" is named app:ham_mer_3 in the trace-cmd file",
                "event \"app:ham mer\" is named app:ham_mer_4242 in the trace-cmd file",
            ]
        );
    }
}
