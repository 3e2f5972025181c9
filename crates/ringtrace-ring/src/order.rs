//! Every ordering of the ring's protocol that is stronger than Relaxed, by
//! name, each with the argument that it is enough (and, where one can be
//! given, that it is needed). The code says `order::STATE_CAS`, never
//! `Ordering::AcqRel`, so that what an ordering is for is read where it is
//! used and argued once, here.
//!
//! Each can be weakened alone, to check that the loom models notice:
//! `--cfg ringtrace_weaken="state_cas"` makes [`STATE_CAS`] (and its
//! failure ordering) Relaxed, or removes a fence. `scripts/loom-weaken.sh`
//! runs the models once for each name found here; docs/verification.md
//! holds what it printed, and argues the ones no model catches.
//!
//! The steps named here (A to F of a reserve, steps 1 to 3 of a page claim)
//! are those of `write::reserve` and `write::claim`.

use crate::sync::Ordering::{self, AcqRel, Acquire, Relaxed, Release};

/// A fence that `--cfg ringtrace_weaken` can remove.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fence(Option<Ordering>);

impl Fence {
    /// Places the fence (nothing, if weakened away).
    #[inline(always)]
    pub(crate) fn place(self) {
        if let Some(order) = self.0 {
            crate::sync::fence(order);
        }
    }
}

/// Step D, the state's compare-and-swap (on either write path; on the
/// rseq path the remote update's). AcqRel on success: Acquire so that a
/// writer that takes over from a page switch sees the slot the switcher
/// claimed (its step 1 to 3, all before its own CAS) before it uses the
/// page; Release to publish this writer's claim the same way, and every
/// write before D to whoever reads the state after it. The state's CAS
/// is the one total order of reservations: every other argument starts
/// from it.
pub(crate) const STATE_CAS: Ordering = if cfg!(ringtrace_weaken = "state_cas") {
    Relaxed
} else {
    AcqRel
};

/// A writer's reload of the state after a stale guess (a page lookup that
/// missed, a refused claim checked against the true state, a flush).
/// Acquire: the state a writer starts again from must come with the claims
/// of the writers that moved it, as at a failed [`STATE_CAS`] (whose failure
/// ordering is Acquire, see [`failure`]).
pub(crate) const STATE_RELOAD: Ordering = if cfg!(ringtrace_weaken = "state_reload") {
    Relaxed
} else {
    Acquire
};

/// The commit: the add of a record's bytes (and of a page header's, a
/// padding's, a time prefix's, a discard's) to its page's commit word.
/// Release: everything the writer stored into the page is published to a
/// reader that Acquire-loads the word and finds the page complete. The
/// adds of all committers form one release sequence, so the reader that
/// reads the last add sees every committer's stores. On the rseq path each
/// add is a plain store after every store before it, and x86_64 keeps
/// stores in order.
pub(crate) const COMMIT_ADD: Ordering = if cfg!(ringtrace_weaken = "commit_add") {
    Relaxed
} else {
    Release
};

/// A record's header word, stored last (a PENDING header at reserve, the
/// event's at commit, a discard's, a time prefix's). Release, for a crash
/// only: a ring file recovered after a kill never finds a header without
/// the words it announces (the length word, the payload). Live readers
/// rely on [`COMMIT_ADD`] instead. A plain store on x86_64.
pub(crate) const RECORD_HEADER: Ordering = if cfg!(ringtrace_weaken = "record_header") {
    Relaxed
} else {
    Release
};

/// A writer's slot lookup of the open page when its cache entry misses.
/// Acquire is more than enough: the [`STATE_CAS`] that must succeed before
/// the page is used already orders the claim first (the claimer's CAS on
/// the state came after its claim, and this writer's CAS reads from it
/// or a later one). No model can catch its weakening, for that reason.
pub(crate) const SLOT_PHYS_LOAD: Ordering = if cfg!(ringtrace_weaken = "slot_phys_load") {
    Relaxed
} else {
    Acquire
};

/// The page claim's loads of the slot word, of the page's commit word and
/// of the slot word again (a consistent pair), and the claimer's loads of
/// the slot while it finishes a claim. Acquire: a commit word read after
/// an Acquire load of the slot is at least as new as the page that slot's
/// last CAS put there, and a page found complete has every committer's
/// stores visible before it is reused.
pub(crate) const CLAIM_LOAD: Ordering = if cfg!(ringtrace_weaken = "claim_load") {
    Relaxed
} else {
    Acquire
};

