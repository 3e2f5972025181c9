//! The threads of a `ringtrace hammer` run ([`crate::hammer`]): the
//! producer loop, the two consumers (sleeping, as the kernel module's, or
//! spinning), the payload they agree on, and what each thread measures
//! about itself (its own CPU time).

use crate::hammer::{ConsumerKind, HammerConfig, HammerError, ProducerStats, ReadBy};
use crate::sched;
use ringtrace_clock::AnyClock;
use ringtrace_ring::RingBuffer;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::Thread;
use std::time::{Duration, Instant};

const PAYLOAD: usize = 10;

/// The 10-byte payload: producer, sequence, and a check.
fn payload(producer: u16, seq: u32) -> [u8; PAYLOAD] {
    let mut p = [0u8; PAYLOAD];
    p[0..2].copy_from_slice(&producer.to_le_bytes());
    p[2..6].copy_from_slice(&seq.to_le_bytes());
    let check = (u32::from(producer) ^ seq).wrapping_mul(0x9E37_79B1);
    p[6..10].copy_from_slice(&check.to_le_bytes());
    p
}

fn payload_ok(p: &[u8]) -> bool {
    if p.len() != PAYLOAD {
        return false;
    }
    let producer = u16::from_le_bytes([p[0], p[1]]);
    let seq = u32::from_le_bytes([p[2], p[3], p[4], p[5]]);
    p == payload(producer, seq)
}

/// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in ns; 0 if
/// the clock cannot be read.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID
    // names the calling thread's own clock.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// CPUs this process may run on: `available_parallelism` (which counts
/// cgroup quotas), and no more than the CPUs in the process's affinity
/// mask.
pub(crate) fn cpus_available() -> usize {
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled in by
    // sched_getaffinity for the calling thread (pid 0) within its size.
    let affinity = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            usize::try_from(libc::CPU_COUNT(&set)).unwrap_or(0)
        } else {
            0
        }
    };
    match affinity {
        0 => parallelism,
        n => n.min(parallelism),
    }
}

/// What [`run_threads`] measured.
pub(crate) struct ThreadsRun {
    /// Each producer's figures.
    pub(crate) per_producer: Vec<ProducerStats>,
    /// The consumer's, if there was one.
    pub(crate) consumed: Option<Consumed>,
    /// Wall time from the start signal to the last producer's end.
    pub(crate) elapsed: Duration,
    /// Whether `stop` ended the run before `config.duration`.
    pub(crate) stopped: bool,
}

