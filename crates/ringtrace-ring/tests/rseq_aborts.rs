//! The rseq write path under forced aborts: writer threads on the rseq
//! path (reserving piecewise, writing whole events in one call, and
//! writing through a writer bound to one CPU's buffer) are sent signals (whose handler writes too, nested in whatever it
//! interrupted) and moved between CPUs with sched_setaffinity in a loop,
//! as fast as two other threads can, while a consumer reads. Each abort
//! handler counts itself on its thread; a run that saw no abort fails.
//! At the end every event is accounted for, every payload intact, nothing
//! duplicated, and each buffer's times never go back.
//!
//! Where the rseq path is unavailable (see `ringtrace_ring::rseq`) the
//! test says so and passes, unless RINGTRACE_REQUIRE_RSEQ=1 (set by
//! `.ci/run`) on x86_64, which makes that a failure.
//!
//! Sized for a 2-core machine: a few seconds in a release build (aborts
//! are rare: a section is a few instructions of an event's hundred).

mod common;

use common::Shared;
use ringtrace_clock::emulation::interrupt;
use ringtrace_ring::{Mode, RingBuffer, RingConfig, WritePath};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const WRITERS: usize = 3;
const EVENTS_PER_WRITER: u64 = 60_000;
/// Aborts the writers must see between them.
const ABORTS_WANTED: u64 = 50;
/// The most a writer writes, whatever the aborts: the consumer keeps every
/// event it reads (for the checks at the end), and a reader that keeps up
/// with three writers for the whole deadline would hold tens of millions.
const MAX_EVENTS_PER_WRITER: u64 = 400_000;
/// The most signals sent: each makes a handler write an event, which the
/// consumer keeps too.
const MAX_SIGNALS: u64 = 600_000;

static SHARED: OnceLock<Shared> = OnceLock::new();

