//! The per-CPU word updates of the rseq path, seen through the ring:
//! locked sections under the remote flag, remote updates, shared mode and
//! the hit counts.

use crate::{RingBuffer, RingConfig, WritePath};
use ringtrace_clock::Counter;

use crate::cpu::pin_for_test as pin;

fn rseq_ring() -> Option<RingBuffer<Counter>> {
    let config = RingConfig::default()
        .page_size(256)
        .per_cpu_bytes(64 * 1024)
        .write_path(WritePath::Rseq);
    RingBuffer::new(config, Counter::new()).ok()
}

#[test]
fn with_the_remote_flag_up_writers_on_the_cpu_use_locked_sections_not_system_calls() {
    let Some(ring) = rseq_ring() else {
        eprintln!("skipped: {:?}", crate::rseq::unavailable());
        return;
    };
    let cpu = crate::cpu::current_cpu();
    if !pin(cpu) {
        return;
    }
    let b = ring.cpu_buffer(cpu).unwrap();
    b.shared().path().hold_flag(true);
    // Enough events to cross pages: the slow path's CAS and commits too.
    for i in 0..2_000u32 {
        ring.cpu_writer(cpu).write(&i.to_le_bytes()).unwrap();
    }
    b.shared().path().hold_flag(false);
    assert_eq!(
        b.remote_updates(),
        0,
        "a flagged section made a system call"
    );
    for i in 0..2_000u32 {
        ring.cpu_writer(cpu).write(&i.to_le_bytes()).unwrap();
    }
    assert_eq!(b.remote_updates(), 0);
    let s = ring.stats();
    assert_eq!(s.hit, 4_000);
    let mut n = 0u32;
    while let Some(e) = b.read_event() {
        assert_eq!(e.payload, (n % 2_000).to_le_bytes());
        n += 1;
    }
    assert_eq!(u64::from(n) + ring.stats().overrun, 4_000);
}

/// An rseq ring, this thread pinned to its CPU, and another CPU's
/// number; `None` where that cannot be had.
fn pinned_beside_another_cpu() -> Option<(RingBuffer<Counter>, usize)> {
    let ring = rseq_ring()?;
    let cpu = crate::cpu::current_cpu();
    if ring.cpus() < 2 || !pin(cpu) {
        return None;
    }
    let other = (cpu + 1) % ring.cpus();
    Some((ring, other))
}

#[test]
fn writes_to_another_cpus_buffer_are_remote_updates_and_land_exactly() {
    let Some((ring, other)) = pinned_beside_another_cpu() else {
        return;
    };
    for i in 0..100u32 {
        ring.cpu_writer(other).write(&i.to_le_bytes()).unwrap();
    }
    let b = ring.cpu_buffer(other).unwrap();
    // Reserve (state), then commit word and hit under one: two each,
    // and a few more as pages open (their headers' commits); the
    // buffer goes shared after 64 with a system call, and the rest
    // make none.
    let all = b.remote_updates() + b.shared_updates();
    assert!((200..220).contains(&all), "{all}");
    assert_eq!(b.shared_mode_entries(), 1);
    assert!(b.remote_updates() < 200, "{}", b.remote_updates());
    assert_eq!(b.stats().hit, 100);
    for i in 0..100u32 {
        assert_eq!(b.read_event().unwrap().payload, i.to_le_bytes());
    }
}

#[test]
fn a_buffer_written_from_another_cpu_often_goes_shared_and_back_when_that_stops() {
    let Some((ring, other)) = pinned_beside_another_cpu() else {
        return;
    };
    let b = ring.cpu_buffer(other).unwrap();
    for i in 0..1_000u32 {
        ring.cpu_writer(other).write(&i.to_le_bytes()).unwrap();
    }
    assert_eq!(b.shared_mode_entries(), 1);
    // Entered after 64 system calls (more only if this thread lost its
    // CPU for the 10 ms window); the rest of the 2,000 updates made
    // none.
    let fenced = b.remote_updates();
    assert!(fenced < 400, "{fenced}");
    assert!(b.shared_updates() > 1_600, "{}", b.shared_updates());
    // The CPU's own writers, with the gate shut, take the locked
    // sections: still exact.
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(pin(other));
            // 256-byte pages of 12-byte events: 17 pages and more
            // over 50 ms with no remote update end shared mode.
            for i in 1_000..1_250u32 {
                ring.cpu_writer(other).write(&i.to_le_bytes()).unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(60));
            for i in 1_250..1_500u32 {
                ring.cpu_writer(other).write(&i.to_le_bytes()).unwrap();
            }
        });
    });
    assert_eq!(b.remote_updates(), fenced, "on the CPU, no system call");
    // Back: a remote write fences again.
    ring.cpu_writer(other)
        .write(&1_500u32.to_le_bytes())
        .unwrap();
    assert!(b.remote_updates() > fenced);
    assert_eq!(b.shared_mode_entries(), 1);
    assert_eq!(b.stats().hit, 1_501);
    let mut next = 0u32;
    while let Some(e) = b.read_event() {
        let i = u32::from_le_bytes(e.payload.try_into().unwrap());
        assert!(i >= next, "{i} after {next}");
        next = i + 1;
    }
    assert_eq!(next, 1_501);
    assert_eq!(b.stats().hit, b.stats().accounted());
}

#[test]
fn commits_on_the_cpu_count_hits_per_page_and_stats_and_recovery_sum_them() {
    let dir = std::env::temp_dir().join(format!("ringtrace-page-hits-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("hits.ring");
    let _ = std::fs::remove_file(&path);
    let config = RingConfig::default()
        .page_size(256)
        .per_cpu_bytes(16 * 1024)
        .write_path(WritePath::Rseq)
        .file(&path);
    let Ok(ring) = RingBuffer::new(config, Counter::new()) else {
        eprintln!("skipped: {:?}", crate::rseq::unavailable());
        return;
    };
    let cpu = crate::cpu::current_cpu();
    if !pin(cpu) {
        return;
    }
    for i in 0..300u32 {
        ring.cpu_writer(cpu).write(&i.to_le_bytes()).unwrap();
    }
    // A dropped reservation ends too: a discard record, and a hit.
    drop(ring.cpu_writer(cpu).reserve(8).unwrap());
    let b = ring.cpu_buffer(cpu).unwrap();
    let on_pages: u64 = b
        .shared()
        .commit_lines()
        .iter()
        .map(|l| l.hits.load(std::sync::atomic::Ordering::Relaxed))
        .sum();
    let in_hot = b
        .shared()
        .hot()
        .hit
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(b.remote_updates(), 0);
    assert_eq!(
        in_hot, 0,
        "a section commit counted its hit in the hot line"
    );
    assert_eq!(on_pages, 301);
    assert_eq!(b.stats().hit, 301);
    drop(ring);
    let rec = crate::file::recover(&path).unwrap();
    assert_eq!(rec.file_stats().hit, 301);
    let _ = std::fs::remove_dir_all(&dir);
}
