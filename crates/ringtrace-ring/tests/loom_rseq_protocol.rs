//! A loom model of the rseq write path's remote-update protocol
//! (`src/rseq/remote.rs`, `src/per_cpu_ops.rs`). loom cannot run the
//! sections themselves (assembly that the kernel restarts), so this models
//! what the argument rests on:
//!
//! - the CPU is a lock: a section runs holding it, so it is atomic with
//!   respect to everything else on that CPU, as the kernel's restart makes
//!   it (a section the kernel aborts is one that did not run);
//! - a plain section checks the remote flag, then loads the word and
//!   stores it back changed: a read-modify-write that is not atomic with
//!   respect to other CPUs;
//! - a section that finds the flag up does a locked read-modify-write
//!   instead, still on the CPU;
//! - a remote update raises the flag, fences the CPU (membarrier: every
//!   section running there has finished, or will restart and see the flag;
//!   here, taking and releasing the CPU's lock), does a locked
//!   read-modify-write and lowers the flag.
//!
//! The word is a counter every update adds one to: a lost update shows as
//! a smaller total. The control model takes the fence out and checks that
//! loom then finds a lost update, so the model can tell.
#![cfg(loom)]

use loom::sync::atomic::AtomicU64;
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

struct Buffer {
    /// Holding it is running on the buffer's CPU.
    cpu: Mutex<()>,
    remote: AtomicU64,
    word: AtomicU64,
}

impl Buffer {
    fn new() -> Arc<Buffer> {
        Arc::new(Buffer {
            cpu: Mutex::new(()),
            remote: AtomicU64::new(0),
            word: AtomicU64::new(0),
        })
    }

    /// A writer on the CPU: the plain section, or the locked one when the
    /// gate is shut (`add_pair_unless`, then `add_rare`'s `locked_add`).
    fn add_on_cpu(&self) {
        let _on_cpu = self.cpu.lock().unwrap();
        if self.remote.load(SeqCst) == 0 {
            // The section's load and its committing store.
            let v = self.word.load(Acquire);
            self.word.store(v + 1, Release);
        } else {
            self.word.fetch_add(1, AcqRel);
        }
    }

    /// A writer off the CPU (`RemoteUpdate`): flag, fence, locked add.
    fn add_remotely(&self, fence: bool) {
        self.remote.fetch_add(1, SeqCst);
        if fence {
            drop(self.cpu.lock().unwrap());
        }
        self.word.fetch_add(1, AcqRel);
        self.remote.fetch_sub(1, Release);
    }
}

#[test]
fn a_remote_update_is_never_overwritten_by_a_section_on_the_cpu() {
    loom::model(|| {
        let b = Buffer::new();
        let remote = {
            let b = Arc::clone(&b);
            thread::spawn(move || b.add_remotely(true))
        };
        let other = {
            let b = Arc::clone(&b);
            thread::spawn(move || b.add_on_cpu())
        };
        b.add_on_cpu();
        remote.join().unwrap();
        other.join().unwrap();
        assert_eq!(b.word.load(Relaxed), 3);
    });
}

#[test]
fn two_remote_updates_and_a_section_add_up() {
    loom::model(|| {
        let b = Buffer::new();
        let remotes: Vec<_> = (0..2)
            .map(|_| {
                let b = Arc::clone(&b);
                thread::spawn(move || b.add_remotely(true))
            })
            .collect();
        b.add_on_cpu();
        for r in remotes {
            r.join().unwrap();
        }
        assert_eq!(b.word.load(Relaxed), 3);
        assert_eq!(b.remote.load(Relaxed), 0);
    });
}

/// The control: without the fence, a section that checked the flag before
/// it went up can store over the remote's add, and loom finds it.
#[test]
fn without_the_fence_loom_finds_the_lost_update() {
    let lost = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&lost);
    loom::model(move || {
        let b = Buffer::new();
        let remote = {
            let b = Arc::clone(&b);
            thread::spawn(move || b.add_remotely(false))
        };
        b.add_on_cpu();
        remote.join().unwrap();
        if b.word.load(Relaxed) != 2 {
            seen.store(true, Relaxed);
        }
    });
    assert!(
        lost.load(Relaxed),
        "the unfenced model never lost an update: the model cannot tell"
    );
}
