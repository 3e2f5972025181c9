//! Reserve and commit never allocate: checked with a counting global
//! allocator over page switches, wrap-around, overwrite, a full buffer in
//! discard mode, dropped reservations and clock fixups.

use ringtrace_clock::{Clock, ClockSpec};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to the system allocator unchanged; the
// thread-local bookkeeping neither allocates nor touches the blocks.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: forwarded with the caller's layout, as GlobalAlloc requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr was allocated by System.alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note_allocation() {
    // try_with: the allocator can run while thread locals are torn down.
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

fn hammer<C: Clock>(ring: &RingBuffer<C>) {
    let payload = [7u8; 16];
    for i in 0..50_000u32 {
        // In discard mode a full buffer fails the reservation: also no allocation.
        if let Ok(mut r) = ring.reserve(16 + (i % 40) as usize) {
            r.write(&payload);
            if i % 97 == 0 {
                drop(r); // becomes a discard record
            } else {
                r.commit();
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "reads hardware clocks")]
fn reserve_and_commit_never_allocate() {
    for mode in [Mode::Overwrite, Mode::Discard] {
        for name in ["tsc", "mono", "counter", "global@preempt"] {
            let Ok(clock) = name.parse::<ClockSpec>().unwrap().build() else {
                continue;
            };
            let config = RingConfig::default()
                .page_size(512)
                .per_cpu_bytes(8 * 1024)
                .mode(mode);
            let ring = RingBuffer::new(config, clock).unwrap();
            ring.write(b"warm up").unwrap();
            let n = allocations_during(|| hammer(&ring));
            assert_eq!(n, 0, "{n} allocations on the write path ({mode}, {name})");
            let s = ring.stats();
            assert!(s.hit > 0);
            if mode == Mode::Discard {
                assert!(s.missed > 0, "the full-buffer path was not exercised");
            } else {
                assert!(s.overrun > 0, "the overwrite path was not exercised");
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn a_file_ring_writes_without_allocating_either() {
    // The flight recorder's write path, page zeroing at each claim
    // included, is the anonymous ring's: no allocation (nor system call).
    let dir = std::env::temp_dir().join(format!("ringtrace-noalloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for mode in [Mode::Overwrite, Mode::Discard] {
        let path = dir.join(format!("{mode}.ring"));
        let _ = std::fs::remove_file(&path);
        let config = RingConfig::default()
            .page_size(512)
            .per_cpu_bytes(8 * 1024)
            .mode(mode)
            .file(&path);
        let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
        ring.write(b"warm up").unwrap();
        let n = allocations_during(|| hammer(&ring));
        assert_eq!(n, 0, "{n} allocations on a file ring's write path ({mode})");
        let s = ring.stats();
        assert!(s.overrun > 0 || s.missed > 0, "the ring never filled");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