/// Claim step 1: the CAS that marks a complete page OPENING for its next
/// generation. AcqRel, as every step; the Acquire is implied here by the
/// [`CLAIM_LOAD`] that found the page complete, and the Release by step
/// 2's, which publishes the slot's move to the same readers. No model can
/// catch its weakening, for that reason.
pub(crate) const CLAIM_STEP1: Ordering = if cfg!(ringtrace_weaken = "claim_step1") {
    Relaxed
} else {
    AcqRel
};

/// Claim step 2: the slot's CAS to its next generation (nothing unread
/// on the page; a file ring's swap for a zeroed page is this CAS too).
/// AcqRel: Acquire to see step 1 before step 3; Release to publish the
/// page's reset (or the swapped-in page's fresh commit word) to the next
/// reader of the slot.
pub(crate) const CLAIM_STEP2: Ordering = if cfg!(ringtrace_weaken = "claim_step2") {
    Relaxed
} else {
    AcqRel
};

/// Claim step 3: the commit word's CAS from OPENING to a fresh count for
/// the new generation. AcqRel: Acquire so that whoever does it (the
/// claimer or a writer helping) sees step 2; Release so that a writer that
/// then finds the page fresh, and reserves in it, has the reset before its
/// first add.
pub(crate) const CLAIM_STEP3: Ordering = if cfg!(ringtrace_weaken = "claim_step3") {
    Relaxed
} else {
    AcqRel
};

/// The failure ordering of every claim step's CAS, and of the reader's
/// CASes on the slot: Acquire, to see whoever won, as a fresh
/// [`CLAIM_LOAD`] would. Weakened with the step it belongs to.
pub(crate) const fn failure(success: Ordering) -> Ordering {
    match success {
        Relaxed => Relaxed,
        _ => Acquire,
    }
}

/// Claim step 2 when it overruns unread events: the same slot CAS as
/// [`CLAIM_STEP2`], between the two counts a reader's loss mark waits on.
/// Its Release also publishes `overrun_claims_started`, bumped (Relaxed)
/// before it, to whoever Acquire-loads the new slot word or a state a
/// writer moved after seeing it.
pub(crate) const OVERRUN_CLAIM: Ordering = if cfg!(ringtrace_weaken = "overrun_claim") {
    Relaxed
} else {
    AcqRel
};

/// The bump of `overrun_claims_done` that closes an overrunning claim's
/// bracket. Release: a reader that Acquire-loads it ([`LOSS_MARK_LOAD`])
/// and finds it equal to `started` sees the overrun counted.
pub(crate) const OVERRUN_DONE: Ordering = if cfg!(ringtrace_weaken = "overrun_done") {
    Relaxed
} else {
    Release
};

/// Step E's fence, after a writer's successful [`STATE_CAS`] and before
/// its first store into the page (on every path that reserves). It is the
/// write side of a seqlock whose sequence is the slot word: an iterator or
/// an in-place reader that copies any of the stores after it, then fences
/// with Acquire, sees the slot as this writer saw it or later, and so
/// detects a page reused under it. A compiler barrier on x86_64.
pub(crate) const STEP_E_FENCE: Fence = Fence(if cfg!(ringtrace_weaken = "step_e_fence") {
    None
} else {
    Some(Release)
});

/// The fence in the commit that completes a page an overwrite claim
/// stepped over (`write::step_over`), before it frees the page: Acquire,
/// so that every other commit's stores to the page (each made before its
/// Release add, all adds one release sequence, which this commit's add
/// read) happen before the page is zeroed or reused.
pub(crate) const STEPPED_FREE_FENCE: Fence =
    Fence(if cfg!(ringtrace_weaken = "stepped_free_fence") {
        None
    } else {
        Some(Acquire)
    });

/// The fence before a claimer zeroes a page it took out of a slot (a file
/// ring's claim), for the same seqlock as [`STEP_E_FENCE`]: an iterator
/// still copying the page's old generation sees the slot's move if it
/// copies any zero.
pub(crate) const ZEROING_FENCE: Fence = Fence(if cfg!(ringtrace_weaken = "zeroing_fence") {
    None
} else {
    Some(Release)
});

/// A claimer's CAS of an OPENING commit word to OPENING and ZEROED once
/// it has zeroed the page in place (a file ring without a pool). AcqRel:
/// Release publishes the zeros to the writer that then does step 3 and
/// reserves in the page; Acquire, to see the word as it was.
pub(crate) const ZEROED_MARK: Ordering = if cfg!(ringtrace_weaken = "zeroed_mark") {
    Relaxed
} else {
    AcqRel
};

/// Giving a zeroed page back to a file ring's pool. Release: its zeros
/// happen before any taker's use ([`POOL_TAKE`]).
pub(crate) const POOL_GIVE: Ordering = if cfg!(ringtrace_weaken = "pool_give") {
    Relaxed
} else {
    Release
};

