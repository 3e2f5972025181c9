//! The harness of the public-API stress tests (`api_stress_*.rs`): many
//! writers (more than the CPUs) in overwrite mode with the step-over on,
//! reservations held open or dropped, small pages, memory and file rings,
//! both write paths, a concurrent reader or none. Every payload carries
//! its writer, its sequence number and a checksum, so that each event read
//! is checked whole, at most once, in its writer's order, and everything
//! not read is counted.
#![allow(dead_code, unused_imports)] // each test file uses part of it

pub use ringtrace::ring::file;
pub use ringtrace::ring::{Mode, ReserveError, RingBuffer, RingConfig, Stats, WritePath};
pub use ringtrace::{AnyClock, ClockSpec};
pub use std::collections::{HashMap, HashSet};
pub use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
pub use std::sync::{Arc, Barrier};
pub use std::time::Duration;

pub const MARKER: u32 = 0xFFFF;

pub fn clock(name: &str) -> AnyClock {
    name.parse::<ClockSpec>().unwrap().build().unwrap()
}

pub fn paths() -> Vec<WritePath> {
    let mut v = vec![WritePath::Cas];
    if ringtrace::ring::rseq::unavailable().is_none() {
        v.push(WritePath::Rseq);
    }
    v
}

pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

/// A payload of `len` bytes (at least 8) naming writer `w`, number `seq`:
/// `[w: u16][len: u16][seq: u32][filler...]`, each filler byte derived
/// from all three, the last 1..=4 bytes (when len >= 12) a checksum.
pub fn payload(w: u32, seq: u32, len: usize) -> Vec<u8> {
    assert!(len >= 8);
    let mut p = vec![0u8; len];
    p[0..2].copy_from_slice(&(w as u16).to_le_bytes());
    p[2..4].copy_from_slice(&(len as u16).to_le_bytes());
    p[4..8].copy_from_slice(&seq.to_le_bytes());
    let seed = mix(((w as u64) << 48) ^ ((len as u64) << 32) ^ seq as u64);
    for (i, b) in p[8..].iter_mut().enumerate() {
        *b = mix(seed ^ i as u64) as u8;
    }
    p
}

/// Checks a payload whole; returns (writer, seq).
pub fn check(p: &[u8]) -> Result<(u32, u32), String> {
    if p.len() < 8 {
        return Err(format!("payload of {} bytes: {p:?}", p.len()));
    }
    let w = u16::from_le_bytes([p[0], p[1]]) as u32;
    let len = u16::from_le_bytes([p[2], p[3]]) as usize;
    let seq = u32::from_le_bytes(p[4..8].try_into().unwrap());
    if len != p.len() {
        return Err(format!("length {} says {len}: w={w} seq={seq}", p.len()));
    }
    if payload(w, seq, len) != p {
        return Err(format!("torn payload w={w} seq={seq} len={len}: {p:?}"));
    }
    Ok((w, seq))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    None,
    ByEvent,
    ByPage,
    Merged,
    Committed,
}

/// A `Seen` that is no event: a page piece with no events that reported
/// losses.
pub const LOSS_ONLY: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct Run {
    pub page: usize,
    pub pages: usize,
    pub cpus: usize,
    pub writers: u32,
    pub per_writer: u32,
    pub path: WritePath,
    pub clock: &'static str,
    pub file: Option<std::path::PathBuf>,
    pub reader: Reader,
    /// Every n-th event is reserved and held open for `hold`.
    pub hold_every: u32,
    pub hold: Duration,
    /// Every n-th event is reserved and dropped.
    pub drop_every: u32,
    /// Payload lengths cycle through min..=max.
    pub min_len: usize,
    pub max_len: usize,
    pub step_over: bool,
    pub fixup_after: Option<Duration>,
    /// Writers pinned to a CPU buffer with cpu_writer (odd writers).
    pub pin_odd: bool,
    /// Move the thread to another CPU between reserve and commit of a
    /// held reservation.
    pub migrate: bool,
    pub quarantine: Option<usize>,
}

impl Run {
    pub fn new(path: WritePath) -> Run {
        Run {
            page: 256,
            pages: 4,
            cpus: 2,
            writers: 6,
            per_writer: 3000,
            path,
            clock: "mono",
            file: None,
            reader: Reader::None,
            hold_every: 97,
            hold: Duration::from_micros(300),
            drop_every: 53,
            min_len: 8,
            max_len: 40,
            step_over: true,
            fixup_after: None,
            pin_odd: true,
            migrate: false,
            quarantine: None,
        }
    }
    pub fn config(&self) -> RingConfig {
        let mut c = RingConfig::default()
            .cpus(self.cpus)
            .page_size(self.page)
            .per_cpu_bytes(self.page * self.pages)
            .mode(Mode::Overwrite)
            .write_path(self.path)
            .step_over(self.step_over)
            .fixup_after(self.fixup_after);
        if let Some(q) = self.quarantine {
            c = c.quarantine_pages(q);
        }
        if let Some(f) = &self.file {
            c = c.file(f);
        }
        c
    }
}

