//! The reserve fast path and the general loop must place and stamp every
//! event alike, on every clock sequence: readings that step back, repeat,
//! jump past a record header's 26 bits or a TIME_EXTEND's 58, or wrap past
//! `u64::MAX`. A wrap once slipped through the fast path as a small step
//! forward, and time went back.

use crate::config::{Mode, RingConfig};
use crate::cpu_buffer::CpuBuffer;
use crate::write::reserve;
use proptest::prelude::*;
use ringtrace_clock::{Clock, ClockInfo, Guarantee, TickConversion};
use std::sync::atomic::{AtomicU64, Ordering};

/// A clock that reads whatever the test last set: the fast path and its
/// fallback read it twice for one event and must see the same value.
#[derive(Debug, Default)]
struct SetClock(AtomicU64);

impl Clock for SetClock {
    fn read(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "set".into(),
            frequency_hz: Some(1_000_000_000),
            ticks_are_ns: true,
            guarantee: Guarantee::None,
            precision_ns: Some(1.0),
            conversion: Some(TickConversion::NANOSECONDS),
        }
    }
}

/// The next clock reading, from the last one.
#[derive(Debug, Clone)]
enum Step {
    Forward(u64),
    Back(u64),
    Jump(u64),
    At(u64),
}

impl Step {
    /// The reading after `now`.
    fn from(&self, now: u64) -> u64 {
        match *self {
            Step::Forward(d) | Step::Jump(d) => now.wrapping_add(d),
            Step::Back(d) => now.wrapping_sub(d),
            Step::At(t) => t,
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u64..200).prop_map(Step::Forward),
        1 => (0u64..200).prop_map(Step::Back),
        1 => prop_oneof![
            Just(1u64 << 27),
            Just((1u64 << 27) - 1),
            Just(1u64 << 59),
            Just((1u64 << 59) + 1),
            any::<u64>()
        ]
        .prop_map(Step::Jump),
        1 => prop_oneof![
            Just(u64::MAX),
            Just(u64::MAX - 1),
            (0u64..1000).prop_map(|d| u64::MAX - d),
            0u64..1000
        ]
        .prop_map(Step::At),
    ]
}

fn buffer() -> CpuBuffer {
    let geometry = RingConfig::default()
        .cpus(1)
        .page_size(256)
        .per_cpu_bytes(256 * 4)
        .mode(Mode::Overwrite)
        .quarantine_pages(1)
        .validate()
        .unwrap();
    CpuBuffer::anonymous(0, geometry, false).unwrap()
}

/// Every page's bytes and the events' times, as a reader sees them.
fn drain(b: &CpuBuffer) -> (Vec<Vec<u8>>, Vec<u64>) {
    b.flush();
    let mut pages = Vec::new();
    let mut times = Vec::new();
    while let Some(page) = b.read_page() {
        times.extend(page.events().map(|(ts, _)| ts));
        pages.push(page.bytes);
    }
    (pages, times)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 512 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn fast_path_and_general_loop_agree_on_every_clock_sequence(
        steps in prop::collection::vec((step(), 0usize..30), 1..if cfg!(miri) { 12 } else { 60 }),
    ) {
        let (fast, general) = (buffer(), buffer());
        let clock = SetClock::default();
        let mut now = 0u64;
        let mut last = 0u64;
        for (i, (step, len)) in steps.into_iter().enumerate() {
            now = step.from(now);
            clock.0.store(now, Ordering::Relaxed);
            let payload = vec![i as u8; len];
            let a = reserve::reserve(fast.shared(), &clock, len);
            let b = reserve::reserve_general(general.shared(), &clock, len);
            match (a, b) {
                (Ok(mut a), Ok(mut b)) => {
                    prop_assert_eq!(a.timestamp(), b.timestamp(), "event {} at clock {}", i, now);
                    prop_assert!(a.timestamp() >= last, "time went back at event {}", i);
                    last = a.timestamp();
                    a.write(&payload);
                    b.write(&payload);
                    a.commit();
                    b.commit();
                }
                (a, b) => prop_assert_eq!(a.err(), b.err(), "event {}", i),
            }
            prop_assert_eq!(fast.stats(), general.stats(), "after event {}", i);
        }
        let (fast_pages, fast_times) = drain(&fast);
        let (general_pages, general_times) = drain(&general);
        prop_assert!(fast_times.windows(2).all(|w| w[0] <= w[1]), "{:?}", fast_times);
        prop_assert_eq!(fast_times, general_times);
        prop_assert_eq!(fast_pages, general_pages);
    }
}