/// Starts the consumer (unless disabled) and the producers, each pinned to
/// a CPU below `cpus`, runs them for `config.duration` or until `stop`
/// says so (looked at every 5 ms), and stops them. Refused scheduling
/// requests are pushed to `warnings`.
pub(crate) fn run_threads(
    config: &HammerConfig,
    ring: &RingBuffer<AnyClock>,
    cpus: usize,
    warnings: &Mutex<Vec<String>>,
    stop: &dyn Fn() -> bool,
) -> Result<ThreadsRun, HammerError> {
    let running = AtomicBool::new(true);
    let producers_done = AtomicBool::new(false);
    // Producers wait for `go`, not a barrier, so that a thread that fails
    // to start can release the ones already waiting.
    let go = AtomicBool::new(false);
    let ready = AtomicUsize::new(0);
    let warn = |w: Result<(), sched::SchedError>| {
        if let Err(e) = w {
            warnings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(e.to_string());
        }
    };

    std::thread::scope(|s| {
        let mut failed = None;
        let consumer = if config.disable_reader {
            None
        } else {
            std::thread::Builder::new()
                .name("consumer".into())
                .spawn_scoped(s, || {
                    warn(sched::set_nice(config.consumer_nice));
                    warn(sched::set_fifo(config.consumer_fifo));
                    consume(ring, config.read_by, config.consumer, &producers_done)
                })
                .map_err(|source| {
                    failed = Some(HammerError::Spawn {
                        role: "consumer",
                        source,
                    })
                })
                .ok()
        };
        // Each producer wakes a sleeping consumer itself, as the kernel's.
        let waker = consumer
            .as_ref()
            .filter(|_| config.consumer == ConsumerKind::Sleep)
            .map(|c| Waker {
                consumer: c.thread().clone(),
                interval: config.wakeup_interval,
            });
        let mut handles = Vec::with_capacity(config.producers);
        for p in 0..config.producers {
            if failed.is_some() {
                break;
            }
            let (running, go, ready) = (&running, &go, &ready);
            let waker = waker.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("producer-{p}"))
                .spawn_scoped(s, move || {
                    let cpu = p % cpus;
                    warn(sched::pin_to_cpu(cpu));
                    warn(sched::set_nice(config.producer_nice));
                    warn(sched::set_fifo(config.producer_fifo));
                    // Release: the main thread times the run from when
                    // every producer is set up.
                    ready.fetch_add(1, Ordering::Release);
                    // Acquire: pairs with the Release that starts the run.
                    while !go.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    produce(
                        ring,
                        cpu,
                        p as u16,
                        config.write_iteration,
                        (running, config.duration),
                        waker.as_ref(),
                    )
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(source) => {
                    failed = Some(HammerError::Spawn {
                        role: "producer",
                        source,
                    })
                }
            }
        }
        if failed.is_some() {
            // Release whoever started: they see `running` false at once.
            running.store(false, Ordering::Relaxed);
        } else {
            // Acquire: pairs with each producer's Release above.
            while ready.load(Ordering::Acquire) < handles.len() {
                std::thread::yield_now();
            }
        }
        // Release: the producers' setup above happens before they run.
        go.store(true, Ordering::Release);
        let t0 = Instant::now();
        let mut stopped = false;
        while failed.is_none() && t0.elapsed() < config.duration {
            if stop() {
                stopped = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5).min(config.duration));
        }
        running.store(false, Ordering::Relaxed);
        let per_producer: Vec<ProducerStats> = handles
            .into_iter()
            .enumerate()
            .map(|(p, h)| {
                h.join().unwrap_or_else(|_| ProducerStats {
                    cpu: p % cpus,
                    ..ProducerStats::default()
                })
            })
            .collect();
        let elapsed = t0.elapsed();
        producers_done.store(true, Ordering::Release);
        // The last wake-up: a sleeping consumer sees `done` and stops.
        let consumed = consumer.map(|c| {
            c.thread().unpark();
            c.join().unwrap_or_default()
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(ThreadsRun {
                per_producer,
                consumed,
                elapsed,
                stopped,
            }),
        }
    })
}

/// A producer's way of waking a sleeping consumer: the consumer's thread
/// and the batches between two wake-ups.
#[derive(Clone)]
pub(crate) struct Waker {
    pub(crate) consumer: Thread,
    pub(crate) interval: u32,
}