#[derive(Default, Debug)]
pub struct WriterLog {
    /// Per seq: 0 refused, 1 committed, 2 dropped.
    pub outcome: Vec<u8>,
    /// The CPU buffer of each committed event when known (pinned writers).
    pub cpu: Vec<Option<usize>>,
    pub refused: HashMap<String, u64>,
}

#[derive(Debug, Clone)]
pub struct Seen {
    pub cpu: usize,
    pub ts: u64,
    pub w: u32,
    pub seq: u32,
    pub lost_before: u64,
}

impl Seen {
    /// An event read, its payload checked whole.
    pub fn of(e: &ringtrace::ring::Event) -> Seen {
        Seen::read(e.cpu, e.ts, &e.payload, e.lost_before)
    }

    /// An event of a page of `cpu`, its payload checked whole.
    pub fn read(cpu: usize, ts: u64, payload: &[u8], lost_before: u64) -> Seen {
        let (w, seq) = check(payload).unwrap();
        Seen {
            cpu,
            ts,
            w,
            seq,
            lost_before,
        }
    }
}

/// Pins the calling thread to `cpu` (None: every CPU).
pub fn set_affinity(cpu: Option<usize>) {
    // SAFETY: a cpu_set_t on the stack, filled by the libc macros.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        match cpu {
            Some(c) => libc::CPU_SET(c % 2, &mut set),
            None => {
                libc::CPU_SET(0, &mut set);
                libc::CPU_SET(1, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

pub fn read_one(ring: &RingBuffer<AnyClock>, reader: Reader, out: &mut Vec<Seen>) -> usize {
    let mut n = 0;
    match reader {
        Reader::None => {}
        Reader::ByEvent => {
            for b in ring.cpu_buffers() {
                for _ in 0..64 {
                    let Some(e) = b.read_event() else { break };
                    out.push(Seen::of(&e));
                    n += 1;
                }
            }
        }
        Reader::ByPage => {
            for b in ring.cpu_buffers() {
                if let Some(p) = b.read_page() {
                    let lost = p.header().lost;
                    for (i, (ts, pl)) in p.events().enumerate() {
                        out.push(Seen::read(
                            p.cpu,
                            ts,
                            pl,
                            if i == 0 { lost as u64 } else { 0 },
                        ));
                        n += 1;
                    }
                    if p.events().next().is_none() && lost != 0 {
                        panic!("page with no events reports lost {lost}");
                    }
                }
            }
        }
        Reader::Committed => {
            for b in ring.cpu_buffers() {
                let mut p = ringtrace::ring::PageBuf {
                    cpu: b.cpu(),
                    bytes: Vec::new(),
                };
                if let Some(d) = b.read_committed_into(&mut p) {
                    let events: Vec<_> = p.events().collect();
                    assert_eq!(d.events as usize, events.len());
                    assert_eq!(d.lost, p.header().lost as u64);
                    if events.is_empty() && d.lost != 0 {
                        out.push(Seen {
                            cpu: p.cpu,
                            ts: 0,
                            w: LOSS_ONLY,
                            seq: 0,
                            lost_before: d.lost,
                        });
                    }
                    for (i, (ts, pl)) in events.into_iter().enumerate() {
                        out.push(Seen::read(p.cpu, ts, pl, if i == 0 { d.lost } else { 0 }));
                        n += 1;
                    }
                }
            }
        }
        Reader::Merged => {
            for e in ring.merged().take(256) {
                out.push(Seen::of(&e));
                n += 1;
            }
        }
    }
    n
}

pub fn drain(ring: &RingBuffer<AnyClock>, out: &mut Vec<Seen>) {
    for b in ring.cpu_buffers() {
        while let Some(e) = b.read_event() {
            out.push(Seen::of(&e));
        }
    }
}

pub fn writer_loop(ring: &RingBuffer<AnyClock>, run: &Run, w: u32) -> WriterLog {
    let mut log = WriterLog {
        outcome: vec![0; run.per_writer as usize],
        cpu: vec![None; run.per_writer as usize],
        ..Default::default()
    };
    let pinned = run.pin_odd && w % 2 == 1;
    let pin_cpu = (w as usize / 2) % run.cpus;
    let span = run.max_len - run.min_len + 1;
    for seq in 0..run.per_writer {
        let len = run.min_len + (mix(((w as u64) << 32) | seq as u64) as usize % span);
        let p = payload(w, seq, len);
        let i = seq as usize;
        let hold = run.hold_every != 0 && seq % run.hold_every == run.hold_every - 1;
        let drop_it = run.drop_every != 0 && seq % run.drop_every == run.drop_every - 1;
        let plain = !hold && !drop_it && seq % 3 != 0;
        let r = if plain {
            if pinned {
                ring.cpu_writer(pin_cpu).write(&p).map(|_| Some(pin_cpu))
            } else {
                ring.write(&p).map(|_| None)
            }
        } else {
            let res = if pinned {
                ring.cpu_writer(pin_cpu).reserve(len)
            } else {
                ring.reserve(len)
            };
            match res {
                Ok(mut r) => {
                    let cpu = r.cpu();
                    if seq % 4 == 0 {
                        r.write(&p);
                    } else if seq % 4 == 2 {
                        let mut st = r.stream();
                        for chunk in p.chunks(3) {
                            assert_eq!(st.put(chunk), chunk.len());
                        }
                    } else {
                        // In two pieces, the second first.
                        let half = (len / 2) & !3;
                        assert_eq!(r.write_at(half, &p[half..]), len - half);
                        assert_eq!(r.write_at(0, &p[..half]), half);
                    }
                    if hold {
                        if run.migrate {
                            set_affinity(Some((seq as usize) % 2));
                        }
                        std::thread::sleep(run.hold);
                        if run.migrate {
                            set_affinity(Some((seq as usize + 1) % 2));
                        }
                    }
                    if drop_it {
                        drop(r);
                        log.outcome[i] = 2;
                        continue;
                    }
                    r.commit();
                    Ok(Some(cpu))
                }
                Err(e) => Err(e),
            }
        };
        match r {
            Ok(cpu) => {
                log.outcome[i] = 1;
                log.cpu[i] = cpu;
            }
            Err(e) => {
                let key = match e {
                    ReserveError::Busy => "busy".to_string(),
                    ReserveError::Preparing => "preparing".to_string(),
                    ReserveError::Full => "full".to_string(),
                    other => format!("{other:?}"),
                };
                *log.refused.entry(key).or_default() += 1;
            }
        }
    }
    log
}

pub struct Outcome {
    pub stats: Stats,
    pub seen: Vec<Seen>,
    pub logs: Vec<WriterLog>,
}

/// Runs writers (and the reader) and drains; checks everything the docs
/// promise; returns what it found for further checks.
pub fn run(run: &Run) -> Outcome {
    let ring = Arc::new(RingBuffer::new(run.config(), clock(run.clock)).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(run.writers as usize + 1));
    let writers: Vec<_> = (0..run.writers)
        .map(|w| {
            let ring = Arc::clone(&ring);
            let run = run.clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                let log = writer_loop(&ring, &run, w);
                set_affinity(None);
                log
            })
        })
        .collect();
    let reader = {
        let ring = Arc::clone(&ring);
        let done = Arc::clone(&done);
        let kind = run.reader;
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !done.load(Ordering::Acquire) {
                if read_one(&ring, kind, &mut seen) == 0 {
                    std::thread::yield_now();
                }
            }
            seen
        })
    };
    start.wait();
    let logs: Vec<WriterLog> = writers.into_iter().map(|t| t.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    let mut seen = reader.join().unwrap();
    // A marker on each CPU buffer, so that every loss lies before some
    // page read, then everything left.
    // (Enough of them to fill a page: a late loss is reported on the next
    // page read, which the reader may not have reached otherwise.)
    let markers = markers_per_cpu(run.page);
    for cpu in 0..run.cpus {
        for i in 0..markers {
            ring.cpu_writer(cpu)
                .write(&payload(MARKER, (cpu * markers + i) as u32, 8))
                .unwrap();
        }
    }
    drain(&ring, &mut seen);
    let stats = ring.stats();
    verify(run, &stats, &seen, &logs);
    Outcome { stats, seen, logs }
}

