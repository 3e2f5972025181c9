//! Chunks rotate by size and by age, and `max_size` keeps the newest.

mod common;

use common::*;
use ringtrace_session::{ProcessExit, Session, SessionOptions, SessionWriter};
use ringtrace_testkit::TempDir;
use std::path::Path;
use std::time::Duration;

fn chunks(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(ext))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_chunk_finishes_once_its_entries_reach_rotate_size() {
    let tmp = TempDir::new("session-rotate-size");
    let dir = tmp.path().join("s");
    let session = SessionWriter::create(&dir, SessionOptions::default().rotate_size(1000)).unwrap();
    let ring = ring(1);
    let mut process = session.add_process(info(&ring, 1, 2)).unwrap();
    let pages = pages(&ring, 0, &payloads(1, 120));
    // Each entry is a 256-byte page and its 16-byte prefix: the fourth
    // reaches 1000 bytes.
    for (i, p) in pages.iter().enumerate().take(8) {
        process.append_page(0, &p.bytes).unwrap();
        let finished = chunks(&dir.join("1-2/cpu0"), ".chunk").len();
        assert_eq!(finished, (i + 1) / 4, "after page {i}");
    }
    assert_eq!(
        chunks(&dir.join("1-2/cpu0"), ".chunk"),
        ["00000000.chunk", "00000001.chunk"]
    );
    assert!(chunks(&dir.join("1-2/cpu0"), ".open").is_empty());
    process.append_page(0, &pages[8].bytes).unwrap();
    assert_eq!(chunks(&dir.join("1-2/cpu0"), ".open"), ["00000002.open"]);
    // The session reads while it is written, open chunk included.
    let read = Session::open(&dir).unwrap();
    assert!(read.live() && !read.finished());
    let got: Vec<_> = read.recoveries()[0].cpus[0]
        .events
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect();
    assert_eq!(got, events_of(&pages[..9]));
    let summary = process.finish(ProcessExit::Exited(0)).unwrap();
    assert_eq!(summary.totals.chunks, 3);
    session.finish().unwrap();
}

#[test]
fn a_chunk_finishes_once_open_rotate_time_on_append_or_tick() {
    let tmp = TempDir::new("session-rotate-time");
    let dir = tmp.path().join("s");
    let options = SessionOptions::default().rotate_time(Some(Duration::from_millis(50)));
    let session = SessionWriter::create(&dir, options).unwrap();
    let ring = ring(2);
    let mut process = session.add_process(info(&ring, 1, 2)).unwrap();
    let p0 = pages(&ring, 0, &payloads(1, 3));
    let p1 = pages(&ring, 1, &payloads(2, 3));
    process.append_page(0, &p0[0].bytes).unwrap();
    process.append_page(1, &p1[0].bytes).unwrap();
    process.tick().unwrap();
    assert!(
        chunks(&dir.join("1-2/cpu0"), ".chunk").is_empty(),
        "too young"
    );
    std::thread::sleep(Duration::from_millis(60));
    process.tick().unwrap();
    assert_eq!(chunks(&dir.join("1-2/cpu0"), ".chunk"), ["00000000.chunk"]);
    assert_eq!(chunks(&dir.join("1-2/cpu1"), ".chunk"), ["00000000.chunk"]);
    // On append: the chunk that got old finishes with the page appended.
    let more = pages(&ring, 0, &payloads(3, 3));
    process.append_page(0, &more[0].bytes).unwrap();
    assert_eq!(chunks(&dir.join("1-2/cpu0"), ".open"), ["00000001.open"]);
    std::thread::sleep(Duration::from_millis(60));
    let again = pages(&ring, 0, &payloads(4, 3));
    process.append_page(0, &again[0].bytes).unwrap();
    assert_eq!(
        chunks(&dir.join("1-2/cpu0"), ".chunk"),
        ["00000000.chunk", "00000001.chunk"]
    );
    process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    let read = Session::open(&dir).unwrap();
    assert_eq!(read.recoveries()[0].cpus[0].events.len(), 9);
    assert!(!read.has_problems());
}

/// A session in a new temporary directory (`name`) whose chunks finish
/// at about 8 KiB uncompressed, 64 KiB of them kept.
fn kept_to_64k(name: &str) -> (TempDir, std::path::PathBuf, SessionWriter) {
    let tmp = TempDir::new(name);
    let dir = tmp.path().join("s");
    let options = SessionOptions::default()
        .rotate_size(8 * 1024)
        .max_size(Some(64 * 1024))
        .compression(ringtrace_session::Compression::None);
    let session = SessionWriter::create(&dir, options).unwrap();
    (tmp, dir, session)
}

