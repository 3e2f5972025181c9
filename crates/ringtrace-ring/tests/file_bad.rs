//! Files recovery must refuse or recover in part: not regular files,
//! empty ones, other formats and versions, headers cut off or corrupt,
//! bodies cut off, and random damage anywhere. Each gives its own error,
//! or a partial recovery whose counts say what was skipped; none panics,
//! and none makes up an event.

mod common;
mod file_support;

use file_support::{config, file_error, header_len, Scratch};
use proptest::prelude::*;
use ringtrace_clock::Counter;
use ringtrace_ring::file::{self, FileError, FileHeader, Recovery};
use ringtrace_ring::{ConfigError, Mode, ReserveError, RingBuffer};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// (timestamp, payload) of one event.
type Written = Vec<(u64, Vec<u8>)>;

/// A valid ring file's bytes, with what a recovery of it gives and every
/// payload ever committed to it.
struct Fixture {
    bytes: Vec<u8>,
    header: FileHeader,
    /// Per CPU, what recovering the whole file gives.
    events: Vec<Written>,
    /// Every payload committed (some since overwritten).
    written: BTreeSet<Vec<u8>>,
    /// The metadata records appended.
    records: Vec<Vec<u8>>,
}

/// Two CPU buffers of six 256-byte pages, checksummed events of 16 to 55
/// bytes, and on CPU 1 a reservation forgotten half written with a few
/// events after it: discard mode nearly full, or overwrite mode wrapped.
fn make_fixture(mode: Mode) -> Fixture {
    let scratch = Scratch::new("fixture");
    let path = scratch.path("t.ring");
    let ring = RingBuffer::new(config(&path, mode, 2, 256, 6), Counter::new()).unwrap();
    let records: Vec<Vec<u8>> = (0..8)
        .map(|seq| common::payload(RECORDS, seq, 16 + (seq * 3) as usize))
        .collect();
    for r in &records {
        ring.append_metadata(r).unwrap();
    }
    let mut written = BTreeSet::new();
    let before = if mode == Mode::Discard { 16 } else { 70 };
    let mut write = |cpu: usize, seq: u64| {
        let p = common::payload(cpu as u32, seq, 16 + (seq * 5 % 40) as usize);
        ring.cpu_writer(cpu).write(&p).unwrap();
        written.insert(p);
    };
    for seq in 0..before {
        write(0, seq);
        write(1, seq);
    }
    let mut r = ring.cpu_writer(1).reserve(40).unwrap();
    let half = common::payload(1, 999, 40);
    r.write_at(0, &half[..20]);
    std::mem::forget(r);
    for seq in before..before + 4 {
        write(0, seq);
        write(1, seq);
    }
    drop(ring); // closed, with a reservation that never ended
    let rec = file::recover(&path).unwrap();
    assert!(!rec.has_problems(), "the fixture is sound");
    assert_eq!(rec.totals().skipped_pending, 1);
    assert_eq!(rec.metadata_records(), records);
    let events = (0..2).map(|cpu| events_of(&rec, cpu)).collect();
    Fixture {
        bytes: std::fs::read(&path).unwrap(),
        header: rec.header,
        events,
        written,
        records,
    }
}

/// The writer id of the fixtures' metadata records' payloads.
const RECORDS: u32 = 50;

/// The two fixtures, made once.
fn fixtures() -> &'static [Fixture; 2] {
    static FIXTURES: OnceLock<[Fixture; 2]> = OnceLock::new();
    FIXTURES.get_or_init(|| [make_fixture(Mode::Discard), make_fixture(Mode::Overwrite)])
}

fn events_of(rec: &Recovery, cpu: usize) -> Written {
    rec.cpus[cpu]
        .events
        .iter()
        .map(|e| (e.ts, e.payload.clone()))
        .collect()
}

/// Recovers `bytes` written to `path`.
fn recover_bytes(path: &Path, bytes: &[u8]) -> Result<Recovery, FileError> {
    std::fs::write(path, bytes).unwrap();
    file::recover(path)
}

