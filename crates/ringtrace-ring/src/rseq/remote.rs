//! Updates of a CPU buffer's per-CPU words from anywhere but its CPU.
//!
//! A section on the owning CPU loads a word and stores it back without a
//! lock prefix. A locked read-modify-write from another CPU that landed
//! between that load and that store would be overwritten, so no other CPU
//! may update those words while a section can run. A remote update
//! therefore:
//!
//! 1. raises the buffer's remote flag (a locked add of [`REMOTE_ONE`] to
//!    its gate word: a full barrier), so that every section that starts
//!    from now on finds the gate shut and refuses;
//! 2. asks the kernel to restart every section running on the owning CPU
//!    (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, FLAG_CPU, cpu)`):
//!    a section that read the flag as zero before step 1 either committed
//!    before the fence (and the fence makes its store visible here) or is
//!    aborted, and on its retry sees the flag;
//! 3. does its update with the ordinary locked instruction;
//! 4. lowers the flag (Release: the update is visible to a section that
//!    finds the gate open).
//!
//! The gate word is the buffer's CPU number while no remote update is
//! under way, and that plus `REMOTE_ONE` per update under way otherwise:
//! a section checks that it is on the buffer's CPU and that no remote
//! update is under way with one compare, of the thread's `cpu_id` (as a
//! 64-bit number) with the gate.
//!
//! Sections that see the flag raised go through here too, so while it is
//! up every updater uses locked instructions, as the CAS path always does.
//! An update made while this thread already holds one on the same buffer
//! (steps 1 and 2 done, 4 not yet) is nested in it and makes none of the
//! four steps: the flag is up and the CPU fenced until the outer one ends,
//! after the nested one. A whole event written from another CPU holds one
//! across its reserve and commit (`CpuBuffer::remote_event`), so that it
//! makes one system call, not two.
//!
//! A buffer that gets remote updates often is put in shared mode
//! (`shared_mode`): its gate stays shut, and its remote updates skip the
//! fence.
//!
//! It costs a system call and an interrupt of the owning CPU, so it is
//! for what is rare: a writer that migrated between reserve and commit,
//! a `CpuWriter` of a CPU the caller is not on, a flush or a fixup from a
//! reader, a thread with no rseq registration. The ring counts them
//! (`RingBuffer::remote_updates`).

use super::shared_mode::RemoteCounts;
use crate::order;
use std::cell::Cell;
use std::sync::atomic::AtomicU64;

pub(crate) use super::shared_mode::REMOTE_ONE;

const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ: libc::c_int = 1 << 7;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ: libc::c_int = 1 << 8;
const MEMBARRIER_CMD_FLAG_CPU: libc::c_uint = 1;

fn membarrier(cmd: libc::c_int, flags: libc::c_uint, cpu: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes three integers and touches no user memory.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, flags, cpu) }
}

/// Registers this process for rseq fences; `Err` says why it cannot be.
pub(crate) fn register() -> Result<(), super::RseqUnavailable> {
    use super::RseqUnavailable;
    let supported = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
    if supported < 0 {
        return Err(RseqUnavailable::NoMembarrier {
            errno: std::io::Error::last_os_error().to_string(),
        });
    }
    if supported & libc::c_long::from(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) == 0 {
        return Err(RseqUnavailable::NoRseqFence);
    }
    if membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) != 0 {
        return Err(RseqUnavailable::RegisterRefused {
            errno: std::io::Error::last_os_error().to_string(),
        });
    }
    Ok(())
}