#[test]
fn max_size_deletes_the_oldest_chunks_and_counts_what_they_held() {
    let (_tmp, dir, session) = kept_to_64k("session-max-size");
    let ring = ring(2);
    let mut process = session.add_process(info(&ring, 1, 2)).unwrap();
    let mut all = [Vec::new(), Vec::new()];
    // Interleaved CPUs, time increasing: 2 x 20 chunks of 30 pages.
    for round in 0..40u8 {
        let cpu = usize::from(round % 2);
        let batch = pages(&ring, cpu, &payloads(round, 180));
        for p in &batch {
            process.append_page(cpu, &p.bytes).unwrap();
        }
        all[cpu].extend(batch);
    }
    let summary = process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    let rotated = summary.totals.rotated_out;
    assert!(rotated.chunks > 0, "{summary:?}");
    let on_disk: u64 = walk(&dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "chunk"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(on_disk <= 64 * 1024, "{on_disk} bytes kept");
    let read = Session::open(&dir).unwrap();
    assert_eq!(read.rotated_out(), rotated);
    assert!(
        !read.has_problems(),
        "{:?}",
        read.recoveries()[0]
            .cpus
            .iter()
            .map(|c| &c.problems)
            .collect::<Vec<_>>()
    );
    let recovery = &read.recoveries()[0];
    let mut kept_events = 0;
    for (cpu, written) in all.iter().enumerate() {
        let got: Vec<_> = recovery.cpus[cpu]
            .events
            .iter()
            .map(|e| (e.ts, e.payload.clone()))
            .collect();
        let want = events_of(written);
        // The newest: a tail of what was written.
        assert!(want.ends_with(&got) && !got.is_empty(), "CPU {cpu}");
        kept_events += got.len() as u64;
    }
    assert_eq!(kept_events + rotated.events, 40 * 180);
    assert!(rotated.pages < summary.totals.pages);
    // Oldest first across CPUs: what is left of each CPU starts late.
    for cpu in 0..2 {
        assert!(chunks(&dir.join(format!("1-2/cpu{cpu}")), ".chunk")[0] != "00000000.chunk");
    }
}

/// A drainer writes a round's pages of a CPU together; the chunks it
/// makes are byte for byte those that appending the same pages one by one
/// makes (each rotating where a single append would).
#[test]
fn a_drained_round_makes_the_chunks_page_by_page_appends_make() {
    let tmp = TempDir::new("session-batch");
    let fill = |ring: &ringtrace_ring::RingBuffer<ringtrace_clock::Counter>| {
        for p in payloads(3, 150) {
            ring.cpu_writer(0).write(&p).unwrap();
        }
        ring.flush();
    };
    let options = SessionOptions::default().rotate_size(1000);
    // Drained in one round: one batch.
    let batched = tmp.path().join("batched");
    let (ring_a, ring_b) = (ring(1), ring(1));
    fill(&ring_a);
    fill(&ring_b);
    let session = SessionWriter::create(&batched, options.clone()).unwrap();
    let mut process = session.add_process(info(&ring_a, 1, 2)).unwrap();
    let mut drainer = ringtrace_session::Drainer::new(1);
    let drained = drainer
        .round(
            ring_a.cpu_buffers(),
            &mut Vec::new(),
            &mut process,
            |_, _| {},
        )
        .unwrap();
    assert!(drained.pages > 4, "{drained:?}");
    process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    // The same pages, one append each.
    let single = tmp.path().join("single");
    let session = SessionWriter::create(&single, options).unwrap();
    let mut process = session.add_process(info(&ring_b, 1, 2)).unwrap();
    let b = ring_b.cpu_buffer(0).unwrap();
    let mut pages = 0;
    while let Some(page) = b.read_committed() {
        let commit = page.header().commit as usize;
        process.append_page(0, &page.bytes[..commit]).unwrap();
        pages += 1;
    }
    assert_eq!(pages, drained.pages);
    // The round's fill sample, after its pages.
    let fill = Session::open(&batched).unwrap().recoveries()[0].cpus[0]
        .fill
        .clone();
    assert_eq!(fill.len(), 1, "one round, one sample: {fill:?}");
    assert_eq!(u64::from(fill[0].pages), pages);
    let newest = Session::open(&batched).unwrap().recoveries()[0].cpus[0]
        .events
        .last()
        .map(|e| e.ts);
    assert_eq!(Some(fill[0].ts), newest, "at the newest event drained");
    process
        .append_fill(0, fill[0].ts, fill[0].pages, fill[0].capacity)
        .unwrap();
    process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    let names = chunks(&batched.join("1-2/cpu0"), ".chunk");
    assert!(names.len() > 1, "{names:?}");
    assert_eq!(names, chunks(&single.join("1-2/cpu0"), ".chunk"));
    for name in &names {
        let a = std::fs::read(batched.join("1-2/cpu0").join(name)).unwrap();
        let b = std::fs::read(single.join("1-2/cpu0").join(name)).unwrap();
        assert!(a == b, "{name} differs");
    }
    let read = Session::open(&batched).unwrap();
    assert_eq!(
        read.recoveries()[0].cpus[0].events.len(),
        150,
        "every event reads back"
    );
}

/// Losses recorded in chunks that `max_size` deletes are still counted:
/// by cause in the index, and by every reader before the first event
/// kept (or, for a CPU with nothing kept, as its only notes).
#[test]
fn max_size_keeps_counting_the_losses_of_the_chunks_it_deletes() {
    use ringtrace_session::LossCause;
    let (_tmp, dir, session) = kept_to_64k("session-max-size-losses");
    let ring = ring(2);
    let mut process = session.add_process(info(&ring, 1, 2)).unwrap();
    // CPU 1 writes a loss and a few chunks first, then only CPU 0 goes
    // on, with a loss in each of its early rounds: every chunk of CPU 1
    // and CPU 0's oldest are deleted.
    process.append_loss(1, 1, 7, LossCause::Refused).unwrap();
    let cpu1 = dir.join("1-2/cpu1");
    // Pages until two chunks are finished and none is open (the next is
    // made by the next append, which never comes).
    'cpu1: for round in 0..10 {
        for p in pages(&ring, 1, &payloads(round, 60)) {
            process.append_page(1, &p.bytes).unwrap();
            if chunks(&cpu1, ".chunk").len() == 2 && chunks(&cpu1, ".open").is_empty() {
                break 'cpu1;
            }
        }
    }
    assert_eq!(chunks(&cpu1, ".chunk").len(), 2);
    for round in 10..40u8 {
        let batch = pages(&ring, 0, &payloads(round, 180));
        if round < 19 {
            let ts = events_of(&batch)[0].0.saturating_sub(1);
            process
                .append_loss(0, ts, 3, LossCause::BlockedTooLong)
                .unwrap();
        }
        for p in &batch {
            process.append_page(0, &p.bytes).unwrap();
        }
    }
    let summary = process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    let rotated = summary.totals.rotated_out;
    assert_eq!(rotated.lost(LossCause::Refused), 7, "{rotated:?}");
    assert!(rotated.lost(LossCause::BlockedTooLong) > 0, "{rotated:?}");
    assert!(chunks(&dir.join("1-2/cpu1"), ".chunk").is_empty());
    for streamed in [false, true] {
        let read = if streamed {
            Session::open_streamed(&dir).unwrap()
        } else {
            Session::open(&dir).unwrap()
        };
        assert_eq!(read.rotated_out(), rotated);
        let recovery = &read.recoveries()[0];
        // CPU 1: nothing kept, its loss still there.
        let notes1: Vec<_> = recovery.cpus[1]
            .loss_notes
            .iter()
            .map(|n| (n.count, n.why.clone()))
            .collect();
        assert_eq!(notes1, [(7, "refused".to_owned())], "streamed: {streamed}");
        // CPU 0: every blocked loss, deleted or kept, is counted once.
        let (notes, lost_before): (u64, u64) = if streamed {
            use ringtrace_ring::file::EventSource;
            let (mut n, mut l) = (0, 0);
            for b in read.batches(0, 0) {
                n += b.loss_notes.iter().map(|n| n.count).sum::<u64>();
                l += b.events.iter().map(|e| e.lost_before).sum::<u64>();
            }
            (n, l)
        } else {
            let c = &recovery.cpus[0];
            (
                c.loss_notes.iter().map(|n| n.count).sum(),
                c.events.iter().map(|e| e.lost_before).sum(),
            )
        };
        assert_eq!(notes, 9 * 3, "streamed: {streamed}");
        assert_eq!(lost_before, 9 * 3, "streamed: {streamed}");
        if !streamed {
            let listed: u64 = read
                .losses()
                .iter()
                .filter(|l| l.cause == LossCause::BlockedTooLong)
                .map(|l| l.count)
                .sum();
            assert_eq!(listed, 9 * 3);
            assert_eq!(
                summary.totals.lost(LossCause::BlockedTooLong),
                9 * 3,
                "the index counts each loss once"
            );
        }
    }
}
