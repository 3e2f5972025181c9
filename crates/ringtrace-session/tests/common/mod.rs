//! Helpers shared by the session tests: real pages from a ring in memory,
//! a process described by its ring, and what a page holds.
#![allow(dead_code)]

use ringtrace_clock::Counter;
use ringtrace_ring::format::{PageHeader, Record, RecordCursor, PAGE_HEADER};
use ringtrace_ring::{PageBuf, RingBuffer, RingConfig};
use ringtrace_session::ProcessInfo;

/// A ring of `cpus` CPUs with 256-byte pages, in memory.
pub fn ring(cpus: usize) -> RingBuffer<Counter> {
    RingBuffer::new(
        RingConfig::default()
            .cpus(cpus)
            .page_size(256)
            .per_cpu_bytes(64 * 1024),
        Counter::new(),
    )
    .unwrap()
}

/// Writes `payloads` on `cpu`, then drains every page of it (flushing the
/// open one).
pub fn pages(ring: &RingBuffer<Counter>, cpu: usize, payloads: &[Vec<u8>]) -> Vec<PageBuf> {
    for p in payloads {
        ring.cpu_writer(cpu).write(p).unwrap();
    }
    drain(ring, cpu)
}

/// Every page of `cpu` that can be read now, the open one flushed.
pub fn drain(ring: &RingBuffer<Counter>, cpu: usize) -> Vec<PageBuf> {
    ring.flush();
    let b = ring.cpu_buffer(cpu).unwrap();
    std::iter::from_fn(|| b.read_page()).collect()
}

/// The (timestamp, payload) of every unread event of `pages`.
pub fn events_of(pages: &[PageBuf]) -> Vec<(u64, Vec<u8>)> {
    pages
        .iter()
        .flat_map(|p| {
            p.events()
                .map(|(ts, b)| (ts, b.to_vec()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `n` payloads of 4 to 40 bytes, each naming `tag` and its number.
pub fn payloads(tag: u8, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut p = vec![tag, (i % 251) as u8, (i / 251) as u8];
            p.resize(4 + (i % 10) * 4, tag ^ 0x5a);
            p
        })
        .collect()
}

/// A process described by `ring`'s header.
pub fn info(ring: &RingBuffer<Counter>, pid: u32, start: u64) -> ProcessInfo {
    ProcessInfo {
        pid,
        start,
        ppid: 1,
        comm: format!("proc{pid}"),
        header: ring.snapshot(Vec::new()).header,
        metadata: format!("{{\"pid\":{pid}}}").into_bytes(),
    }
}

/// A whole page split in two fragments after its `k`th record, as a
/// drainer reading a page still being written hands them over: the
/// second fragment's header has the time of the record before it.
pub fn split(page: &[u8], k: usize) -> (Vec<u8>, Vec<u8>) {
    let header = PageHeader::parse(page).unwrap();
    let end = if header.commit == 0 {
        page.len()
    } else {
        header.commit as usize
    };
    let mut cursor = RecordCursor::new(page).unwrap();
    let mut passed = 0;
    while passed < k {
        match cursor.next() {
            Some(Ok(Record::Event { .. })) => passed += 1,
            Some(Ok(_)) => {}
            _ => break,
        }
    }
    let at = cursor.position();
    let mut first = page[..at].to_vec();
    PageHeader {
        commit: at as u32,
        events: k as u32,
        ..header
    }
    .write_to(&mut first);
    let mut second = vec![0u8; PAGE_HEADER];
    second.extend_from_slice(&page[at..end]);
    PageHeader {
        base_ts: cursor.timestamp(),
        commit: (PAGE_HEADER + end - at) as u32,
        events: header.events.saturating_sub(k as u32),
        skip: 0,
        lost: 0,
        ..header
    }
    .write_to(&mut second);
    (first, second)
}

/// Mode bits of `path`.
pub fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Every path under `dir`, recursively.
pub fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out.sort();
    out
}

#[allow(unused_imports)] // not every test binary that includes this uses them
pub use ringtrace_testkit::{mount_tmpfs, umount};