/// Taking a zeroed page from a file ring's pool. Acquire on success, to
/// pair with [`POOL_GIVE`]: the zeros happen before the page is put in a
/// slot.
pub(crate) const POOL_TAKE: Ordering = if cfg!(ringtrace_weaken = "pool_take") {
    Relaxed
} else {
    Acquire
};

/// A reader's loads of the slot word at its position (finding the head
/// page, counting entries, checking for a fixup, helping a claim on).
/// Acquire: pairs with the Release CAS that last moved the slot (a claim,
/// a take, a fixup), so that the commit word loaded next is at least as
/// new as the page that CAS put there, and a claim's
/// `overrun_claims_started` bump is seen (see the loss mark).
pub(crate) const READER_SLOT_LOAD: Ordering = if cfg!(ringtrace_weaken = "reader_slot_load") {
    Relaxed
} else {
    Acquire
};

/// A reader's loads of a page's commit word (is the head page complete;
/// how many events does it hold; has a quarantined page's last commit
/// landed). Acquire: pairs with the committers' [`COMMIT_ADD`]s (one
/// release sequence), so a page found complete has every record's stores
/// visible to the copy the reader then makes.
pub(crate) const READER_COMMIT_LOAD: Ordering = if cfg!(ringtrace_weaken = "reader_commit_load") {
    Relaxed
} else {
    Acquire
};

/// A reader's loads of the state (how far writers have got: is a page
/// closed; which pages were overwritten; which may hold entries). Acquire:
/// pairs with [`STATE_CAS`], so the slots and pages of every reservation
/// up to the state read are seen as claimed.
pub(crate) const READER_STATE_LOAD: Ordering = if cfg!(ringtrace_weaken = "reader_state_load") {
    Relaxed
} else {
    Acquire
};

/// The loss mark's loads of `overrun_claims_done`, the loss counts and
/// `overrun_claims_started`, in that order. Acquire each, so that none is
/// done before the one above it: `done` equal to `started` read after it
/// means no overrunning claim was between its two counts, and, through
/// [`OVERRUN_DONE`], that the counts read include every overrun of a
/// claim that finished.
pub(crate) const LOSS_MARK_LOAD: Ordering = if cfg!(ringtrace_weaken = "loss_mark_load") {
    Relaxed
} else {
    Acquire
};

/// The fence before a reader rewrites a spare page (to put it into a slot
/// empty): the page was taken out of a slot earlier, and an iterator may
/// still be copying it under that slot's old word. As at
/// [`STEP_E_FENCE`], an iterator whose copy sees any of the stores after
/// it, and then fences with Acquire, also sees that slot's CAS. The CAS's
/// own Release orders only what came before it.
pub(crate) const SPARE_FENCE: Fence = Fence(if cfg!(ringtrace_weaken = "spare_fence") {
    None
} else {
    Some(Release)
});

/// The spare's commit word, set complete and empty before the spare goes
/// into a slot. Release, though [`SPARE_SWAP`]'s Release publishes it
/// too: whoever reads the spare in the slot Acquire-loaded that CAS or a
/// later one (slot words change only by CAS, one release sequence). No
/// model can catch its weakening, for that reason.
pub(crate) const SPARE_COMMIT_STORE: Ordering = if cfg!(ringtrace_weaken = "spare_commit_store") {
    Relaxed
} else {
    Release
};

/// The reader's CAS that swaps a spare into a slot, taking the complete
/// page out (or, at a fixup, the stuck one). AcqRel: Acquire orders the
/// reader's later reads of the old page after the swap; Release publishes
/// the spare's reset to whoever next reads the slot.
pub(crate) const SPARE_SWAP: Ordering = if cfg!(ringtrace_weaken = "spare_swap") {
    Relaxed
} else {
    AcqRel
};

/// A fixup's mark (RECLAIMED) on the stuck page's commit word. AcqRel:
/// Acquire to read the events committed so far (the count of the lost),
/// Release so that a late committer's add that reads the mark counts
/// itself lost. On the rseq path always a remote update.
pub(crate) const FIXUP_MARK: Ordering = if cfg!(ringtrace_weaken = "fixup_mark") {
    Relaxed
} else {
    AcqRel
};

/// The in-place reader's snapshot: the commit word, the state, the commit
/// word again. Acquire each, so that none is done before the one above
/// it: a first commit load that counts the commit of a reservation made
/// after the state then read synchronizes with that commit's Release, so
/// the state load must see the reservation; a commit equal to the state's
/// offset therefore counts every reservation below it, and the same
/// Acquire makes their stores visible to the copy.
pub(crate) const IN_PLACE_LOAD: Ordering = if cfg!(ringtrace_weaken = "in_place_load") {
    Relaxed
} else {
    Acquire
};

