//! A session and the ring file it was drained from, read as one process.
//!
//! A program that streams its ring, kept in a file, into a session
//! (`stream_to` with `file`) and is killed leaves two halves: the events
//! its consumer drained, in the session, and the rest, in the ring file.
//! Joined, the file's events follow the session's on each CPU, and the
//! events the consumer had read and not yet written when it died (its
//! last round: the file counts them as read, the session does not hold
//! them) are counted lost just before the file's first event.
//!
//! ```no_run
//! use ringtrace_session::{halves, Session};
//! // A program killed while streaming into `trace`, its ring in `trace.ring`.
//! let session = Session::open("trace")?;
//! let mut recoveries = session.recoveries();
//! let file = ringtrace_ring::file::recover("trace.ring")?;
//! // Events of each CPU that `max_size` deleted: read by the consumer,
//! // and written.
//! let deleted: Vec<u64> = session.processes()[0]
//!     .written
//!     .iter()
//!     .map(|c| c.rotated_out.events)
//!     .collect();
//! let (joined, _) = halves::join(&mut recoveries[0], &deleted, file, false);
//! println!("{} more events, {} read and never written", joined.left, joined.unwritten);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ringtrace_ring::file::{EventBatch, LossNote, Recovery};

/// Why the events read by the consumer and never written were lost.
pub const UNWRITTEN: &str = "read by the consumer and not written (it was killed)";

/// What joining found, for the line that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Joined {
    /// Events of the file, after the session's.
    pub left: u64,
    /// Events its consumer read and never wrote, counted lost.
    pub unwritten: u64,
}

/// Joins `file` (a ring file's recovery) into `session` (the same
/// process's recovery from the session that drained it), whose CPUs had
/// `rotated[cpu]` events deleted by a size limit
/// ([`SessionProcess::written`](crate::SessionProcess::written)'s
/// `rotated_out.events`). With `streamed`, the
/// session's events are not in `session` (they are read from its chunks
/// later): the file's are returned, a batch per CPU, to be given after
/// them; else they are appended to `session`'s and nothing is returned.
/// `session` takes the file's writer state (how the program ended).
pub fn join(
    session: &mut Recovery,
    rotated: &[u64],
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
        let kept = cpu.counts.recovered + rotated.get(c).copied().unwrap_or(0);
        let unwritten = tail.file_stats.read.saturating_sub(kept);
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
        if let Some(first) = tail.events.first_mut() {
            first.lost_before += carried;
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
            tails.push(Some(
                EventBatch::new(tail.events)
                    .with_fill(tail.fill)
                    .with_loss_notes(notes),
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
