//! Inputs and outputs a user should not give, found by corrupting real
//! ones: each is refused or said in one line naming it, never a hang nor
//! a silent loss.

mod common;

use common::{ringtrace, TempDir};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A short hammer ring file in `dir`, without a consumer so it keeps its
/// events.
fn ring_file(dir: &Path) -> PathBuf {
    let ring = dir.join("h.rt");
    common::hammer_file(ring.to_str().unwrap(), "0.1");
    ring
}

/// A session drained from a hammer ring file, with its CPU buffers'
/// directories.
fn session(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let ring = ring_file(dir);
    let session = dir.join("s");
    let out = ringtrace(&[
        "record",
        "--attach",
        ring.to_str().unwrap(),
        "-o",
        session.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut cpus = Vec::new();
    for process in std::fs::read_dir(&session).unwrap() {
        let process = process.unwrap().path();
        if !process.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&process).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("cpu") && path.is_dir() {
                cpus.push(path);
            }
        }
    }
    assert!(!cpus.is_empty(), "no CPU buffer in {}", session.display());
    (session, cpus)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn export_to_a_fifo_nobody_reads_fails_naming_it_instead_of_hanging() {
    let dir = TempDir::new("adv-fifo-out");
    let ring = ring_file(dir.path());
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    for format in ["text", "perfetto"] {
        let started = Instant::now();
        let out = ringtrace(&[
            "export",
            "--format",
            format,
            "-o",
            fifo.to_str().unwrap(),
            ring.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{format}: {err}");
        assert!(started.elapsed() < Duration::from_secs(15), "{format}");
        assert!(
            err.contains("out.fifo") && err.contains("no reader"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // With a reader the export arrives through the FIFO.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let out = ringtrace(&[
        "export",
        "-o",
        fifo.to_str().unwrap(),
        ring.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!reader.join().unwrap().is_empty());
}

#[test]
fn every_reader_says_when_a_sessions_cpu_lost_its_chunks() {
    let dir = TempDir::new("adv-lost-cpu");
    let (session, cpus) = session(dir.path());
    std::fs::remove_dir_all(&cpus[0]).unwrap();
    let s = session.to_str().unwrap();
    let out_dir = dir.path().join("out");
    let exports: Vec<Vec<String>> = ["text", "chrome", "perfetto", "parquet"]
        .iter()
        .map(|f| {
            let o = out_dir.join(f);
            let o = o.to_str().unwrap().to_owned();
            ["export", "--format", f, "-o", &o, s]
                .map(String::from)
                .to_vec()
        })
        .collect();
    std::fs::create_dir(&out_dir).unwrap();
    let mut runs: Vec<Vec<String>> = vec![
        vec!["stats".into(), s.into()],
        vec!["dump".into(), s.into()],
    ];
    runs.extend(exports);
    for args in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ringtrace(&args);
        let err = text(&out.stderr);
        if err.contains("not built in") {
            continue; // a build without that format
        }
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("CPU ") && err.contains("0 were read"),
            "{args:?} says nothing of the lost CPU: {err}"
        );
    }
}

#[test]
fn stats_of_a_symlink_loop_names_the_loop_not_a_missing_file() {
    let dir = TempDir::new("adv-loop");
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let out = ringtrace(&["stats", a.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("does not exist"), "{err}");
    assert!(err.contains("symbolic links"), "{err}");
}

#[test]
fn a_file_format_given_a_directory_says_it_is_one() {
    let tmp = TempDir::new("export-to-dir");
    let ring = ring_file(tmp.path());
    let dir = tmp.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    let missing = format!("{}/", tmp.path().join("missing").display());
    let given = [
        (dir.display().to_string(), "it is a directory"),
        (format!("{}/", dir.display()), "it is a directory"),
        (missing.clone(), "names a directory"),
    ];
    for (output, says) in given {
        let out = ringtrace(&[
            "export",
            ring.to_str().unwrap(),
            "--format",
            "chrome",
            "-o",
            &output,
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{output}: {err}");
        assert!(
            err.contains(says) && err.contains("give the file's name"),
            "{output}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written in it"
    );
    assert!(!Path::new(&missing).exists());
}
