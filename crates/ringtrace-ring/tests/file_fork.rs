//! A file ring shared with a forked child: the child writes while its
//! parent does not, and the parent writes on once the child is gone.
//! Every event of both is read back once, and nothing is counted lost: a
//! child must not take pages from its copy of the parent's pool of zeroed
//! pages, which the parent takes from too.

use ringtrace_ring::{RingBuffer, RingConfig, WritePath};

fn written_around_a_fork(path: WritePath, name: &str) {
    let dir = std::env::temp_dir().join(format!("ringtrace-fork-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(64 * 1024)
        .write_path(path)
        .file(dir.join("f.ring"));
    let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
    let write = |tag: u8, n: u32| {
        for i in 0..n {
            let mut payload = [tag; 16];
            payload[..4].copy_from_slice(&i.to_le_bytes());
            ring.write(&payload).unwrap();
        }
    };
    write(1, 1000);
    // SAFETY: the child writes with this thread only (the test's), then
    // leaves with _exit, running no destructor of the parent's state.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        write(2, 300);
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child, its status into a local.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    write(3, 1000);
    ring.flush();
    let mut by_tag = [0u32; 4];
    for e in ring.merged() {
        by_tag[usize::from(e.payload[4])] += 1;
    }
    let s = ring.stats();
    assert_eq!(by_tag[1..], [1000, 300, 1000], "{path:?}: {s:?}");
    assert_eq!((s.hit, s.lost, s.overrun), (2300, 0, 0), "{path:?}: {s:?}");
    assert_eq!(s.accounted(), s.hit, "{path:?}: {s:?}");
    drop(ring);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "creates files and forks")]
fn a_forked_childs_events_and_its_parents_after_it_are_all_read_on_the_cas_path() {
    written_around_a_fork(WritePath::Cas, "cas");
}

#[test]
#[cfg_attr(miri, ignore = "creates files and forks")]
fn a_forked_childs_events_and_its_parents_after_it_are_all_read_on_the_default_path() {
    written_around_a_fork(WritePath::Auto, "auto");
}

/// A parent and its forked child append metadata records to the annex of
/// the file ring they share, at the same time: every record of both is
/// kept whole, none written over the other's (the in-process lock is not
/// shared across a fork; the record lock on the file is).
#[test]
#[cfg_attr(miri, ignore = "creates files and forks")]
fn metadata_records_appended_by_a_parent_and_its_forked_child_are_all_kept() {
    let dir = std::env::temp_dir().join(format!("ringtrace-fork-annex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.ring");
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(64 * 1024)
        .file(&path);
    let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
    ring.append_metadata(b"before the fork").unwrap();
    const EACH: u32 = 400;
    let append = |who: &str| {
        for i in 0..EACH {
            let record = format!("{who} {i:04} {}", "x".repeat(40));
            ring.append_metadata(record.as_bytes()).unwrap();
        }
    };
    // SAFETY: the child appends with this thread only (the test's), then
    // leaves with _exit, running no destructor of the parent's state.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        append("child");
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    append("parent");
    let mut status = 0;
    // SAFETY: waits for our own child, its status into a local.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let check = |records: &[Vec<u8>], how: &str| {
        let text: Vec<String> = records
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect();
        assert_eq!(
            text.first().map(String::as_str),
            Some("before the fork"),
            "{how}"
        );
        for who in ["parent", "child"] {
            let mine: Vec<&String> = text.iter().filter(|t| t.starts_with(who)).collect();
            assert_eq!(mine.len(), EACH as usize, "{how}: {who}'s records");
            for (i, t) in mine.iter().enumerate() {
                assert_eq!(**t, format!("{who} {i:04} {}", "x".repeat(40)), "{how}");
            }
        }
        assert_eq!(text.len(), 1 + 2 * EACH as usize, "{how}");
    };
    let snapshot = ring.snapshot(Vec::new());
    check(snapshot.metadata_records(), "the writer's snapshot");
    drop(ring);
    let recovered = ringtrace_ring::file::recover(&path).unwrap();
    assert!(
        recovered.annex_problems().is_empty(),
        "{:?}",
        recovered.annex_problems()
    );
    check(recovered.metadata_records(), "the file recovered");
    std::fs::remove_dir_all(&dir).unwrap();
}