/// Whether `small` is `big` with some elements left out, order kept.
fn is_subsequence<T: PartialEq>(small: &[T], big: &[T]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|s| rest.any(|b| b == s))
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn an_empty_file_is_empty_not_a_panic() {
    let scratch = Scratch::new("empty");
    let path = scratch.path("t.ring");
    std::fs::write(&path, b"").unwrap();
    assert_eq!(
        file::recover(&path).unwrap_err(),
        FileError::Empty { path: path.clone() }
    );
    // Nor is an empty file something to append to.
    let made = RingBuffer::new(
        config(&path, Mode::Discard, 1, 1024, 4).append(true),
        Counter::new(),
    );
    assert_eq!(file_error(made), FileError::Empty { path: path.clone() });
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        0,
        "a refused file was changed"
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates directories")]
fn a_directory_or_a_device_is_not_a_regular_file() {
    let scratch = Scratch::new("dir");
    let err = file::recover(&scratch.dir).unwrap_err();
    assert_eq!(
        err,
        FileError::NotRegular {
            path: scratch.dir.clone(),
            kind: "directory"
        }
    );
    assert!(
        err.to_string()
            .contains("is a directory, not a regular file"),
        "{err}"
    );
    assert_eq!(
        file::recover("/dev/null").unwrap_err(),
        FileError::NotRegular {
            path: "/dev/null".into(),
            kind: "character device"
        }
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_missing_file_is_an_io_error_naming_it() {
    let scratch = Scratch::new("missing");
    let path = scratch.path("nothing.ring");
    match file::recover(&path).unwrap_err() {
        FileError::Io {
            path: p, action, ..
        } => assert_eq!((p, action), (path, "opened")),
        other => panic!("{other:?}"),
    }
}

/// Runs `f` on another thread and fails if it takes more than a few
/// seconds: a FIFO opened for reading blocks until a writer comes.
fn within_seconds<T: Send + 'static>(
    what: &str,
    fifo: &Path,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(v) => v,
        Err(_) => {
            // Unblock it: open the FIFO's other end, so the thread ends.
            let _ = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(fifo);
            panic!("{what} blocked on a FIFO");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "makes a FIFO")]
fn a_fifo_is_refused_at_once_not_waited_on() {
    let scratch = Scratch::new("fifo");
    let path = scratch.path("t.ring");
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let p = path.clone();
    let err = within_seconds("recover", &path, move || file::recover(&p).unwrap_err());
    assert_eq!(
        err,
        FileError::NotRegular {
            path: path.clone(),
            kind: "FIFO"
        }
    );
    let p = path.clone();
    let made = within_seconds("append", &path, move || {
        file_error(RingBuffer::new(
            config(&p, Mode::Discard, 1, 1024, 4).append(true),
            Counter::new(),
        ))
    });
    assert_eq!(
        made,
        FileError::NotRegular {
            path: path.clone(),
            kind: "FIFO"
        }
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_file_of_another_format_is_not_a_ringtrace_file() {
    let scratch = Scratch::new("magic");
    let path = scratch.path("t.ring");
    let mut bytes = fixtures()[0].bytes.clone();
    bytes[..8].copy_from_slice(b"NOTARING");
    match recover_bytes(&path, &bytes).unwrap_err() {
        FileError::NotRingtrace { path: p, found } => {
            assert_eq!(p, path);
            assert!(found.contains("NOTARING"), "{found}");
        }
        other => panic!("{other:?}"),
    }
    for short in [&b"hello"[..], b"\x7fELF\x02\x01\x01", b"R"] {
        let got = recover_bytes(&path, short);
        if short == b"R" {
            // A prefix of the magic: a ringtrace file cut off.
            assert_eq!(
                got.unwrap_err(),
                FileError::TruncatedHeader {
                    path: path.clone(),
                    len: 1
                }
            );
        } else {
            assert!(
                matches!(got, Err(FileError::NotRingtrace { .. })),
                "{short:?}: {got:?}"
            );
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn another_format_version_is_named_with_the_one_this_build_reads() {
    let scratch = Scratch::new("version");
    let path = scratch.path("t.ring");
    for found in [0, file::VERSION + 1, u32::MAX] {
        let mut bytes = fixtures()[0].bytes.clone();
        bytes[8..12].copy_from_slice(&found.to_le_bytes());
        assert_eq!(
            recover_bytes(&path, &bytes).unwrap_err(),
            FileError::Version {
                path: path.clone(),
                found,
                supported: file::VERSION
            }
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_header_cut_anywhere_is_a_truncated_header() {
    let scratch = Scratch::new("cut-header");
    let path = scratch.path("t.ring");
    let f = &fixtures()[0];
    let len = header_len(&f.header);
    // Every byte, not only every eighth: each field's every cut.
    for cut in 1..len {
        assert_eq!(
            recover_bytes(&path, &f.bytes[..cut]).unwrap_err(),
            FileError::TruncatedHeader {
                path: path.clone(),
                len: cut as u64
            },
            "cut at {cut} of a {len}-byte header"
        );
    }
    // The whole header and nothing after it: a sound header, no ring.
    let rec = recover_bytes(&path, &f.bytes[..len]).unwrap();
    assert_eq!(rec.header, f.header);
    assert!(rec.has_problems());
    assert!(rec.merged().is_empty());
    assert_eq!(rec.totals(), file::RecoveryCounts::default());
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn any_bit_flipped_in_the_header_is_caught() {
    let scratch = Scratch::new("flip-header");
    let path = scratch.path("t.ring");
    let f = &fixtures()[0];
    let len = header_len(&f.header);
    for byte in 0..len {
        for bit in 0..8 {
            let mut bytes = f.bytes.clone();
            bytes[byte] ^= 1 << bit;
            let got = recover_bytes(&path, &bytes);
            let ok = match (&got, byte) {
                (Err(FileError::NotRingtrace { .. }), 0..8) => true,
                (Err(FileError::Version { .. }), 8..12) => true,
                // A flip to another version this build reads (3 to 2 or
                // 1) is caught later: by the checksum, or (1, which has
                // fewer layout words) by a field read out of place.
                (Err(FileError::Header { path: p, .. }), 8..12) => *p == path,
                (Err(FileError::Header { path: p, .. }), 12..) => *p == path,
                _ => false,
            };
            assert!(ok, "bit {bit} of byte {byte}: {:?}", got.map(|r| r.header));
        }
    }
    // A flip in a field nothing else checks (the pid) is the checksum's.
    let pid_at = len - 8 - 8 - f.header.comm.len() - 1 - 4;
    let mut bytes = f.bytes.clone();
    assert_eq!(bytes[pid_at..pid_at + 4], f.header.pid.to_le_bytes());
    bytes[pid_at] ^= 4;
    match recover_bytes(&path, &bytes).unwrap_err() {
        FileError::Header { field, why, .. } => {
            assert_eq!(field, "header checksum");
            assert!(why.contains("corrupt"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_body_cut_at_any_page_boundary_is_recovered_in_part_and_counted() {
    let scratch = Scratch::new("cut-body");
    let path = scratch.path("t.ring");
    for f in fixtures() {
        let h = &f.header;
        let l = &h.layout;
        let page = h.page_size as u64;
        let physical = h.physical_pages() as u64;
        let mut cuts = Vec::new();
        for cpu in 0..h.cpus {
            let base = l.cpu_base(cpu);
            cuts.extend([base, base + l.slots, base + l.commits]);
            cuts.extend((0..=physical).map(|k| base + l.pages + k * page));
        }
        cuts.push(l.file_len - 1);
        for cut in cuts {
            let bytes = &f.bytes[..cut as usize];
            let rec = recover_bytes(&path, bytes).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert!(
                rec.has_problems(),
                "cut at {cut}: a short file without a word of it"
            );
            for cpu in 0..h.cpus {
                let base = l.cpu_base(cpu);
                let c = &rec.cpus[cpu];
                let got = events_of(&rec, cpu);
                let whole = &f.events[cpu];
                let at = format!("{} mode, cut at {cut}, cpu {cpu}", h.mode);
                assert!(
                    is_subsequence(&got, whole),
                    "{at}: recovered what the whole file does not hold"
                );
                assert_eq!(c.counts.recovered, got.len() as u64, "{at}");
                if cut >= base + l.pages + physical * page {
                    assert_eq!(got, *whole, "{at}: the buffer is whole");
                } else if cut < base + l.pages {
                    assert!(got.is_empty(), "{at}: control words cut, yet events");
                    assert!(!c.problems.is_empty(), "{at}: nothing said");
                } else {
                    // The pages past the cut: counted, not read.
                    assert_eq!(
                        c.counts.recovered + c.counts.skipped_unreadable,
                        whole.len() as u64,
                        "{at}: {:?}",
                        c.counts
                    );
                    if got.len() < whole.len() {
                        assert!(!c.problems.is_empty(), "{at}: events skipped, nothing said");
                    }
                }
            }
        }
    }
}

/// Sets the u64 at `at` of `bytes`.
fn put_u64(bytes: &mut [u8], at: u64, value: u64) {
    bytes[at as usize..at as usize + 8].copy_from_slice(&value.to_le_bytes());
}

/// Changes the u64 at `at` of `bytes` by `f`.
fn update_u64(bytes: &mut [u8], at: u64, f: impl FnOnce(u64) -> u64) {
    let old = u64::from_le_bytes(bytes[at as usize..at as usize + 8].try_into().unwrap());
    put_u64(bytes, at, f(old));
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_consumed_count_past_a_pages_events_is_counted_not_a_panic() {
    // A slot word whose consumed count (its low 16 bits) exceeds its page's
    // events, on a page whose walk stops before the commit word's count.
    let scratch = Scratch::new("consumed");
    let path = scratch.path("t.ring");
    let f = &fixtures()[0];
    let l = &f.header.layout;
    let base = l.cpu_base(0);
    let mut bytes = f.bytes.clone();
    let slot0 = base + l.slots;
    update_u64(&mut bytes, slot0, |w| w | 0xFFFF);
    // The slot's physical page (bits 16..32): claims swap pages in, so it
    // need not be page 0.
    let at = slot0 as usize;
    let phys = (u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) >> 16) & 0xFFFF;
    let commit0 = base + l.commits + phys * l.commit_stride;
    // The commit word's event count (bits 24..40) raised by 16.
    update_u64(&mut bytes, commit0, |w| w + (16 << 24));
    let rec = recover_bytes(&path, &bytes).unwrap();
    assert!(
        rec.has_problems(),
        "the counts no longer add up, and nothing said"
    );
    // Every event of the page counts as consumed; at most the 16 the walk
    // cannot find may count as unreadable, never a wrapped-around number.
    assert!(
        rec.cpus[0].counts.skipped_unreadable <= 16,
        "{:?}",
        rec.cpus[0].counts
    );
}

/// Where a flip lands: anywhere, the header, the metadata annex, a CPU
/// buffer's control words, or its pages; or a header field changed and
/// its checksum made to match, so that the geometry and layout checks are
/// what stand.
#[derive(Debug, Clone, Copy)]
enum Region {
    Anywhere,
    Header,
    Annex,
    Control,
    Pages,
    ForgedHeader,
}

fn region() -> impl Strategy<Value = Region> {
    prop_oneof![
        1 => Just(Region::Anywhere),
        1 => Just(Region::Header),
        1 => Just(Region::Annex),
        3 => Just(Region::Control),
        3 => Just(Region::Pages),
        2 => Just(Region::ForgedHeader),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    #[cfg_attr(miri, ignore = "creates files")]
    fn damage_anywhere_never_panics_and_never_invents_an_event(
        which in 0usize..2,
        flips in prop::collection::vec((region(), 0usize..2, any::<u64>(), 0u32..8, prop::option::weighted(0.25, any::<u8>())), 1..8),
    ) {
        let f = &fixtures()[which];
        let l = &f.header.layout;
        let hlen = header_len(&f.header);
        let mut bytes = f.bytes.clone();
        let mut forged = false;
        for (region, cpu, raw, bit, set) in flips {
            let base = l.cpu_base(cpu);
            let (start, len) = match region {
                Region::Anywhere => (0, bytes.len() as u64),
                Region::Header => (0, hlen as u64),
                Region::ForgedHeader => {
                    forged = true;
                    (12, hlen as u64 - 12 - 16)
                }
                // The committed length and the records (not the zeros
                // after them, where a flip changes nothing).
                Region::Annex => (l.annex_offset, 8 + f.records.iter().map(|r| 4 + r.len() as u64).sum::<u64>()),
                Region::Control => (base, l.commits + f.header.physical_pages() as u64 * l.commit_stride),
                Region::Pages => (base + l.pages, (f.header.physical_pages() * f.header.page_size) as u64),
            };
            let at = (start + raw % len) as usize;
            match set {
                Some(v) => bytes[at] = v,
                None => bytes[at] ^= 1 << bit,
            }
        }
        if forged {
            let sum = file::fnv1a64(&bytes[..hlen - 8]);
            bytes[hlen - 8..hlen].copy_from_slice(&sum.to_le_bytes());
        }
        let scratch = Scratch::new("damage");
        let path = scratch.path("t.ring");
        if let Ok(rec) = recover_bytes(&path, &bytes) {
            let mut checked = 0;
            for c in &rec.cpus {
                prop_assert_eq!(c.counts.recovered, c.events.len() as u64);
                for e in &c.events {
                    if common::check(&e.payload).is_ok() {
                        checked += 1;
                        prop_assert!(f.written.contains(&e.payload), "an event with a valid checksum that was never written: {:?}", e);
                    }
                }
            }
            let _ = checked;
            for r in rec.metadata_records() {
                prop_assert!(!r.is_empty(), "an empty record");
                if common::check(r).is_ok() {
                    prop_assert!(f.records.contains(r), "a record with a valid checksum that was never appended: {:?}", r);
                }
            }
            let framed: u64 = rec.metadata_records().iter().map(|r| 4 + r.len() as u64).sum();
            prop_assert!(framed <= rec.header.layout.annex_capacity, "records past the annex's capacity");
        }
    }
}

/// Damage done to a file's bytes, given its header.
type Damage = fn(&mut Vec<u8>, &FileHeader);

#[test]
#[cfg_attr(miri, ignore = "creates and maps files")]
#[cfg_attr(
    not(debug_assertions),
    ignore = "without debug assertions the bug this finds writes outside the mapping"
)]
fn append_to_a_file_whose_control_words_name_no_page_is_refused_or_repaired() {
    // The control words are outside the header's checksum: a file damaged
    // there (or made by hand) is appended to as it is. Page numbers in the
    // open-page word and in the slot words must be checked (or the words
    // rebuilt) before a writer indexes the pages with them.
    let scratch = Scratch::new("append-corrupt");
    let mut failures = Vec::new();
    let cases: [(&str, Damage); 3] = [
        ("the open-page word names page 0xFFFF", |bytes, h| {
            let base = h.layout.cpu_base(0);
            update_u64(bytes, base + h.layout.hot + 40, |open| open | 0xFFFF);
        }),
        ("the open page's slot names page 0xFFFF", |bytes, h| {
            let base = h.layout.cpu_base(0);
            put_u64(bytes, base + h.layout.hot + 40, u64::MAX);
            let slot = base + h.layout.slots; // page 0 is the open one
            update_u64(bytes, slot, |w| w | 0xFFFF << 16);
        }),
        ("the next page's slot names page 0xFFFF", |bytes, h| {
            let base = h.layout.cpu_base(0);
            let slot = base + h.layout.slots + 8;
            update_u64(bytes, slot, |w| w | 0xFFFF << 16);
        }),
    ];
    for (i, (what, damage)) in cases.into_iter().enumerate() {
        let path = scratch.path(&format!("t-{i}.ring"));
        let ring =
            RingBuffer::new(config(&path, Mode::Overwrite, 1, 256, 4), Counter::new()).unwrap();
        ring.cpu_writer(0).write(b"first").unwrap();
        drop(ring);
        let mut bytes = std::fs::read(&path).unwrap();
        let h = file::recover(&path).unwrap().header;
        damage(&mut bytes, &h);
        std::fs::write(&path, &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            let cfg = config(&path, Mode::Overwrite, 1, 256, 4).append(true);
            match RingBuffer::new(cfg, Counter::new()) {
                Err(ConfigError::File(_)) => "refused",
                Err(e) => panic!("not a file error: {e}"),
                Ok(ring) => {
                    for i in 0..40u32 {
                        match ring.cpu_writer(0).write(&i.to_le_bytes()) {
                            Ok(_) | Err(ReserveError::Busy | ReserveError::Preparing) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    while ring.cpu_buffer(0).unwrap().read_event().is_some() {}
                    "repaired"
                }
            }
        });
        match outcome {
            Ok(how) => eprintln!("{what}: {how}"),
            Err(_) => failures.push(what),
        }
    }
    assert!(
        failures.is_empty(),
        "a writer or reader of the appended ring panicked when {failures:?} (a page number \
         from the file reaches PageWords::word/words, whose unchecked indexing the debug \
         assertion guards: out of bounds in release)"
    );
}

/// The byte offsets of the record headers in `page`, walked as the format
/// lays them out (the fixture's pages are sound).
fn record_headers(page: &[u8]) -> Vec<usize> {
    use ringtrace_ring::format::*;
    let word = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().unwrap());
    let mut at = PAGE_HEADER;
    let mut found = Vec::new();
    while at + 4 <= page.len() {
        let head = word(at);
        let size = match head & 31 {
            0 => break,
            t @ 1..=TYPE_DATA_MAX => 4 + 4 * t as usize,
            TYPE_DATA_LONG => 8 + (word(at + 4) as usize).next_multiple_of(4),
            TYPE_DISCARD => word(at + 4) as usize,
            TYPE_PADDING => break,
            TYPE_TIME_EXTEND => 8,
            _ => 12,
        };
        found.push(at);
        at += size;
    }
    found
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_record_header_damaged_into_another_is_nearly_always_said() {
    // One bit of a record's type flipped: the record now parses as one of
    // another size, and the rest of its page with it. Recovery checks a
    // page's walk against its commit word (events and bytes) and its times
    // against the next page's start: what still passes is a record
    // damaged into another of the same size, such as a long event read as
    // a short one, which nothing in the format can tell apart.
    let scratch = Scratch::new("header-flip");
    let path = scratch.path("t.ring");
    let (mut flips, mut said, mut unsaid) = (0, 0, Vec::new());
    for f in fixtures() {
        let h = &f.header;
        let l = &h.layout;
        for cpu in 0..h.cpus {
            for phys in 0..h.physical_pages() {
                let page_at = (l.cpu_base(cpu) + l.pages) as usize + phys * h.page_size;
                let page = &f.bytes[page_at..page_at + h.page_size];
                for at in record_headers(page) {
                    for bit in 0..5 {
                        let mut bytes = f.bytes.clone();
                        bytes[page_at + at] ^= 1 << bit;
                        let rec = recover_bytes(&path, &bytes).unwrap();
                        flips += 1;
                        if rec.has_problems() {
                            said += 1;
                        } else if (0..h.cpus)
                            .any(|c| !is_subsequence(&events_of(&rec, c), &f.events[c]))
                        {
                            unsaid.push(format!(
                                "{} mode, cpu {cpu}, page {phys}, byte {at}, bit {bit}",
                                h.mode
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{flips} flips: {said} said, {} misread unsaid",
        unsaid.len()
    );
    // Before these checks: 137 said and 219 misread unsaid of 470.
    assert!(said * 10 >= flips * 9, "{said} of {flips} said");
    assert!(
        unsaid.len() * 100 <= flips * 8,
        "{} of {flips} flips misread a page and said nothing: {unsaid:?}",
        unsaid.len()
    );
}