/// The buffer of the CPU this thread is pinned to, on the rseq path; `None`
/// where the rseq path or pinning is unavailable.
#[cfg(ringtrace_rseq)]
fn rseq_buffer_here() -> Option<CpuBuffer> {
    let crate::rseq::Resolved::Rseq(offset) =
        crate::rseq::resolve(crate::WritePath::Rseq, 1).ok()?
    else {
        return None;
    };
    let cpu = crate::cpu::current_cpu();
    let pinned = crate::cpu::pin_for_test(cpu);
    if !pinned {
        return None;
    }
    let geometry = RingConfig::default()
        .cpus(cpu + 1)
        .page_size(256)
        .per_cpu_bytes(256 * 4)
        .mode(Mode::Overwrite)
        .quarantine_pages(1)
        .validate()
        .unwrap();
    let mut b = CpuBuffer::anonymous(cpu, geometry, false).unwrap();
    b.shared_mut()
        .path_mut()
        .choose(crate::rseq::Resolved::Rseq(offset));
    Some(b)
}

#[cfg(ringtrace_rseq)]
proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The whole-event path (`write::whole::write_whole`), with the general
    /// way behind it where it misses, places, stamps and encodes every
    /// event as the general loop does, on every clock sequence; and it
    /// does take the events it should (a short event in the open page
    /// with the clock not behind), so that a whole path that always missed
    /// would fail here.
    #[test]
    fn whole_event_path_and_general_loop_agree_on_every_clock_sequence(
        steps in prop::collection::vec((step(), 0usize..10), 1..60),
    ) {
        let Some(whole) = rseq_buffer_here() else {
            eprintln!("skipped: {:?}", crate::rseq::unavailable());
            return Ok(());
        };
        let general = buffer();
        let clock = SetClock::default();
        let (mut now, mut last, mut taken, mut eligible) = (0u64, 0u64, 0u64, 0u64);
        for (i, (step, words)) in steps.into_iter().enumerate() {
            now = step.from(now);
            clock.0.store(now, Ordering::Relaxed);
            // Whole words mostly (the short encoding), and now and then a
            // long event: an odd length, or none.
            let len = match words {
                9 => 7,
                8 => 0,
                _ => words * 4,
            };
            let payload: Vec<u8> = (0..len).map(|j| (i * 31 + j) as u8).collect();
            let (write, last_ts) = whole.shared().hot().state.load(Ordering::Relaxed);
            let pos = write % 256;
            let fits = pos != 0
                && pos as usize + crate::format::event_size(len) <= 256
                && now >= last_ts
                && now - last_ts <= crate::format::MAX_DELTA;
            let a = match crate::write::whole::write_whole(whole.shared(), whole.shared().path().line(), &clock, &payload) {
                Ok(ts) => {
                    taken += 1;
                    Ok(ts)
                }
                Err(_) => reserve::reserve(whole.shared(), &clock, len).map(|mut r| {
                    r.write(&payload);
                    let ts = r.timestamp();
                    r.commit();
                    ts
                }),
            };
            // Preemption aborts a section now and then: the event is
            // still written, the general way.
            eligible += u64::from(fits);
            let b = reserve::reserve_general(general.shared(), &clock, len).map(|mut r| {
                r.write(&payload);
                let ts = r.timestamp();
                r.commit();
                ts
            });
            prop_assert_eq!(a, b, "event {} at clock {}", i, now);
            if let Ok(ts) = a {
                prop_assert!(ts >= last, "time went back at event {}", i);
                last = ts;
            }
            prop_assert_eq!(whole.stats(), general.stats(), "after event {}", i);
        }
        prop_assert!(eligible == 0 || taken > 0, "the whole path took none of {} events it should have", eligible);
        let (whole_pages, whole_times) = drain(&whole);
        let (general_pages, general_times) = drain(&general);
        prop_assert_eq!(whole_times, general_times);
        prop_assert_eq!(whole_pages, general_pages);
    }
}