/// One producer: batches of `batch` events, then a look at the clock (it
/// stops itself when `run` is over, as the kernel's does, so that a
/// SCHED_FIFO producer is not left to a stopper that cannot get a CPU) and
/// at the stop flag,
/// and every `waker.interval` batches a wake-up of the consumer, as the
/// kernel's producer (`cnt % wakeup_interval`). Its CPU and wall time are
/// read by this thread itself, from its first batch to its last.
pub(crate) fn produce(
    ring: &RingBuffer<AnyClock>,
    cpu: usize,
    id: u16,
    batch: u32,
    (running, run): (&AtomicBool, Duration),
    waker: Option<&Waker>,
) -> ProducerStats {
    let (mut hit, mut missed, mut seq) = (0u64, 0u64, 0u32);
    let (mut batches, mut wakeups) = (0u32, 0u64);
    let cpu0 = thread_cpu_ns();
    let wall0 = Instant::now();
    let until = wall0 + run;
    // Relaxed: the flag only says "stop soon".
    while running.load(Ordering::Relaxed) && Instant::now() < until {
        for _ in 0..batch {
            match ring.cpu_writer(cpu).reserve(PAYLOAD) {
                Ok(mut r) => {
                    r.write(&payload(id, seq));
                    r.commit();
                    hit += 1;
                }
                Err(_) => missed += 1,
            }
            seq = seq.wrapping_add(1);
        }
        if let Some(w) = waker {
            batches += 1;
            if batches >= w.interval {
                batches = 0;
                // Never blocks: a swap of the consumer's park state, and a
                // futex wake only when it is asleep.
                w.consumer.unpark();
                wakeups += 1;
            }
        }
    }
    let cpu_time_ns = thread_cpu_ns().saturating_sub(cpu0);
    let wall_ns = u64::try_from(wall0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    ProducerStats {
        cpu,
        hit,
        missed,
        wakeups,
        wall_ns,
        cpu_time_ns,
        cpu_share: if wall_ns > 0 {
            cpu_time_ns as f64 / wall_ns as f64
        } else {
            0.0
        },
        ns_per_entry_cpu: if hit > 0 {
            cpu_time_ns as f64 / hit as f64
        } else {
            0.0
        },
    }
}

/// What the consumer did.
#[derive(Debug, Default)]
pub(crate) struct Consumed {
    pub(crate) read: u64,
    pub(crate) bad: u64,
    /// Times it found the buffers empty and parked (sleep) or yielded (spin).
    pub(crate) waits: u64,
    pub(crate) cpu_time_ns: u64,
}

/// The consumer: passes over every CPU's buffer until one finds nothing,
/// then waits, until the producers are done; checks every payload. `Sleep`
/// parks until a producer (or the end of the run) unparks it, as the
/// kernel's consumer schedules away until `wake_up_process`; `Spin` yields
/// and looks again at once.
pub(crate) fn consume(
    ring: &RingBuffer<AnyClock>,
    by: ReadBy,
    kind: ConsumerKind,
    done: &AtomicBool,
) -> Consumed {
    let cpu0 = thread_cpu_ns();
    let (mut n, mut wrong, mut waits) = (0u64, 0u64, 0u64);
    let mut pass = 0u64;
    // Acquire: pairs with the Release after the producers joined.
    while !done.load(Ordering::Acquire) {
        let mut got = false;
        pass += 1;
        let this_pass = match by {
            ReadBy::Alternate if pass % 2 == 0 => ReadBy::Pages,
            ReadBy::Alternate => ReadBy::Events,
            other => other,
        };
        for b in ring.cpu_buffers() {
            match this_pass {
                ReadBy::Events => {
                    while let Some(ok) = b.read_event_with(|_, p, _| payload_ok(p)) {
                        got = true;
                        n += 1;
                        wrong += u64::from(!ok);
                    }
                }
                ReadBy::Pages | ReadBy::Alternate => {
                    while let Some(page) = b.read_page() {
                        got = true;
                        for (_, p) in page.events() {
                            n += 1;
                            wrong += u64::from(!payload_ok(p));
                        }
                    }
                }
            }
        }
        if got {
            continue;
        }
        waits += 1;
        match kind {
            ConsumerKind::Spin => std::thread::yield_now(),
            // An unpark that came after the look at `done` above (from a
            // producer, or from the main thread once `done` is set) is kept
            // as park's token, so park returns at once and none is lost.
            // Spurious returns only cost a pass.
            ConsumerKind::Sleep => std::thread::park(),
        }
    }
    Consumed {
        read: n,
        bad: wrong,
        waits,
        cpu_time_ns: thread_cpu_ns().saturating_sub(cpu0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace::export::{Decoder, TraceMetadata};

    #[test]
    fn the_metadata_layout_decodes_the_payload_the_producers_write() {
        let meta = TraceMetadata::new(Vec::new()).with_untagged(crate::hammer::event_layout());
        let decoder = Decoder::new(&meta);
        let p = payload(3, 0x0102_0304);
        assert!(payload_ok(&p));
        let check = (3u32 ^ 0x0102_0304).wrapping_mul(0x9E37_79B1);
        assert_eq!(
            decoder.decode(&p).text(),
            format!("producer=3 seq=16909060 check={check:#x}")
        );
    }
}