/// The in-place reader's fence between its copy and its check of the
/// slot (a peek's load, a read's consume CAS): the read side of the
/// seqlock of [`STEP_E_FENCE`]. Before the consume CAS it adds nothing:
/// that CAS is an RMW on the slot word, which a reuse claims by an RMW
/// first, so the CAS fails if the claim came first; docs/verification.md
/// argues it. Before a peek's plain load it is needed.
pub(crate) const IN_PLACE_FENCE: Fence = Fence(if cfg!(ringtrace_weaken = "in_place_fence") {
    None
} else {
    Some(Acquire)
});

/// The in-place reader's consume: a CAS that bumps the slot's `consumed`
/// count. AcqRel: its Release is what makes a claim that reads from it
/// synchronize with it, so the copy's loads happen before the reuse's
/// stores (without it, load buffering could return a later store); its
/// Acquire orders nothing the reader uses. loom cannot produce the load
/// buffering (docs/verification.md).
pub(crate) const IN_PLACE_CONSUME: Ordering = if cfg!(ringtrace_weaken = "in_place_consume") {
    Relaxed
} else {
    AcqRel
};

/// The iterator's loads of the state, the slot and the commit word, before
/// and after its copy. Acquire, as the in-place reader's snapshot
/// ([`IN_PLACE_LOAD`]): a page whose commit word counts up to the state's
/// offset has no open reservation, and its records' stores are visible.
pub(crate) const ITER_LOAD: Ordering = if cfg!(ringtrace_weaken = "iter_load") {
    Relaxed
} else {
    Acquire
};

/// The iterator's fence between its copy and its check that the slot did
/// not move: the read side of the seqlock of [`STEP_E_FENCE`] and
/// [`SPARE_FENCE`]. Needed: the check is a plain load, which may return
/// an older value without it.
pub(crate) const ITER_FENCE: Fence = Fence(if cfg!(ringtrace_weaken = "iter_fence") {
    None
} else {
    Some(Acquire)
});

/// Raising a buffer's gate for a remote update on the rseq path (and the
/// lasting raise of shared mode, and taking it back). SeqCst: a locked
/// add, a full barrier before the membarrier fence, so the raised gate is
/// visible to every section the fence does not abort; and ordered before
/// the shared mark's load in the SeqCst order (see `rseq::shared_mode`).
/// Not weakenable: the loom models do not run the rseq path, whose gate
/// protocol tests/loom_rseq_protocol.rs models on its own.
#[cfg_attr(not(ringtrace_rseq), allow(dead_code))]
pub(crate) const GATE_RAISE: Ordering = Ordering::SeqCst;

/// Lowering the gate after a remote update (step 4). Release: the locked
/// update made under it is visible to any section that loads the gate as
/// zero after this.
#[cfg_attr(not(ringtrace_rseq), allow(dead_code))]
pub(crate) const GATE_LOWER: Ordering = Release;

/// Shared mode's mark, set and cleared by CAS and read by a remote updater
/// after its raise. SeqCst with [`GATE_RAISE`]: an updater that reads the
/// mark clear after its raise cannot miss a lasting raise that a leaver
/// has not yet taken back, nor skip a fence it needs.
#[cfg_attr(not(ringtrace_rseq), allow(dead_code))]
pub(crate) const SHARED_MARK: Ordering = Ordering::SeqCst;

/// A ring file's status word (open, closed). Release, for the file's
/// later readers (a recovery, another process): the buffers' setup is in
/// the file before the open mark, and every commit this thread made or
/// saw before the closed mark.
pub(crate) const FILE_STATUS: Ordering = Release;

/// A ring file's `EXITED` mark, stored by the exit handler after the exit
/// record (ticks, wall-clock ns, what was read: Relaxed stores into the
/// words after the status word). Release: the record is in the file
/// before the mark, in program order, for the compiler and for a machine
/// that would reorder stores, so a reader that finds `EXITED` (a
/// recovery, once the process is gone; another process's look at a live
/// file, which reads the word before the record) finds the whole record;
/// and every commit the exiting thread made or saw is in the file before
/// it, as for [`FILE_STATUS`]. Nothing Acquire-loads it in the writing
/// process: marks are made under the status's lock, which orders them.
pub(crate) const FILE_EXITED: Ordering = Release;

/// The metadata annex's committed length in a ring file. Release: a
/// record's bytes come before the length that covers them, in program
/// order and for the compiler, which is what a crash needs; another
/// process reads the word first, and an appender (in this process or a
/// forked one, under the annex's record lock) reads it with Acquire
/// before it appends past it or copies the records out.
pub(crate) const ANNEX_COMMITTED: Ordering = Release;
