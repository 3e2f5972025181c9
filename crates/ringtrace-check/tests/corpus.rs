//! Every committed fuzz input runs in `cargo test`: the seed corpora
//! (fuzz/corpus/TARGET) and every input a fuzzer once failed on
//! (fuzz/regressions/TARGET, each kept after its fix).

use std::path::{Path, PathBuf};

type Check = fn(&[u8]) -> Result<(), ringtrace_check::Violation>;

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
        .collect();
    files.sort();
    files
}

fn run_all(target: &str, check: Check) {
    let corpus = inputs("corpus", target);
    assert!(!corpus.is_empty(), "no seed corpus for {target}");
    let limit = if cfg!(miri) { 2 } else { usize::MAX };
    for path in corpus
        .iter()
        .take(limit)
        .chain(&inputs("regressions", target))
    {
        let bytes = std::fs::read(path).unwrap();
        if let Err(v) = check(&bytes) {
            panic!("{}: {v}", path.display());
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "reads the inputs from disk")]
fn ring_ops_corpus_and_regressions_pass() {
    run_all("ring_ops", |b| {
        ringtrace_check::ring_ops::check(b).map(drop)
    });
}

#[test]
#[cfg_attr(miri, ignore = "reads the inputs from disk")]
fn clock_monotonic_corpus_and_regressions_pass() {
    run_all("clock_monotonic", |b| {
        ringtrace_check::clock_monotonic::check(b).map(drop)
    });
}

#[test]
#[cfg_attr(miri, ignore = "reads the inputs from disk")]
fn decode_corpus_and_regressions_pass() {
    run_all("decode", |b| ringtrace_check::decode::check(b).map(drop));
}

#[test]
#[cfg_attr(miri, ignore = "reads the inputs from disk")]
fn recover_corpus_and_regressions_pass() {
    run_all("recover", |b| ringtrace_check::recover::check(b).map(drop));
}
