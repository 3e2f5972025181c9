//! The trace's `metadata` file: its description in TSDL (CTF 1.8), plain
//! text.

use super::classes::{Body, Classes, CtfField};
use super::clock::CtfClock;
use super::uuid::Uuid;
use ringtrace_tracepoint::FieldKind;
use std::fmt::Write;

/// What the `env` block says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Env {
    /// The machine the trace was recorded on, when known.
    pub hostname: Option<String>,
    /// The writer's pid and command name (one process's trace).
    pub process: Option<(u32, String)>,
    /// Every process, `pid comm` each (a trace of several processes).
    pub processes: Option<String>,
    /// How their times were aligned (a trace of several processes).
    pub alignment: Option<String>,
    /// The file's clock, as it names it.
    pub clock: String,
    /// The ring's mode (`overwrite`, `discard`).
    pub mode: String,
}

/// The TSDL text of a trace: one stream class per process, whose id is
/// its index in `streams`, with its event classes. With several, each
/// event's context holds its process's pid and command name besides its
/// thread id.
pub(super) fn metadata(streams: &[&Classes], clock: &CtfClock, uuid: Uuid, env: &Env) -> String {
    let mut t = String::with_capacity(4096);
    t.push_str("/* CTF 1.8 */\n\n");
    for (name, size, signed) in [
        ("uint8_t", 8, false),
        ("uint16_t", 16, false),
        ("uint32_t", 32, false),
        ("uint64_t", 64, false),
        ("int8_t", 8, true),
        ("int16_t", 16, true),
        ("int32_t", 32, true),
        ("int64_t", 64, true),
    ] {
        let _ = writeln!(
            t,
            "typealias integer {{ size = {size}; align = 8; signed = {signed}; }} := {name};"
        );
    }
    let _ = write!(
        t,
        "
trace {{
\tmajor = 1;
\tminor = 8;
\tuuid = \"{uuid}\";
\tbyte_order = le;
\tpacket.header := struct {{
\t\tuint32_t magic;
\t\tuint8_t uuid[16];
\t\tuint32_t stream_id;
\t}};
}};

env {{
"
    );
    if let Some(host) = &env.hostname {
        let _ = writeln!(t, "\thostname = {};", literal(host));
    }
    let _ = write!(
        t,
        "\tdomain = \"ust\";
\ttracer_name = \"ringtrace\";
\ttracer_major = {major};
\ttracer_minor = {minor};
",
        major = version_part(0),
        minor = version_part(1),
    );
    if let Some((pid, comm)) = &env.process {
        let _ = write!(t, "\tvpid = {pid};\n\tprocname = {};\n", literal(comm));
    }
    if let Some(all) = &env.processes {
        let _ = writeln!(t, "\tringtrace_processes = {};", literal(all));
    }
    if let Some(alignment) = &env.alignment {
        let _ = writeln!(t, "\tringtrace_alignment = {};", literal(alignment));
    }
    let _ = write!(
        t,
        "\tringtrace_clock = {clock_name};
\tringtrace_mode = {mode};
}};

clock {{
\tname = {ident};
\tuuid = \"{clock_uuid}\";
\tdescription = {description};
\tfreq = {freq};
",
        clock_name = literal(&env.clock),
        mode = literal(&env.mode),
        ident = clock.ident,
        clock_uuid = clock.uuid,
        description = literal(&clock.description),
        freq = clock.freq,
    );
    if let Some(p) = clock.precision {
        let _ = writeln!(t, "\tprecision = {p};");
    }
    let _ = write!(
        t,
        "\toffset_s = {offset_s};
\toffset = {offset};
\tabsolute = false;
}};

typealias integer {{ size = 64; align = 8; signed = false; map = clock.{ident}.value; }} := uint64_clock_t;
",
        offset_s = clock.offset_s,
        offset = clock.offset,
        ident = clock.ident,
    );
    let context = if streams.len() > 1 {
        "\t\tuint32_t _tid;\n\t\tuint32_t _pid;\n\t\tstring _procname;\n"
    } else {
        "\t\tuint32_t _tid;\n"
    };
    for id in 0..streams.len() {
        let _ = write!(
            t,
            "
stream {{
\tid = {id};
\tpacket.context := struct {{
\t\tuint64_clock_t timestamp_begin;
\t\tuint64_clock_t timestamp_end;
\t\tuint64_t content_size;
\t\tuint64_t packet_size;
\t\tuint64_t events_discarded;
\t\tuint32_t cpu_id;
\t}};
\tevent.header := struct {{
\t\tuint32_t id;
\t\tuint64_clock_t timestamp;
\t}};
\tevent.context := struct {{
{context}\t}};
}};
"
        );
    }
    for (stream, classes) in streams.iter().enumerate() {
        for (id, class) in classes.events.iter().enumerate() {
            let _ = write!(
                t,
                "\nevent {{\n\tname = {};\n\tid = {id};\n\tstream_id = {stream};\n\tfields := struct {{\n",
                literal(&class.name)
            );
            match &class.body {
                Body::Fields(fields) => {
                    for f in fields {
                        let _ = writeln!(t, "\t\t{}", declaration(f));
                    }
                }
                Body::Raw => t.push_str(
                    "\t\tstring _why;\n\t\tuint32_t _length;\n\t\tuint8_t _payload[_length];\n",
                ),
            }
            t.push_str("\t};\n};\n");
        }
    }
    t
}

/// One field's declaration.
fn declaration(f: &CtfField) -> String {
    let ident = &f.ident;
    let int = |name: &str, size: u32| {
        if f.hex {
            format!("integer {{ size = {size}; align = 8; signed = false; base = 16; }} {ident};")
        } else {
            format!("{name} {ident};")
        }
    };
    match f.kind {
        FieldKind::U8 => int("uint8_t", 8),
        FieldKind::U16 => int("uint16_t", 16),
        FieldKind::U32 => int("uint32_t", 32),
        FieldKind::U64 => int("uint64_t", 64),
        FieldKind::I8 => format!("int8_t {ident};"),
        FieldKind::I16 => format!("int16_t {ident};"),
        FieldKind::I32 => format!("int32_t {ident};"),
        FieldKind::I64 => format!("int64_t {ident};"),
        FieldKind::Bool => format!("uint8_t {ident};"),
        FieldKind::F64 => {
            format!("floating_point {{ exp_dig = 11; mant_dig = 53; align = 8; }} {ident};")
        }
        FieldKind::Str => format!("string {ident};"),
        FieldKind::Location => {
            format!("struct {{ string _file; uint32_t _line; uint32_t _column; }} {ident};")
        }
    }
}

/// `s` as a TSDL string literal: quoted, `\` and `"` escaped, control
/// characters as `?`.
fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A part of this crate's version (0: major, 1: minor).
fn version_part(i: usize) -> u64 {
    env!("CARGO_PKG_VERSION")
        .split('.')
        .nth(i)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        assert_eq!(literal(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(literal("tab\there"), "\"tab?here\"");
    }
}