fn this_thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Moves thread `tid` to `cpu`; a refusal (the thread has ended) is fine.
fn move_thread(tid: i32, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set is a valid mask.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[test]
#[cfg_attr(miri, ignore = "signals, affinity and threads")]
fn signals_and_migrations_abort_rseq_sections_and_nothing_is_lost_or_torn() {
    let config = RingConfig::default()
        .page_size(1024)
        .per_cpu_bytes(256 * 1024)
        .mode(Mode::Overwrite)
        .fixup_after(None)
        .write_path(WritePath::Rseq);
    let clock = common::tsc_or_local();
    let ring = match RingBuffer::new(config, clock) {
        Ok(ring) => ring,
        Err(e) => {
            assert!(
                !cfg!(target_arch = "x86_64")
                    || std::env::var("RINGTRACE_REQUIRE_RSEQ").as_deref() != Ok("1"),
                "RINGTRACE_REQUIRE_RSEQ=1 but {e}"
            );
            eprintln!("skipped: {e}");
            return;
        }
    };
    assert_eq!(ring.write_path(), WritePath::Rseq);
    let _ = SHARED.set(Shared::new(ring));
    let s = SHARED.get().unwrap();
    let signal = libc::SIGRTMIN() + 11;
    interrupt::install_irq_handler(signal, |_| common::on_tick(SHARED.get().unwrap(), 24)).unwrap();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());

    let done = Arc::new(AtomicBool::new(false));
    let writing = Arc::new(AtomicBool::new(true));
    let tids: Arc<[AtomicI32; WRITERS]> = Arc::new(std::array::from_fn(|_| AtomicI32::new(0)));
    let consumer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || common::consume_until_done(&s.ring, &done))
    };
    // Moves each writer to the next CPU, over and over.
    let mover = {
        let (writing, tids) = (Arc::clone(&writing), Arc::clone(&tids));
        std::thread::spawn(move || {
            let mut moves = 0u64;
            while writing.load(Ordering::Acquire) {
                for tid in tids.iter() {
                    let tid = tid.load(Ordering::Acquire);
                    if tid != 0 {
                        move_thread(tid, moves as usize % cpus);
                        moves += 1;
                    }
                }
                std::thread::sleep(Duration::from_micros(20));
            }
            moves
        })
    };
    // Signals each writer, over and over.
    let signaller = {
        let (writing, tids) = (Arc::clone(&writing), Arc::clone(&tids));
        std::thread::spawn(move || {
            let mut sent = 0u64;
            // SAFETY: getpid has no preconditions.
            let pid = unsafe { libc::getpid() };
            while writing.load(Ordering::Acquire) && sent < MAX_SIGNALS {
                for tid in tids.iter() {
                    let tid = tid.load(Ordering::Acquire);
                    if tid == 0 {
                        continue;
                    }
                    // SAFETY: tgkill to a thread of this process, with a
                    // signal whose handler is installed; a thread that has
                    // ended only makes it fail.
                    if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) } == 0 {
                        sent += 1;
                    }
                }
                std::thread::yield_now();
            }
            sent
        })
    };
    // Each writer writes at least EVENTS_PER_WRITER events, and goes on
    // until the writers have seen ABORTS_WANTED aborts between them (or
    // it has written MAX_EVENTS_PER_WRITER, or the deadline passes: then
    // the assertion below says how many).
    let aborts_seen = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(20);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (tids, aborts_seen) = (Arc::clone(&tids), Arc::clone(&aborts_seen));
            std::thread::spawn(move || {
                tids[w].store(this_thread_id(), Ordering::Release);
                let mut ok = 0u64;
                let mut reported = 0;
                for seq in 0.. {
                    if seq >= EVENTS_PER_WRITER && seq % 1024 == 0 {
                        let mine = ringtrace_ring::rseq::thread_aborts();
                        aborts_seen.fetch_add(mine - reported, Ordering::Relaxed);
                        reported = mine;
                        if aborts_seen.load(Ordering::Relaxed) >= ABORTS_WANTED
                            || seq >= MAX_EVENTS_PER_WRITER
                            || Instant::now() > deadline
                        {
                            break;
                        }
                    }
                    // Whole words for the one-call writes: the short
                    // encoding, which the whole-event path takes.
                    let len = 16 + (seq % 48) as usize;
                    let len = if seq % 4 < 2 { len & !3 } else { len };
                    let (p, n) = common::stack_payload(w as u32, seq, len);
                    match seq % 4 {
                        // In one call on the current CPU: whole-event
                        // writes (short events, the TSC), whose two
                        // sections signals and moves abort too.
                        0 => {
                            ok += u64::from(s.ring.write(&p[..n]).is_ok());
                            continue;
                        }
                        // Through a writer bound to one CPU's buffer, from
                        // wherever the mover has put this thread: on that
                        // CPU whole, elsewhere remote updates.
                        1 => {
                            let writer = s.ring.cpu_writer(w % cpus);
                            ok += u64::from(writer.write(&p[..n]).is_ok());
                            continue;
                        }
                        _ => {}
                    }
                    // Piecewise, so that signals and moves land between
                    // reserve and commit too.
                    let Ok(mut r) = s.ring.reserve(n) else {
                        continue;
                    };
                    let half = (n / 2) & !3;
                    r.write_at(0, &p[..half]);
                    r.write_at(half, &p[half..n]);
                    r.commit();
                    ok += 1;
                }
                tids[w].store(0, Ordering::Release);
                (ok, ringtrace_ring::rseq::thread_aborts())
            })
        })
        .collect();
    let (mut written, mut aborts) = (0, 0);
    for h in writers {
        let (ok, a) = h.join().unwrap();
        written += ok;
        aborts += a;
    }
    writing.store(false, Ordering::Release);
    let moves = mover.join().unwrap();
    let signals = signaller.join().unwrap();
    done.store(true, Ordering::Release);
    let seen = consumer.join().unwrap();
    interrupt::uninstall_irq_handler(signal).unwrap();

    let handler_ok = s.handler_ok.load(Ordering::Relaxed);
    let stats = s.ring.stats();
    eprintln!(
        "{written} events and {handler_ok} from handlers; {aborts} aborts, {signals} signals, {moves} moves, {} remote updates",
        s.ring.remote_updates()
    );
    assert!(
        aborts > 0,
        "no rseq section was aborted ({signals} signals, {moves} moves)"
    );
    assert!(handler_ok > 0, "no handler wrote");
    assert_eq!(stats.hit, written + handler_ok, "{stats:?}");
    assert_eq!(stats.hit, stats.accounted(), "{stats:?}");
    assert_eq!(stats.entries, 0, "{stats:?}");
    common::check_seen(&seen, &stats, Mode::Overwrite, 0);
}
