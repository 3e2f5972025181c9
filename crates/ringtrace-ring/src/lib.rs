//! Per-CPU lock-free ring buffers in the shape of the kernel's ftrace ring
//! buffer (kernel/trace/ring_buffer.c), made safe for what userspace adds.
//!
//! # Design
//!
//! A [`RingBuffer`] holds one [`CpuBuffer`] per possible CPU. A writer
//! picks the buffer of the CPU it is on (from glibc's rseq area, see
//! [`cpu`]), *reserves* room for an event, writes the payload and
//! *commits*. Readers consume by event or by page, iterate without
//! consuming, or merge every CPU in time order.
//!
//! ```text
//!            CpuBuffer (one per CPU)
//!   state: (write offset, last timestamp)   <- writers CAS this (128 bits)
//!
//!   slots:   [ s0 ][ s1 ][ s2 ] ... [ sN-1 ]     virtual page q -> slot q % N
//!              |     |     |
//!   pages:   [ p0 ][ p1 ][ p2 ] ... [ pN-1 ][ pR ][ spare ... ]
//!              ^ each with a commit word          ^ the reader's page: swapped
//!                counting committed bytes            into a slot to take a
//!                and events                          complete page out
//! ```
//!
//! The kernel can rule out what userspace cannot: a writer preempted or
//! migrated between reserve and commit, any number of threads interleaving
//! on one CPU buffer, a signal handler writing in the middle of a write.
//! So, after LTTng-UST:
//!
//! - Reservation is a compare-and-swap on a 128-bit `(write, last_ts)`
//!   state, with the clock read after the position is known and before the
//!   swap. A successful swap proves nobody reserved in between, so the
//!   previous record's time is exact and every record carries an exact delta
//!   from it, as the kernel's 27-bit `time_delta` does; nothing is guessed
//!   and no TIME_STAMP is needed for ordering. A clock that steps back is
//!   raised to the last time and counted (`ts_fixups`).
//! - Commits may come in any order: each adds its bytes to its page's
//!   commit word. A page is complete, and readable as a whole, when the word
//!   counts every byte. A reservation dropped without commit writes a
//!   discard record and commits it, so no page waits for it.
//! - A page with a commit that never comes (the writer died) is taken out
//!   of the ring by the reader after a bounded wait, or at once by
//!   [`CpuBuffer::fixup`]; its events are counted as lost, and a late commit
//!   counts itself. The page is quarantined until its late commits land;
//!   [`RingConfig::quarantine_pages`] bounds how many dead writers a CPU
//!   buffer outlives, and [`Stats`] shows it (`pages_quarantined`,
//!   `fixups_refused`).
//! - A reader learns of a loss exactly where it happened:
//!   [`Event::lost_before`] on the first event after it.
//! - Overwrite mode reuses the oldest page and counts its unread events as
//!   overrun; discard mode fails the reservation and counts it as missed.
//!   Either way `hit == read + overrun + lost + entries + discarded` at
//!   every quiescent point ([`Stats`]); `hit` counts a reservation when it
//!   ends, so one whose writer died is in no count.
//!
//! Inside, the crate is laid out by role (docs/design.md has the map):
//! `page` is layout and storage; `shared` the state writers and readers
//! both see; `write` the writer's half of the protocol and `read` the
//! reader's, which never import each other; `file` the ring files; `ring`
//! the whole. The reserve path is argued step by step at
//! `write::reserve::reserve` (steps A to F) and the page claim at
//! `write::claim::prepare_page`; every ordering stronger than Relaxed is
//! a named constant of `order`, argued there; the bit layouts are in
//! `page::meta` and the byte format in [`format`](mod@format) and
//! docs/format.md. Every atomic goes through a facade that loom replaces
//! under `cfg(loom)`.
//!
//! An event whose payload is at hand is written in one call:
//! [`RingBuffer::write`] on the caller's CPU, or [`CpuWriter::write`] on a
//! chosen CPU's buffer ([`RingBuffer::cpu_writer`]). On the rseq write path ([`rseq`]) with a clock read
//! by a bare rdtsc, that call writes the event whole, the cheapest way
//! there is; [`RingBuffer::reserve`] and [`Reservation`] are for payloads
//! made piece by piece.
//!
//! Beside the events, a ring keeps metadata records appended at run time
//! ([`RingBuffer::append_metadata`], the metadata annex): in its file for a
//! file ring, so that a crashed program's trace still decodes.

mod annex;
#[cfg(all(not(loom), target_arch = "x86_64", not(miri)))]
mod atomic128_x86;
pub mod config;
mod config_error;
pub mod cpu;
mod cpu_buffer;
mod cpu_writer;
mod event;
mod exit_hook;
pub mod file;
pub mod format;
mod order;
mod page;
mod read;
mod ring;
pub mod rseq;
mod shared;
mod stats;
mod sync;
mod write;

#[cfg(test)]
mod paths_agree;
#[cfg(test)]
mod tests;

pub use annex::AppendMetadataError;
pub use config::{ConfigError, Geometry, Mode, RingConfig};
pub use config::{DEFAULT_FIXUP_AFTER, MAX_BLOCK_FOR, MIN_FIXUP_AFTER};
pub use cpu_buffer::CpuBuffer;
pub use cpu_writer::CpuWriter;
pub use event::{DrainedPage, Event, PageBuf};
pub use exit_hook::{register_exit_handler, ExitHandler};
pub use read::iter::CpuIter;
pub use read::merge::MergedReader;
pub use ring::RingBuffer;
pub use rseq::{RseqUnavailable, WritePath, WritePathError};
pub use stats::{Losses, Stats};
pub use write::block::SignalScope;
pub use write::error::ReserveError;
pub use write::reservation::{PayloadStream, Reservation};
