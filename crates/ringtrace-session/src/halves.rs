//! A session and the ring file it was drained from, read as one process.
//!
//! A program that streams its ring, kept in a file, into a session
//! (`stream_to` with `file`) and is killed leaves two halves: the events
//! its consumer drained, in the session, and the rest, in the ring file.
//! Joined, the file's events follow the session's on each CPU, and the
//! events the consumer had read and not yet written when it died (its
//! last round: the file counts them as read, the session does not hold
//! them) are counted lost just before the file's first event. The
//! writes the ring refused after the consumer last noted them (the file
//! counts every refusal, the session those it was told of) are counted
//! as the ring file counts its own: refused, at a time unknown.
//!
//! ```no_run
//! use ringtrace_session::{halves, Session};
//! // A program killed while streaming into `trace`, its ring in `trace.ring`.
//! let session = Session::open("trace")?;
//! let mut recoveries = session.recoveries();
//! let file = ringtrace_ring::file::recover("trace.ring")?;
//! // What the session holds of each CPU, counted from its chunks.
//! let held = session.held(0);
//! let (joined, _) = halves::join(&mut recoveries[0], &held, file, false);
//! println!(
//!     "{} more events, {} read and never written, {} refused after the last round",
//!     joined.left, joined.unwritten, joined.refused
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ringtrace_ring::file::{EventBatch, LossNote, Recovery};

/// Why the events read by the consumer and never written were lost.
pub const UNWRITTEN: &str = "read by the consumer and not written (it was killed)";

/// Why the ring file's own losses were lost when it holds no event to
/// carry them.
pub const NO_EVENT_LEFT: &str =
    "lost in the ring file, which holds no event after them (overwritten, or with a writer)";

/// What joining found, for the line that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Joined {
    /// Events of the file, after the session's.
    pub left: u64,
    /// Events its consumer read and never wrote, counted lost.
    pub unwritten: u64,
    /// Writes the ring refused that the session does not count (made
    /// after its consumer's last round), counted lost at a time unknown.
    pub refused: u64,
}

/// What a session holds of one CPU of a process, counted from its chunks
/// ([`Session::held`](crate::Session::held)): what joining needs to tell
/// the ring file's remainder from what was drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Held {
    /// Events the consumer wrote: those in the chunks, and those of the
    /// chunks a size limit deleted.
    pub events: u64,
    /// Refused writes the consumer counted as `refused` (the ring's
    /// `missed` less `timed_out`), deleted chunks' included.
    pub refused: u64,
    /// Refused writes the consumer counted as `blocked too long` (the
    /// ring's `timed_out`), deleted chunks' included.
    pub timed_out: u64,
}

impl Held {
    /// `events` written, and the refusals noted: `refused`, and
    /// `timed_out` (blocked too long).
    pub fn new(events: u64, refused: u64, timed_out: u64) -> Held {
        Held {
            events,
            refused,
            timed_out,
        }
    }
}

