//! The writer, its command name and the clock of a recovered trace, in
//! words: the lines `ringtrace dump` and `ringtrace recover` begin with.

use ringtrace_ring::file::{FileClock, Recovery, WriterState};

/// The writer's state in one word: `died`, `live`, `closed`, `setting-up`
/// or `unknown`.
pub fn writer_name(state: WriterState) -> &'static str {
    match state {
        WriterState::Died => "died",
        WriterState::Live => "live",
        WriterState::Closed => "closed",
        WriterState::SettingUp => "setting-up",
        WriterState::Unknown(_) => "unknown",
    }
}

/// The writer's state in words.
pub fn writer_words(r: &Recovery) -> String {
    let who = format!("process {} ({})", r.header.pid, comm(r));
    match r.writer {
        WriterState::Died => format!(
            "died: the ring was open and {who} is gone (it crashed or was killed)"
        ),
        WriterState::Live => format!(
            "live snapshot: {who} is still writing; what follows was read while it wrote"
        ),
        WriterState::Closed => {
            format!("closed: {who} dropped the ring or exited normally with it")
        }
        WriterState::SettingUp => format!(
            "setting up: {who} stopped before the file held a ring; nothing in it is an event"
        ),
        WriterState::Unknown(word) => format!(
            "unknown: the status word is {word:#018x}, which ringtrace never writes (the file is corrupt); {who} wrote it"
        ),
    }
}

/// The writer's command name, or `<...>` when the header has none (as
/// ftrace shows a command it does not know).
pub fn comm(r: &Recovery) -> &str {
    if r.header.comm.is_empty() {
        "<...>"
    } else {
        &r.header.comm
    }
}

/// The clock in words: name, ordering, and what its ticks are.
pub fn clock_words(c: &FileClock) -> String {
    let ticks = match (c.mult, c.frequency_hz) {
        (None, _) => "ticks are not time (no conversion to ns)".to_owned(),
        (Some(_), _) if c.ticks_are_ns => "ticks are nanoseconds".to_owned(),
        (Some(_), Some(hz)) => format!("{hz} ticks a second"),
        (Some(m), None) => format!("ns = ticks x {m} >> {}", c.shift),
    };
    format!("{}, ordered {}: {ticks}", c.name, c.guarantee)
}