pub fn markers_per_cpu(page: usize) -> usize {
    page / 12 + 2
}

pub fn verify(run: &Run, s: &Stats, all: &[Seen], logs: &[WriterLog]) {
    let reported: u64 = all.iter().map(|e| e.lost_before).sum();
    let seen: Vec<Seen> = all.iter().filter(|e| e.w != LOSS_ONLY).cloned().collect();
    let seen = &seen[..];
    let committed: u64 = logs
        .iter()
        .map(|l| l.outcome.iter().filter(|&&o| o == 1).count() as u64)
        .sum();
    let dropped: u64 = logs
        .iter()
        .map(|l| l.outcome.iter().filter(|&&o| o == 2).count() as u64)
        .sum();
    let refused: u64 = logs.iter().map(|l| l.refused.values().sum::<u64>()).sum();
    let markers = (run.cpus * markers_per_cpu(run.page)) as u64;
    let ctx = format!(
        "{run:?}\n{s:?}\nrefused: {:?}",
        logs.iter().map(|l| &l.refused).collect::<Vec<_>>()
    );
    // No duplicate, nothing read that was not committed.
    let mut once = HashSet::new();
    for e in seen {
        assert!(
            once.insert((e.w, e.seq)),
            "read twice: w={} seq={}\n{ctx}",
            e.w,
            e.seq
        );
        if e.w != MARKER {
            assert_eq!(
                logs[e.w as usize].outcome[e.seq as usize], 1,
                "read an event not committed: w={} seq={}\n{ctx}",
                e.w, e.seq
            );
            if let Some(cpu) = logs[e.w as usize].cpu[e.seq as usize] {
                assert_eq!(
                    cpu, e.cpu,
                    "w={} seq={} read from another cpu\n{ctx}",
                    e.w, e.seq
                );
            }
        }
    }
    // Each writer's events, per CPU buffer, in its order; time never goes
    // back in a CPU buffer.
    let mut last: HashMap<(usize, u32), u32> = HashMap::new();
    let mut last_ts: HashMap<usize, u64> = HashMap::new();
    for e in seen {
        if let Some(&prev) = last.get(&(e.cpu, e.w)) {
            assert!(
                prev < e.seq,
                "w={} on cpu {}: seq {} after {}\n{ctx}",
                e.w,
                e.cpu,
                e.seq,
                prev
            );
        }
        last.insert((e.cpu, e.w), e.seq);
        if run.reader != Reader::Merged {
            if let Some(&t) = last_ts.get(&e.cpu) {
                assert!(
                    t <= e.ts,
                    "cpu {} time back: {} after {}\n{ctx}",
                    e.cpu,
                    e.ts,
                    t
                );
            }
            last_ts.insert(e.cpu, e.ts);
        }
    }
    // The counts.
    assert_eq!(s.hit, committed + dropped + markers, "hit\n{ctx}");
    assert_eq!(s.missed, refused, "missed\n{ctx}");
    assert_eq!(
        s.missed,
        s.full() + s.busy + s.preparing + s.too_large + s.timed_out,
        "missed split\n{ctx}"
    );
    assert_eq!(s.discarded, dropped, "discarded\n{ctx}");
    assert_eq!(s.read, seen.len() as u64, "read\n{ctx}");
    assert_eq!(s.entries, 0, "entries after drain\n{ctx}");
    assert_eq!(s.hit, s.accounted(), "hit == accounted\n{ctx}");
    assert_eq!(
        committed + markers - seen.len() as u64,
        s.overrun + s.lost,
        "not read == overrun + lost\n{ctx}"
    );
    assert_eq!(reported, s.overrun + s.lost, "lost_before summed\n{ctx}");
    // Every marker read.
    assert!(
        seen.iter().filter(|e| e.w == MARKER).count() > 0,
        "markers\n{ctx}"
    );
    if run.fixup_after.is_none() {
        assert_eq!(s.lost, 0, "lost without a fixup\n{ctx}");
    }
}

/// Without a reader, pinned writers' survivors on their buffer are the
/// newest of what they committed there, with no gap.
pub fn survivors_are_a_suffix(out: &Outcome) {
    for (w, log) in out.logs.iter().enumerate() {
        let mut by_cpu: HashMap<usize, Vec<u32>> = HashMap::new();
        for (seq, cpu) in log.cpu.iter().enumerate() {
            if let Some(cpu) = cpu {
                by_cpu.entry(*cpu).or_default().push(seq as u32);
            }
        }
        for (cpu, committed) in by_cpu {
            if w % 2 != 1 {
                continue;
            }
            let read: Vec<u32> = out
                .seen
                .iter()
                .filter(|e| e.w == w as u32 && e.cpu == cpu)
                .map(|e| e.seq)
                .collect();
            let tail = &committed[committed.len() - read.len()..];
            assert_eq!(
                read, tail,
                "w={w} cpu={cpu}: survivors are not the newest\n{:?}",
                out.stats
            );
        }
    }
}

pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-adv-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn check_pl(e: &Seen) -> (u32, u32) {
    (e.w, e.seq)
}