/// Joins `file` (a ring file's recovery) into `session` (the same
/// process's recovery from the session that drained it), of which the
/// session holds `held[cpu]` ([`Session::held`](crate::Session::held)).
/// With `streamed`, the session's events are not in `session` (they are
/// read from its chunks later): the file's are returned, a batch per CPU,
/// to be given after them; else they are appended to `session`'s and
/// nothing is returned. `session` takes the file's writer state (how the
/// program ended).
pub fn join(
    session: &mut Recovery,
    held: &[Held],
    file: Recovery,
    streamed: bool,
) -> (Joined, Vec<Option<EventBatch>>) {
    let mut joined = Joined::default();
    let mut tails = Vec::new();
    session.writer = file.writer;
    for (c, mut tail) in file.cpus.into_iter().enumerate() {
        let Some(cpu) = session.cpus.get_mut(c) else {
            tails.push(None);
            continue;
        };
        let held = held.get(c).copied().unwrap_or_default();
        let unwritten = tail.file_stats.read.saturating_sub(held.events);
        // Every refusal of the ring's life is in the file's counts; those
        // the consumer noted are in the session already.
        let stats = &tail.file_stats;
        let timed_out = stats.timed_out.saturating_sub(held.timed_out);
        let refused = (stats.missed.saturating_sub(stats.timed_out))
            .saturating_sub(held.refused)
            .saturating_add(timed_out);
        cpu.file_stats.missed = cpu.file_stats.missed.saturating_add(refused);
        cpu.file_stats.timed_out = cpu.file_stats.timed_out.saturating_add(timed_out);
        joined.refused += refused;
        // Losses the session counted after its last event of this CPU:
        // they come before the file's first, as do the unwritten ones.
        let trailing: Vec<LossNote> = if streamed {
            std::mem::take(&mut cpu.loss_notes)
        } else {
            let n = cpu.events.len();
            let (after, before): (Vec<LossNote>, Vec<LossNote>) =
                std::mem::take(&mut cpu.loss_notes)
                    .into_iter()
                    .partition(|note| note.before >= n);
            cpu.loss_notes = before;
            after
        };
        let carried: u64 = trailing.iter().map(|n| n.count).sum::<u64>() + unwritten;
        let mut notes: Vec<LossNote> = trailing
            .into_iter()
            .map(|mut n| {
                n.before = 0;
                n
            })
            .collect();
        if unwritten > 0 {
            notes.push(LossNote::new(0, unwritten, UNWRITTEN));
        }
        match tail.events.first_mut() {
            Some(first) => first.lost_before += carried,
            None => {
                // What a first event would have carried of the file's.
                let lost = stats.overrun.saturating_add(stats.lost);
                if lost > 0 {
                    notes.push(LossNote::new(0, lost, NO_EVENT_LEFT));
                }
            }
        }
        notes.append(&mut tail.loss_notes);
        joined.left += tail.events.len() as u64;
        joined.unwritten += unwritten;
        cpu.counts.recovered += tail.counts.recovered;
        cpu.counts.skipped_pending += tail.counts.skipped_pending;
        cpu.counts.skipped_unreadable += tail.counts.skipped_unreadable;
        cpu.counts.changed_while_read += tail.counts.changed_while_read;
        cpu.problems.append(&mut tail.problems);
        if streamed {
            // Notes after the file's last event go with the recovery, as
            // a streamed session's own do: no batch's event carries them.
            let last = tail.events.len();
            let (carried, after): (Vec<LossNote>, Vec<LossNote>) =
                notes.into_iter().partition(|n| n.before < last);
            cpu.loss_notes.extend(after.into_iter().map(|mut n| {
                n.before = usize::MAX;
                n
            }));
            tails.push(Some(
                EventBatch::new(tail.events)
                    .with_fill(tail.fill)
                    .with_loss_notes(carried),
            ));
        } else {
            let n = cpu.events.len();
            cpu.loss_notes.extend(notes.into_iter().map(|mut note| {
                note.before = note.before.saturating_add(n);
                note
            }));
            cpu.events.append(&mut tail.events);
            cpu.fill.append(&mut tail.fill);
        }
    }
    (joined, tails)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_ring::file::{CpuRecovery, RecoveryParts, WriterState};
    use ringtrace_ring::{Event, RingBuffer, RingConfig};

    fn recovery(cpu: CpuRecovery, writer: WriterState) -> Recovery {
        let ring = RingBuffer::new(
            RingConfig::default().cpus(1).per_cpu_bytes(8192),
            ringtrace_clock::Counter::new(),
        )
        .unwrap();
        Recovery::from_parts(RecoveryParts {
            path: "x".into(),
            header: ring.snapshot(Vec::new()).header,
            metadata: Ok(Vec::new()),
            writer,
            cpus: vec![cpu],
            metadata_records: Vec::new(),
            annex_problems: Vec::new(),
        })
    }

    fn event(ts: u64) -> Event {
        Event {
            cpu: 0,
            ts,
            payload: vec![1],
            lost_before: 0,
        }
    }

    /// The session drained 4 events and noted 3 refused and 1 timed out;
    /// the file counts 6 read (2 unwritten), 7 refused of which 2 timed
    /// out (3 refused after the last round: 2 plain, 1 timed out), and
    /// holds no event: every loss lands after the session's last event.
    fn halves() -> (Recovery, Recovery) {
        let mut drained = CpuRecovery::new(0);
        drained.events = (1..=4).map(event).collect();
        let session = recovery(drained, WriterState::Live);
        let mut left = CpuRecovery::new(0);
        left.file_stats.read = 6;
        left.file_stats.missed = 7;
        left.file_stats.timed_out = 2;
        (session, recovery(left, WriterState::Died))
    }

    #[test]
    fn refusals_after_the_consumers_last_round_are_counted_once() {
        let (mut session, file) = halves();
        let held = [Held::new(4, 3, 1)];
        let (joined, tails) = join(&mut session, &held, file, false);
        assert!(tails.is_empty());
        assert_eq!((joined.left, joined.unwritten, joined.refused), (0, 2, 3));
        let cpu = &session.cpus[0];
        assert_eq!((cpu.file_stats.missed, cpu.file_stats.timed_out), (3, 1));
        let u = cpu.unplaced();
        assert_eq!((u.refused, u.after_last), (3, 2));
        assert!(matches!(session.writer, WriterState::Died));
    }

    #[test]
    fn a_streamed_join_keeps_the_losses_no_file_event_carries_with_the_recovery() {
        let (mut session, file) = halves();
        // Streamed: the session's events stay in its chunks.
        session.cpus[0].events.clear();
        let held = [Held::new(4, 3, 1)];
        let (joined, tails) = join(&mut session, &held, file, true);
        assert_eq!(joined.unwritten, 2);
        let tail = tails[0].as_ref().unwrap();
        assert!(tail.events.is_empty() && tail.loss_notes.is_empty());
        let notes = &session.cpus[0].loss_notes;
        assert_eq!(notes.len(), 1);
        assert_eq!((notes[0].count, notes[0].before), (2, usize::MAX));
        assert_eq!(session.cpus[0].unplaced().total(), 2 + 3);
    }

    #[test]
    fn a_file_event_carries_the_unwritten_losses_before_it() {
        let (mut session, mut file) = halves();
        file.cpus[0].events = vec![event(9)];
        let (joined, _) = join(&mut session, &[Held::new(4, 4, 2)], file, false);
        assert_eq!((joined.left, joined.refused), (1, 1));
        let cpu = &session.cpus[0];
        assert_eq!(cpu.events.last().map(|e| e.lost_before), Some(2));
        assert_eq!(cpu.unplaced().after_last, 0);
    }
}
