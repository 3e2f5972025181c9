//! Pages and losses of two processes on two CPUs, written and read back
//! event for event.

mod common;

use common::*;
use ringtrace_ring::file::WriterState;
use ringtrace_session::{
    Compression, LossCause, ProcessExit, Session, SessionOptions, SessionWriter,
};
use ringtrace_testkit::TempDir;

fn options(compression: Compression) -> SessionOptions {
    SessionOptions::default()
        .compression(compression)
        .rotate_size(2048)
}

fn round_trip(compression: Compression) {
    let tmp = TempDir::new("session-round-trip");
    let dir = tmp.path().join("s");
    let session = SessionWriter::create(&dir, options(compression)).unwrap();
    let mut expected = Vec::new();
    for (pid, tag) in [(100u32, 1u8), (200, 2)] {
        let ring = ring(2);
        let mut process = session.add_process(info(&ring, pid, 7)).unwrap();
        let mut per_cpu = Vec::new();
        for cpu in 0..2 {
            let pages = pages(&ring, cpu, &payloads(tag + 10 * cpu as u8, 60));
            assert!(pages.len() > 3, "several pages: {}", pages.len());
            // A loss before the first page, one between pages.
            process.append_loss(cpu, 1, 5, LossCause::Refused).unwrap();
            for (i, p) in pages.iter().enumerate() {
                if i == 2 {
                    let ts = p.header().base_ts;
                    process
                        .append_loss(cpu, ts, 3, LossCause::BlockedTooLong)
                        .unwrap();
                }
                process.append_page(cpu, &p.bytes).unwrap();
            }
            per_cpu.push(events_of(&pages));
        }
        process.append_metadata_record(b"first record").unwrap();
        process.append_metadata_record(&[9; 300]).unwrap();
        let summary = process.finish(ProcessExit::Exited(3)).unwrap();
        assert_eq!(summary.totals.events, 120);
        assert_eq!(summary.totals.lost(LossCause::Refused), 10);
        assert_eq!(summary.metadata_records, 2);
        assert!(summary.totals.chunks >= 2);
        expected.push((pid, per_cpu));
    }
    let summary = session.finish().unwrap();
    assert_eq!(summary.processes.len(), 2);

    let read = Session::open(&dir).unwrap();
    assert!(read.finished() && !read.live());
    assert!(
        !read.has_problems(),
        "{:#?}",
        read.processes()
            .iter()
            .map(|p| p
                .recovery()
                .cpus
                .iter()
                .map(|c| c.problems.clone())
                .collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    let recoveries = read.recoveries();
    assert_eq!(recoveries.len(), 2);
    for ((pid, per_cpu), (process, recovery)) in expected
        .iter()
        .zip(read.processes().iter().zip(&recoveries))
    {
        assert_eq!(process.pid, *pid);
        assert_eq!(process.comm, format!("proc{pid}"));
        assert_eq!(process.exit, Some(ProcessExit::Exited(3)));
        // Its exit code was seen, its ring not marked exited: it closed
        // its ring before it exited.
        assert_eq!(recovery.writer, WriterState::Closed);
        assert_eq!(
            recovery.metadata.as_deref().unwrap(),
            format!("{{\"pid\":{pid}}}").as_bytes()
        );
        assert_eq!(
            recovery.metadata_records(),
            [b"first record".to_vec(), vec![9; 300]]
        );
        assert_eq!(recovery.cpus.len(), 2);
        for (cpu, want) in per_cpu.iter().enumerate() {
            let got: Vec<(u64, Vec<u8>)> = recovery.cpus[cpu]
                .events
                .iter()
                .map(|e| (e.ts, e.payload.clone()))
                .collect();
            assert_eq!(&got, want, "process {pid} CPU {cpu}");
            let lost: Vec<u64> = recovery.cpus[cpu]
                .events
                .iter()
                .map(|e| e.lost_before)
                .filter(|&l| l > 0)
                .collect();
            assert_eq!(lost, [5, 3], "the losses land on the events after them");
            assert!(recovery.cpus[cpu].events.iter().all(|e| e.cpu == cpu));
            assert_eq!(recovery.cpus[cpu].counts.recovered, 60);
        }
        assert_eq!(process.written_totals.events, 120);
    }
    // Losses: time order, with process and CPU.
    let losses = read.losses();
    assert_eq!(losses.len(), 8);
    assert!(losses.windows(2).all(|w| w[0].ts <= w[1].ts));
    assert_eq!(
        losses
            .iter()
            .filter(|l| l.cause == LossCause::Refused)
            .map(|l| (l.pid, l.cpu))
            .collect::<Vec<_>>(),
        [(100, 0), (100, 1), (200, 0), (200, 1)]
    );
    assert_eq!(read.rotated_out().chunks, 0);
}

#[test]
fn two_processes_on_two_cpus_read_back_event_for_event() {
    round_trip(Compression::None);
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_chunks_read_back_event_for_event() {
    round_trip(Compression::Zstd { level: 3 });
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_chunks_are_smaller_on_repetitive_payloads() {
    let mut sizes = Vec::new();
    for compression in [Compression::None, Compression::Zstd { level: 3 }] {
        let tmp = TempDir::new("session-zstd-size");
        let dir = tmp.path().join("s");
        let session =
            SessionWriter::create(&dir, SessionOptions::default().compression(compression))
                .unwrap();
        let ring = ring(1);
        let mut process = session.add_process(info(&ring, 1, 1)).unwrap();
        for p in pages(&ring, 0, &vec![vec![0xAB; 40]; 200]) {
            process.append_page(0, &p.bytes).unwrap();
        }
        let summary = process.finish(ProcessExit::Exited(0)).unwrap();
        session.finish().unwrap();
        let chunk = dir.join("1-1/cpu0/00000000.chunk");
        sizes.push((
            std::fs::metadata(&chunk).unwrap().len(),
            summary.totals.disk_bytes,
        ));
        let read = Session::open(&dir).unwrap();
        assert_eq!(read.recoveries()[0].cpus[0].events.len(), 200);
    }
    let (raw, zstd) = (sizes[0], sizes[1]);
    assert!(zstd.0 * 4 < raw.0, "zstd {zstd:?} against raw {raw:?}");
    assert_eq!(zstd.0, zstd.1, "disk bytes count the chunk file");
}

#[test]
fn fragments_of_a_page_read_back_as_the_whole_page() {
    let tmp = TempDir::new("session-fragments");
    let dir = tmp.path().join("s");
    let session = SessionWriter::create(&dir, SessionOptions::default()).unwrap();
    let ring = ring(1);
    let pages = pages(&ring, 0, &payloads(3, 6));
    assert_eq!(pages.len(), 1);
    let (a, b) = split(&pages[0].bytes, 4);
    assert!(a.len() < 256 && b.len() < 256);
    let mut process = session.add_process(info(&ring, 5, 5)).unwrap();
    process.append_page(0, &a).unwrap();
    process.append_page(0, &b).unwrap();
    let summary = process.finish(ProcessExit::Running).unwrap();
    assert_eq!((summary.totals.pages, summary.totals.events), (2, 6));
    let read = Session::open(&dir).unwrap();
    let got: Vec<_> = read.recoveries()[0].cpus[0]
        .events
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect();
    assert_eq!(got, events_of(&pages));
    assert_eq!(read.recoveries()[0].writer, WriterState::Live);
    assert!(!read.has_problems());
}

#[test]
fn processes_are_written_from_threads_of_their_own() {
    fn shareable<T: Send + Sync + Clone>(_: &T) {}
    let tmp = TempDir::new("session-threads");
    let dir = tmp.path().join("s");
    let session = SessionWriter::create(&dir, SessionOptions::default().rotate_size(700)).unwrap();
    shareable(&session);
    std::thread::scope(|s| {
        for pid in 1..=4u32 {
            let session = session.clone();
            s.spawn(move || {
                let ring = ring(1);
                let mut process = session.add_process(info(&ring, pid, 0)).unwrap();
                for p in pages(&ring, 0, &payloads(pid as u8, 50)) {
                    process.append_page(0, &p.bytes).unwrap();
                }
                process.finish(ProcessExit::Exited(0)).unwrap();
            });
        }
    });
    let summary = session.finish().unwrap();
    assert_eq!(summary.processes.len(), 4);
    let read = Session::open(&dir).unwrap();
    let mut pids: Vec<u32> = read.processes().iter().map(|p| p.pid).collect();
    pids.sort();
    assert_eq!(pids, [1, 2, 3, 4]);
    for p in read.processes() {
        let got: Vec<Vec<u8>> = p.recovery().cpus[0]
            .events
            .iter()
            .map(|e| e.payload.clone())
            .collect();
        assert_eq!(got, payloads(p.pid as u8, 50));
    }
}

/// A record the writer appends while a round runs, before the events that
/// use it: the page is handed over with the records read after it, so a
/// live view can decode every event it shows.
#[test]
fn each_drained_page_comes_with_the_records_read_after_it() {
    /// Empty at the round's start; the writer's record appears after.
    struct Late {
        calls: usize,
        records: Vec<Vec<u8>>,
    }
    impl ringtrace_session::RecordSource for Late {
        fn records(&mut self) -> &[Vec<u8>] {
            self.calls += 1;
            if self.calls > 1 {
                self.records = vec![b"callsite".to_vec()];
            }
            &self.records
        }
    }
    let tmp = TempDir::new("session-late-record");
    let dir = tmp.path().join("s");
    let session = SessionWriter::create(&dir, SessionOptions::default()).unwrap();
    let ring = ring(1);
    let mut process = session.add_process(info(&ring, 5, 7)).unwrap();
    ring.cpu_writer(0)
        .write(b"an event of the callsite")
        .unwrap();
    ring.flush();
    let mut late = Late {
        calls: 0,
        records: Vec::new(),
    };
    let mut seen = Vec::new();
    let drained = ringtrace_session::Drainer::new(1)
        .round(ring.cpu_buffers(), &mut late, &mut process, |_, records| {
            seen.push(records.to_vec())
        })
        .unwrap();
    assert_eq!(drained.events, 1);
    assert_eq!(seen, vec![vec![b"callsite".to_vec()]]);
    process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
    let read = Session::open(&dir).unwrap();
    let recovered = read.recoveries();
    assert_eq!(recovered[0].metadata_records(), [b"callsite".to_vec()]);
}
