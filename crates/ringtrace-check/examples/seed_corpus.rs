//! Writes seed inputs for the fuzz targets into a directory (default
//! `fuzz/corpus`): for `decode`, real pages a ring wrote (short and long
//! events, discards, time extends and stamps, padding), framed as
//! `decode::check` reads them; for `ring_ops` and `clock_monotonic`,
//! pseudo-random scripts long enough to reach page switches, overwrites
//! and fixups. The committed corpus was made with it, then fuzzed and
//! minimised (`cargo fuzz cmin`). For `recover`: small ring files, whole
//! and as a writer would leave them mid-event, with metadata records (one
//! annex full, one with a record torn by a crash mid-append).
//!
//! `cargo run -p ringtrace-check --example seed_corpus [-- DIR]`

use ringtrace_check::script_clock::ScriptClock;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::path::Path;

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let dir = dir.join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), bytes)
}

/// Pages of a ring of `page_size` bytes written through a clock that jumps.
fn pages(page_size: usize) -> Vec<Vec<u8>> {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(page_size)
        .per_cpu_bytes(page_size * 8)
        .mode(Mode::Overwrite);
    let clock = ScriptClock::at(1_000);
    let Ok(ring) = RingBuffer::new(config, clock.clone()) else {
        return Vec::new();
    };
    for (i, jump) in [1u64, 3, 1 << 28, 7, 1 << 60, 2, 5]
        .iter()
        .cycle()
        .take(40)
        .enumerate()
    {
        clock.set(ringtrace_clock::Clock::read(&clock).wrapping_add(*jump));
        let len = [4usize, 8, 13, 30, 104][i % 5];
        if let Ok(mut r) = ring.cpu_writer(0).reserve(len.min(page_size / 4)) {
            r.write(&vec![i as u8; len]);
            if i % 7 != 3 {
                r.commit();
            } // else dropped: a discard record
        }
    }
    ring.flush();
    let buffer = &ring.cpu_buffers()[0];
    std::iter::from_fn(|| buffer.read_page())
        .map(|p| p.bytes)
        .collect()
}

/// Small ring files' bytes: discard and overwrite mode, one with a
/// reservation that never ended and a metadata record torn (its bytes
/// written, its committed length not), one wrapped with a reader partway
/// and its metadata annex full.
fn ring_files(dir: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let scratch = dir.join("recover-scratch");
    std::fs::create_dir_all(&scratch)?;
    let mut out = Vec::new();
    for (name, mode, pages, pending, read) in [
        ("discard", Mode::Discard, 2, false, 0),
        ("pending", Mode::Discard, 3, true, 0),
        ("wrapped", Mode::Overwrite, 2, false, 0),
        ("read", Mode::Overwrite, 3, true, 3),
    ] {
        let path = scratch.join(name);
        let _ = std::fs::remove_file(&path);
        let config = RingConfig::default()
            .cpus(2)
            .page_size(64)
            .per_cpu_bytes(64 * pages)
            .quarantine_pages(1)
            .metadata_capacity(ANNEX)
            .mode(mode)
            .file(&path);
        let ring = RingBuffer::new(config, ScriptClock::at(7)).map_err(std::io::Error::other)?;
        let records = if name == "wrapped" { 100 } else { 3 };
        for i in 0..records {
            // Until the annex is full, for "wrapped".
            let _ = ring.append_metadata(format!("callsite {i} of {name}").as_bytes());
        }
        for i in 0..12u32 {
            let _ = ring
                .cpu_writer(i as usize % 2)
                .write(&i.to_le_bytes()[..1 + i as usize % 4]);
        }
        for _ in 0..read {
            let _ = ring.cpu_buffers()[0].read_event();
        }
        if pending {
            if let Ok(mut r) = ring.cpu_writer(1).reserve(8) {
                r.write_at(0, &[9; 4]);
                std::mem::forget(r);
            }
        }
        drop(ring);
        let mut bytes = std::fs::read(&path)?;
        if pending {
            tear_a_record(&mut bytes)?;
        }
        out.push((name.to_owned(), bytes));
    }
    std::fs::remove_dir_all(&scratch)?;
    Ok(out)
}

/// Bytes of the seed files' metadata annex.
const ANNEX: usize = 256;

/// Writes a record after the last one in `file`'s metadata annex without
/// raising the committed length: what a crash mid-append leaves.
fn tear_a_record(file: &mut [u8]) -> std::io::Result<()> {
    let rec = ringtrace_ring::file::recover_bytes("seed", file.to_vec())
        .map_err(std::io::Error::other)?;
    let at = rec.header.layout.annex_offset as usize;
    let committed: usize = rec.metadata_records().iter().map(|r| 4 + r.len()).sum();
    let torn = b"a callsite torn by a crash";
    let end = at + 8 + committed;
    file[end..end + 4].copy_from_slice(&(torn.len() as u32).to_le_bytes());
    file[end + 4..end + 4 + torn.len()].copy_from_slice(torn);
    Ok(())
}

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus".into());
    let dir = Path::new(&dir);
    for (n, page_size) in [64usize, 256, 4096].into_iter().enumerate() {
        for (i, page) in pages(page_size).into_iter().take(4).enumerate() {
            // Byte 0: the page size as 64 << n; byte 1: keep the header.
            let mut input = vec![[0u8, 2, 6][n], 0];
            input.extend_from_slice(&page);
            write(dir, "decode", &format!("page-{page_size}-{i}"), &input)?;
        }
    }
    for (name, bytes) in ring_files(dir)? {
        write(dir, "recover", &format!("file-{name}"), &bytes)?;
    }
    for seed in 1..=6u64 {
        let len = 200 * seed as usize;
        write(
            dir,
            "ring_ops",
            &format!("script-{seed}"),
            &ringtrace_check::pseudo_random_bytes(seed, len),
        )?;
        write(
            dir,
            "clock_monotonic",
            &format!("script-{seed}"),
            &ringtrace_check::pseudo_random_bytes(seed + 100, len),
        )?;
    }
    for name in [
        "global:tsc@irq-soft",
        "sched-latch@preempt",
        "mono@irq-hard",
    ] {
        // A clock script whose name field is a valid name (setup 4 bytes,
        // start 8, conversion 24, then the name's length and bytes).
        let mut input = vec![0u8; 36];
        input[4] = 1;
        input[15] = 0x10; // 2^28 Hz, if read little-endian
        input.push(name.len() as u8);
        input.extend_from_slice(name.as_bytes());
        input.extend(ringtrace_check::pseudo_random_bytes(name.len() as u64, 600));
        write(
            dir,
            "clock_monotonic",
            &format!("named-{}", name.replace([':', '@'], "_")),
            &input,
        )?;
    }
    Ok(())
}