/// Restarts every rseq section of this process running on `cpu`; on
/// return, what such a section committed is visible to the caller.
fn fence(cpu: u32) {
    // errno is saved and restored: this runs in signal handlers too.
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    let mut done = membarrier(
        MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
        MEMBARRIER_CMD_FLAG_CPU,
        cpu as libc::c_int,
    ) == 0;
    if !done {
        // A CPU the kernel does not know (offline, past nr_cpu_ids): fence
        // every CPU instead. Registration succeeded, so this one works.
        done = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0;
    }
    debug_assert!(done, "membarrier failed after registration");
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

std::thread_local! {
    /// The gate word of the buffer whose remote update this thread holds,
    /// raised and fenced (steps 1 and 2 done, 4 not yet), or null. Set
    /// only between a completed fence and the lowering, and saved and
    /// restored around an update nested inside another (a signal handler's,
    /// or one on another buffer), so it never names a gate this thread
    /// does not hold up. Const-initialised and without a destructor: a
    /// plain thread-local load, safe in a signal handler.
    static HELD: Cell<*const AtomicU64> = const { Cell::new(std::ptr::null()) };
}

/// A remote update in progress: the flag is up and the CPU fenced until
/// this is dropped.
pub(crate) struct RemoteUpdate<'a> {
    flag: &'a AtomicU64,
    /// Whether this update raised the flag (and lowers it): false for one
    /// nested inside this thread's own update of the same buffer.
    raised: bool,
    /// What [`HELD`] named before this update.
    outer: *const AtomicU64,
}

impl<'a> RemoteUpdate<'a> {
    /// Steps 1 and 2; `counts` counts it. Inside this thread's own update
    /// of the same buffer (a whole event written from another CPU holds
    /// one across its reserve and its commit: `CpuBuffer::remote_event`),
    /// nothing: the flag is up and the CPU fenced already, and stay so
    /// until that outer update ends, after this one.
    ///
    /// On a buffer in shared mode (see `shared_mode`) the fence is skipped:
    /// the gate has been shut without a gap since one.
    #[cold]
    pub(crate) fn begin(flag: &'a AtomicU64, cpu: u32, counts: &RemoteCounts) -> Self {
        let outer = HELD.with(Cell::get);
        if std::ptr::eq(outer, flag) {
            return RemoteUpdate {
                flag,
                raised: false,
                outer,
            };
        }
        // SeqCst: a locked add, a full barrier before the fence, so the
        // flag is visible to every section the fence does not abort; and
        // before the shared mark's read, in the SeqCst order.
        flag.fetch_add(REMOTE_ONE, order::GATE_RAISE);
        if !counts.skip_fence() {
            fence(cpu);
            counts.fenced_update(flag);
        }
        HELD.with(|held| held.set(flag));
        RemoteUpdate {
            flag,
            raised: true,
            outer,
        }
    }
}

