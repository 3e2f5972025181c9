//! The writer, its command name and the clock of a recovered trace, in
//! words: the lines `ringtrace dump` and `ringtrace recover` begin with.

use super::time::utc_time;
use ringtrace_ring::file::{ExitTime, FileClock, FileHeader, Recovery, WriterState};

/// The writer's state in one word: `died`, `live`, `closed`, `exited`,
/// `setting-up` or `unknown`.
pub fn writer_name(state: WriterState) -> &'static str {
    match state {
        WriterState::Died => "died",
        WriterState::Live => "live",
        WriterState::Closed => "closed",
        WriterState::Exited(_) => "exited",
        WriterState::SettingUp => "setting-up",
        WriterState::Unknown(_) => "unknown",
    }
}

/// When a writer exited, in words: the wall-clock time in UTC (read at the
/// exit, or placed by the header's anchor) and the clock's ticks, as far
/// as they are known: `2026-12-01T05:09:05.123456789Z (clock ticks
/// 5123)`.
pub fn exit_time_words(exit: &ExitTime, header: &FileHeader) -> String {
    match (exit.wall_ns_or_anchored(header), exit.ticks) {
        (Some(wall), Some(ticks)) => format!("{} (clock ticks {ticks})", utc_time(wall)),
        (Some(wall), None) => utc_time(wall),
        (None, Some(ticks)) => format!("clock ticks {ticks}"),
        (None, None) => "a time it could not record".to_owned(),
    }
}

/// The writer's state in words, one line: for an exit, when, and how many
/// reservations its writers left open (never committed) as it ended.
pub fn writer_words(r: &Recovery) -> String {
    let who = format!("process {} ({})", r.header.pid, comm(r));
    match r.writer {
        WriterState::Died => format!(
            "died: the ring was open and {who} is gone (it crashed or was killed)"
        ),
        // A session's process (read from its directory): the session
        // says only that its recorder had not seen it end.
        WriterState::Live if r.path.is_dir() => {
            // `ringtrace record` keeps each process's ring as
            // `SESSION/rings/PID-START.ring` until it has drained it.
            let ring = r.path.file_name().and_then(|name| {
                let mut file = name.to_owned();
                file.push(".ring");
                let ring = r.path.parent()?.join("rings").join(file);
                ring.is_file().then_some(ring)
            });
            let rest = ring.map_or_else(String::new, |ring| {
                format!(
                    "; the rest is in its ring, {} (`ringtrace dump` reads it with the session, `ringtrace record --attach` drains it)",
                    ring.display()
                )
            });
            format!(
                "not ended: {who} was still running when the session was last written (its recorder is still recording, or stopped first: events written after that are not in the session){rest}"
            )
        }
        WriterState::Live => format!(
            "live snapshot: {who} is still writing; what follows was read while it wrote"
        ),
        WriterState::Closed => format!("closed: {who} dropped the ring"),
        WriterState::Exited(exit) => {
            let pending = r.totals().skipped_pending;
            let how = match exit.code {
                None | Some(0) => "exited normally".to_owned(),
                Some(101) => {
                    "exited with code 101 (what a Rust panic that unwinds out of main exits with)"
                        .to_owned()
                }
                Some(code) => format!("exited with code {code}"),
            };
            format!(
                "exited: {who} {how} at {}; {pending} {} still being written",
                exit_time_words(&exit, &r.header),
                if pending == 1 { "event was" } else { "events were" }
            )
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

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_ring::file::{CpuRecovery, RecoveryParts};
    use ringtrace_ring::{RingBuffer, RingConfig};

    /// A recovery of a `mono` ring's (empty) buffer by `state`, with
    /// `pending` reservations left open.
    fn recovery(state: WriterState, pending: u64) -> Recovery {
        let ring = RingBuffer::new(
            RingConfig::default().cpus(1).per_cpu_bytes(8192),
            ringtrace_clock::Mono::new(),
        )
        .unwrap();
        let mut header = ring.snapshot(Vec::new()).header;
        header.pid = 4321;
        header.comm = "app".into();
        header.wall_ns = 1_000_000_000_000_000_000;
        header.anchor_ticks = 1_000;
        let mut cpu = CpuRecovery::new(0);
        cpu.counts.skipped_pending = pending;
        Recovery::from_parts(RecoveryParts {
            path: "t.ring".into(),
            header,
            metadata: Ok(Vec::new()),
            writer: state,
            cpus: vec![cpu],
            metadata_records: Vec::new(),
            annex_problems: Vec::new(),
        })
    }

    #[test]
    fn an_exit_is_said_with_its_time_and_the_events_left_open() {
        let exited =
            WriterState::Exited(ExitTime::new(Some(2_000), Some(1_000_000_000_500_000_000)));
        assert_eq!(writer_name(exited), "exited");
        assert_eq!(
            writer_words(&recovery(exited, 0)),
            "exited: process 4321 (app) exited normally at 2001-09-09T01:46:40.500000000Z (clock ticks 2000); 0 events were still being written"
        );
        assert!(writer_words(&recovery(exited, 1)).ends_with("; 1 event was still being written"));
        // No wall-clock reading: the ticks placed by the anchor (a `mono`
        // tick is a nanosecond).
        let ticks_only = WriterState::Exited(ExitTime::new(Some(1_000 + 7), None));
        assert!(
            writer_words(&recovery(ticks_only, 2)).contains(
                "exited normally at 2001-09-09T01:46:40.000000007Z (clock ticks 1007); 2 events were"
            ),
            "{}",
            writer_words(&recovery(ticks_only, 2))
        );
        let nothing = WriterState::Exited(ExitTime::new(None, None));
        assert!(writer_words(&recovery(nothing, 0))
            .contains("exited normally at a time it could not record;"));
    }

    #[test]
    fn a_drop_and_a_death_are_not_an_exit() {
        assert_eq!(
            writer_words(&recovery(WriterState::Closed, 0)),
            "closed: process 4321 (app) dropped the ring"
        );
        assert_eq!(writer_name(WriterState::Closed), "closed");
        assert!(writer_words(&recovery(WriterState::Died, 3)).starts_with(
            "died: the ring was open and process 4321 (app) is gone (it crashed or was killed)"
        ));
    }
}
