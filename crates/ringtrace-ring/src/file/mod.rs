//! The flight recorder: a ring laid out in a memory-mapped file, so that
//! what it recorded survives the process (a crash, SIGKILL, `abort()`),
//! and [`recover`] reads it back.
//!
//! The writers' path is the anonymous ring's, over the same words: the
//! file is mapped shared, and its pages are the page cache's, which outlive
//! the process. What a file ring adds:
//!
//! - a versioned header ([`FileHeader`]): geometry, clock, a wall-clock
//!   anchor, the writer's pid and command, and the metadata a higher layer
//!   hands in ([`RingConfig::metadata`](crate::RingConfig::metadata)) to
//!   decode events;
//! - the metadata annex: records appended at run time
//!   ([`RingBuffer::append_metadata`](crate::RingBuffer::append_metadata)),
//!   each made visible by a committed length stored after its bytes;
//! - the control words (the state, the accounting counters, the slot and
//!   commit words) in the file, so recovered counts are real;
//! - each page zeroed before it enters a slot (a claim swaps in one zeroed
//!   ahead, and zeroes the one it took out off every writer's path), and
//!   each event's header
//!   stored PENDING at reservation and again at commit
//!   ([`format::PENDING`](crate::format::PENDING)), so a reservation that
//!   never committed is recognised and stepped over, and nothing half
//!   written is ever returned.
//!
//! The status word tells a reader whether the writer set the file up,
//! had it open, closed it, or exited with it: a ring dropped reads
//! closed; one still alive when its process exits normally reads exited
//! (an exit handler marks it, with the time of the exit beside the word);
//! one whose process crashed or was killed reads open with its process
//! gone.
//!
//! The file's blocks are reserved when it is created (`posix_fallocate`):
//! a write into a hole of a full disk would otherwise be a SIGBUS in the
//! writer. Nor may a ring file a process has open be truncated: its
//! writers would fault on the pages cut off.
//!
//! docs/format.md describes the file byte by byte.

#[cfg(not(loom))]
pub(crate) mod adopt;
mod anchors;
mod annex;
#[cfg(not(loom))]
mod at_exit;
#[cfg(not(loom))]
mod attach;
#[cfg(not(loom))]
pub(crate) mod create;
mod error;
pub(crate) mod header;
pub mod layout;
#[cfg(not(loom))]
mod open_here;
mod read;
pub(crate) mod recover;
mod source;
mod walk;

pub use anchors::{ClockAnchors, ANCHORS_MAGIC, ANCHORS_VERSION};
#[cfg(not(loom))]
pub use attach::LiveFile;
#[cfg(not(loom))]
pub(crate) use create::{RingFile, Writer};
pub use error::{FileError, UnreadableMetadata};

/// The [`Recovery::path`] of a snapshot of a ring that has no file: there
/// is nothing to read again.
pub const MEMORY_PATH: &str = "<memory>";
pub use header::{fnv1a64, FileClock, FileHeader, MAGIC, OLDEST_VERSION, VERSION};
pub use layout::FileLayout;
#[cfg(not(loom))]
pub use open_here::open_in_this_process;
pub use recover::{
    recover, recover_bytes, CpuRecovery, ExitTime, FillSample, LossNote, Recovery, RecoveryCounts,
    RecoveryParts, Unplaced, WriterState,
};
pub use source::{EventBatch, EventSource};

use std::path::PathBuf;

/// The status word: the file is being set up (a crash now leaves no ring).
pub const STATUS_SETTING_UP: u64 = 0x5345_5455_5000_0001;
/// The status word: writers may be active.
pub const STATUS_OPEN: u64 = 0x4F50_454E_0000_0002;
/// The status word: the ring was dropped by its program. (Builds before
/// [`STATUS_EXITED`] also stored it at a normal exit with the ring alive.)
pub const STATUS_CLOSED: u64 = 0x434C_4F53_4544_0003;
/// The status word: the process that wrote the ring exited normally
/// (returned from `main`, called `exit`) with the ring still alive; the
/// exit record after the word ([`layout::EXIT_OFFSET`]) holds when.
pub const STATUS_EXITED: u64 = 0x4558_4954_4544_0004;

/// Where a file ring goes, from [`RingConfig::file`](crate::RingConfig::file),
/// `append` and `metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FileTarget {
    /// The file.
    pub path: PathBuf,
    /// Write into an existing file (its ring must have the same shape and
    /// clock, and its writer must be gone) rather than refuse it.
    pub append: bool,
    /// Bytes stored with the header for readers: ringtrace's facade puts
    /// the tracepoint descriptions here.
    pub metadata: Vec<u8>,
}

/// Whether the process that wrote a file, `pid` running `comm`, is still
/// at work: signal 0 reaches it (or it is another user's), it is not a
/// zombie (killed, not yet reaped), and the pid was not reused by another
/// command (where /proc says).
pub(crate) fn process_alive(pid: u32, comm: &str) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
    let r = unsafe { libc::kill(pid, 0) };
    if r != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // "pid (comm) S ...": the state follows the last parenthesis.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        if matches!(state, Some('Z' | 'X' | 'x')) {
            return false;
        }
    }
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(now) if !comm.is_empty() => now.trim_end() == comm,
        _ => true,
    }
}

/// A wall-clock anchor: a `CLOCK_REALTIME` reading (ns since the epoch)
/// and the ring clock's reading at the same moment, so that ticks convert
/// to real time. Taken once, when a ring is opened: a file ring's header
/// records it, and every snapshot of the ring carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WallAnchor {
    /// `CLOCK_REALTIME`, in ns since the epoch.
    pub wall_ns: u64,
    /// The ring's clock at that moment.
    pub ticks: u64,
}

/// A wall-clock anchor for `clock`, read now: the realtime read on both
/// sides of the clock's reading and their midpoint taken. (Under Miri,
/// whose isolation hides the real-time clock, the wall reads 0.)
pub(crate) fn wall_anchor<C: ringtrace_clock::Clock + ?Sized>(clock: &C) -> WallAnchor {
    let (wall_ns, ticks) = read_with_wall(|| clock.read());
    WallAnchor {
        wall_ns: wall_ns.unwrap_or(0),
        ticks,
    }
}

/// `CLOCK_REALTIME` now, in ns since the epoch; `None` under Miri (whose
/// isolation hides it) or before the epoch.
pub(crate) fn wall_now() -> Option<u64> {
    if cfg!(miri) {
        return None;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `read` (a reading of a ring's clock) between two readings of
/// `CLOCK_REALTIME`, and their midpoint: the wall-clock time of the
/// reading, when the realtime clock could be read.
pub(crate) fn read_with_wall<T>(read: impl FnOnce() -> T) -> (Option<u64>, T) {
    let before = wall_now();
    let value = read();
    let after = wall_now();
    (before.zip(after).map(|(b, a)| b / 2 + a / 2), value)
}