impl Drop for RemoteUpdate<'_> {
    fn drop(&mut self) {
        if !self.raised {
            return;
        }
        // Before the flag comes down, so that a signal handler running
        // between the two makes an update of its own.
        HELD.with(|held| held.set(self.outer));
        // Step 4. Release: our locked update is visible to any section
        // that loads the flag as zero after this.
        self.flag.fetch_sub(REMOTE_ONE, order::GATE_LOWER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// Two buffers' gate words (CPU 0's and CPU 1's) and their counts.
    fn gates() -> Option<[(AtomicU64, RemoteCounts); 2]> {
        if let Err(why) = register() {
            eprintln!("skipped: {why}");
            return None;
        }
        Some([0, 1].map(|cpu| (AtomicU64::new(cpu), RemoteCounts::default())))
    }

    #[test]
    fn an_update_inside_this_threads_own_update_of_the_buffer_makes_no_fence_and_keeps_the_flag_up()
    {
        let Some([(gate, updates), _]) = gates() else {
            return;
        };
        {
            let _outer = RemoteUpdate::begin(&gate, 0, &updates);
            assert_eq!(gate.load(Ordering::SeqCst), REMOTE_ONE);
            {
                let _inner = RemoteUpdate::begin(&gate, 0, &updates);
                assert_eq!(gate.load(Ordering::SeqCst), REMOTE_ONE);
            }
            // The inner one's end did not lower the outer one's flag.
            assert_eq!(gate.load(Ordering::SeqCst), REMOTE_ONE);
            assert_eq!(updates.fenced(), 1);
        }
        assert_eq!(gate.load(Ordering::SeqCst), 0);
        // Held no more: the next one raises and fences again.
        drop(RemoteUpdate::begin(&gate, 0, &updates));
        assert_eq!(updates.fenced(), 2);
        assert_eq!(gate.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_update_of_another_buffer_inside_one_is_made_whole_and_gives_the_outer_back() {
        let Some([(a, a_updates), (b, b_updates)]) = gates() else {
            return;
        };
        let outer = RemoteUpdate::begin(&a, 0, &a_updates);
        {
            let _other = RemoteUpdate::begin(&b, 1, &b_updates);
            assert_eq!(b.load(Ordering::SeqCst), 1 + REMOTE_ONE);
            assert_eq!(b_updates.fenced(), 1);
            // Inside it only `b` is named as held: an update of `a` is
            // made whole (a fence more, never one less), and gives `b` back.
            drop(RemoteUpdate::begin(&a, 0, &a_updates));
            assert_eq!(a_updates.fenced(), 2);
            assert_eq!(a.load(Ordering::SeqCst), REMOTE_ONE);
            drop(RemoteUpdate::begin(&b, 1, &b_updates));
            assert_eq!(b_updates.fenced(), 1);
        }
        assert_eq!(b.load(Ordering::SeqCst), 1);
        // `a` named as held again once `b`'s update ended.
        drop(RemoteUpdate::begin(&a, 0, &a_updates));
        assert_eq!(a_updates.fenced(), 2);
        assert_eq!(a.load(Ordering::SeqCst), REMOTE_ONE);
        drop(outer);
        assert_eq!(a.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn another_thread_never_counts_as_holding_an_update() {
        let Some([(gate, updates), _]) = gates() else {
            return;
        };
        let _held = RemoteUpdate::begin(&gate, 0, &updates);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _own = RemoteUpdate::begin(&gate, 0, &updates);
                assert_eq!(gate.load(Ordering::SeqCst), 2 * REMOTE_ONE);
            });
        });
        assert_eq!(updates.fenced(), 2);
        assert_eq!(gate.load(Ordering::SeqCst), REMOTE_ONE);
    }

    #[test]
    fn frequent_updates_make_the_buffer_shared_which_skips_the_fence_until_pages_open_quietly() {
        use crate::rseq::shared_mode::{ENTER_UPDATES, LEAVE_QUIET_NS, LEAVE_QUIET_PAGES};
        let Some([(gate, counts), _]) = gates() else {
            return;
        };
        for _ in 0..ENTER_UPDATES {
            drop(RemoteUpdate::begin(&gate, 0, &counts));
        }
        // Made well within the window (unless this thread lost its CPU for
        // 10 ms: then the count starts again).
        if counts.entries() == 0 {
            eprintln!("skipped: the updates took longer than the window");
            return;
        }
        assert_eq!(counts.fenced(), ENTER_UPDATES);
        // The lasting raise: the gate stays shut.
        assert_eq!(gate.load(Ordering::SeqCst), REMOTE_ONE);
        {
            let _update = RemoteUpdate::begin(&gate, 0, &counts);
            assert_eq!(gate.load(Ordering::SeqCst), 2 * REMOTE_ONE);
        }
        assert_eq!((counts.fenced(), counts.shared()), (ENTER_UPDATES, 1));
        // Quiet pages: one to take the count, then LEAVE_QUIET_PAGES more,
        // which end it only once LEAVE_QUIET_NS have passed.
        for _ in 0..=LEAVE_QUIET_PAGES {
            counts.page_opened(&gate);
            assert_eq!(gate.load(Ordering::SeqCst), REMOTE_ONE);
        }
        std::thread::sleep(std::time::Duration::from_nanos(LEAVE_QUIET_NS));
        counts.page_opened(&gate);
        assert_eq!(gate.load(Ordering::SeqCst), 0);
        drop(RemoteUpdate::begin(&gate, 0, &counts));
        assert_eq!(counts.fenced(), ENTER_UPDATES + 1);
        assert_eq!(gate.load(Ordering::SeqCst), 0);
        assert_eq!(counts.entries(), 1);
    }
}
