//! The writer's half of the protocol: the reserve (steps A to F), the page
//! claim, the commit, the whole-event write, and the per-CPU word updates
//! of the two write paths (the CAS path's locked instructions; the rseq
//! path's restartable sections, remote updates and shared mode, whose
//! mechanism is in [`crate::rseq`]). It works on a buffer's
//! [`SharedState`](crate::shared::SharedState) and never sees the reader.
//!
//! - [`reserve`]: the fast path and the general loop.
//! - [`claim`]: making the next page ready; opening, padding, flushing.
//! - [`step_over`]: an overwrite claim past a page a sleeping writer
//!   holds, and the late commits into it.
//! - [`percpu`]: the state's compare-and-swap and the commit word's add,
//!   on either path.
//! - [`reservation`]: a reserved event, its payload and its commit.
//! - [`whole`]: an event written whole on the rseq path.
//! - [`error`]: why a reservation fails.
//! - [`block`]: a blocking writer's wait for room.

pub(crate) mod block;
pub(crate) mod claim;
pub(crate) mod error;
pub(crate) mod percpu;
pub(crate) mod reservation;
pub(crate) mod reserve;
pub(crate) mod step_over;
#[cfg(ringtrace_rseq)]
pub(crate) mod whole;
