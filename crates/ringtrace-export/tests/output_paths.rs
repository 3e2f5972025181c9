//! Where an export's output goes, whatever its path leads to: standard
//! output is written through fd 1, a symbolic link is written through and
//! never replaced, a device is written in place, a long name still gets a
//! temporary name that fits, and no session (another's included) is ever
//! written into.

mod common;

use common::TempDir;
use ringtrace_export::export::output::{write_dir, write_file, NAME_PREFIX};
use ringtrace_export::export::{export, ExportError, Format};
use ringtrace_ring::file::Recovery;
use ringtrace_ring::{RingBuffer, RingConfig};
use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::Path;

/// The environment variable that makes [`child_exports_to_its_output`]
/// export to the path it holds; unset, that test does nothing.
const CHILD_TARGET: &str = "RINGTRACE_OUTPUT_PATHS_CHILD";
/// The directory that child makes its ring file in.
const CHILD_DIR: &str = "RINGTRACE_OUTPUT_PATHS_CHILD_DIR";
/// How a text export starts, to be found in the child's standard output.
const MARKER: &str = "# ringtrace dump";

/// Writes `bytes` to `target` with [`write_file`].
fn write(target: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    write_file(target, |w| {
        w.write_all(bytes)
            .map_err(|e| panic!("writing {}: {e}", target.display()))
    })
}

/// Whether `path` is a symbolic link itself.
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The names in `dir` that start with a dot: temporary files left behind.
fn hidden(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// A file ring at `path` holding one event, read back as a snapshot.
fn recovery(path: &Path) -> Recovery {
    let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(path);
    let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
    ring.write(b"kept").unwrap();
    ring.snapshot(Vec::new())
}

#[test]
fn child_exports_to_its_output() {
    let (Some(target), Some(dir)) = (std::env::var_os(CHILD_TARGET), std::env::var_os(CHILD_DIR))
    else {
        return;
    };
    let trace = recovery(&Path::new(&dir).join("child.ring"));
    export(&trace, Format::Text, Path::new(&target)).unwrap();
}

/// Runs [`child_exports_to_its_output`] with `target` as its output, its
/// ring in a directory of its own, and its standard output going to
/// `stdout`.
fn child_exporting_to(target: &str, stdout: std::fs::File) {
    let dir = TempDir::new("out-stdout-ring");
    let status = ringtrace_testkit::self_command()
        .args(["child_exports_to_its_output", "--exact", "--nocapture"])
        .args(["--test-threads=1"])
        .env(CHILD_TARGET, target)
        .env(CHILD_DIR, dir.path())
        .stdout(stdout)
        .status()
        .unwrap();
    assert!(status.success(), "{target}: {status}");
}

#[test]
fn dash_and_dev_stdout_redirected_to_a_file_are_written_through_fd_1() {
    let dir = TempDir::new("out-stdout");
    let dev_stdout_was_a_link = is_link(Path::new("/dev/stdout"));
    // What the CLI passes for `-o -`, and `-` as the library takes it.
    for target in ["/dev/stdout", "-"] {
        // `> x.txt`: the file is written, /dev/stdout left as it was.
        let file = dir.path().join("x.txt");
        child_exporting_to(target, std::fs::File::create(&file).unwrap());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(MARKER), "{target}: {text:?}");
        assert_eq!(is_link(Path::new("/dev/stdout")), dev_stdout_was_a_link);

        // `>> x.txt`: appended, what was there kept.
        std::fs::write(&file, "before\n").unwrap();
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        child_exporting_to(target, appended);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("before\n"), "{target}: {text:?}");
        assert!(text.contains(MARKER), "{target}: {text:?}");
    }
    assert!(hidden(dir.path()).is_empty(), "{:?}", hidden(dir.path()));
    assert!(!Path::new("-").exists(), "a file named - was made");
}

#[test]
fn a_symlink_output_is_written_through_and_stays_a_link() {
    let here = TempDir::new("out-link-here");
    let there = TempDir::new("out-link-there");
    let real = there.path().join("real.txt");
    std::fs::write(&real, "old content, longer than the new").unwrap();
    let link = here.path().join("link.txt");
    symlink(&real, &link).unwrap();
    write(&link, b"new").unwrap();
    assert!(is_link(&link), "the link was replaced");
    assert_eq!(std::fs::read_link(&link).unwrap(), real);
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
    assert_eq!(here.entries(), ["link.txt"]);
    assert_eq!(there.entries(), ["real.txt"]);
}

#[test]
fn a_chain_of_relative_symlinks_is_followed_from_each_links_directory() {
    let dir = TempDir::new("out-link-chain");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    // a -> sub/b -> c (in sub/, not in the top directory).
    symlink("sub/b", dir.path().join("a")).unwrap();
    symlink("c", dir.path().join("sub/b")).unwrap();
    write(&dir.path().join("a"), b"through two links").unwrap();
    assert!(is_link(&dir.path().join("a")) && is_link(&dir.path().join("sub/b")));
    let written = std::fs::read(dir.path().join("sub/c")).unwrap();
    assert_eq!(written, b"through two links");
    assert!(!dir.path().join("c").exists());
}

#[test]
fn a_dangling_symlink_output_creates_the_file_it_names() {
    let dir = TempDir::new("out-link-dangling");
    let link = dir.path().join("link");
    symlink("made.txt", &link).unwrap();
    write(&link, b"made").unwrap();
    assert!(is_link(&link));
    assert_eq!(std::fs::read(dir.path().join("made.txt")).unwrap(), b"made");
    assert_eq!(dir.entries(), ["link", "made.txt"]);
}

#[test]
fn a_symlink_loop_is_refused_naming_the_path() {
    let dir = TempDir::new("out-link-loop");
    symlink("b", dir.path().join("a")).unwrap();
    symlink("a", dir.path().join("b")).unwrap();
    let err = write(&dir.path().join("a"), b"x").unwrap_err();
    let said = err.to_string();
    assert!(said.contains("symbolic links"), "{said}");
    assert!(said.contains(&dir.file("a")), "{said}");
    assert!(is_link(&dir.path().join("a")) && is_link(&dir.path().join("b")));
}

#[test]
fn a_symlink_to_a_device_is_written_in_place_and_dev_null_stays_a_device() {
    let dir = TempDir::new("out-link-device");
    let link = dir.path().join("null");
    symlink("/dev/null", &link).unwrap();
    write(&link, b"discarded").unwrap();
    write(Path::new("/dev/null"), b"discarded").unwrap();
    assert!(is_link(&link));
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(meta.file_type().is_char_device(), "/dev/null was replaced");
    assert_eq!(dir.entries(), ["null"]);
}

#[test]
fn a_regular_file_reached_through_proc_is_written_in_place_and_truncated() {
    use std::os::fd::AsRawFd;
    let dir = TempDir::new("out-proc-fd");
    let real = dir.path().join("real.txt");
    std::fs::write(&real, "old content, longer than the new").unwrap();
    let held = std::fs::File::open(&real).unwrap();
    let via_proc = format!("/proc/self/fd/{}", held.as_raw_fd());
    write(Path::new(&via_proc), b"new").unwrap();
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
    assert_eq!(dir.entries(), ["real.txt"]);
}

#[test]
fn a_directory_output_through_a_symlink_builds_the_directory_it_names() {
    let dir = TempDir::new("out-link-dir");
    symlink("tables", dir.path().join("link")).unwrap();
    write_dir(&dir.path().join("link"), |d| {
        std::fs::write(d.join("metadata"), "m").map_err(|e| panic!("{e}"))
    })
    .unwrap();
    assert!(is_link(&dir.path().join("link")));
    let metadata = std::fs::read(dir.path().join("tables/metadata")).unwrap();
    assert_eq!(metadata, b"m");
    assert_eq!(dir.entries(), ["link", "tables"]);
}

#[test]
fn an_output_name_of_up_to_255_bytes_is_written_with_a_temporary_name_that_fits() {
    let dir = TempDir::new("out-long-name");
    // Ends in multibyte characters: the kept prefix cuts none of them.
    let names = [
        "a".repeat(250),
        "b".repeat(255),
        "é".repeat(127),
        format!("{}{}", "c".repeat(NAME_PREFIX - 1), "é".repeat(80)),
    ];
    for name in &names {
        let target = dir.path().join(name);
        write_file(&target, |w| {
            let temps = hidden(dir.path());
            assert_eq!(temps.len(), 1, "{temps:?}");
            let temp = &temps[0];
            assert!(temp.len() <= 255, "{} bytes: {temp}", temp.len());
            assert!(temp.contains(&std::process::id().to_string()), "{temp}");
            // Valid UTF-8 (`hidden` is lossy): no character was cut.
            assert!(!temp.contains('\u{FFFD}'), "{temp}");
            w.write_all(b"long").map_err(|e| panic!("{e}"))
        })
        .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"long");
        let dir_target = dir.path().join(format!("{}.d", &name[..name.len() - 2]));
        write_dir(&dir_target, |d| {
            assert_eq!(hidden(dir.path()).len(), 1);
            std::fs::write(d.join("x"), "y").map_err(|e| panic!("{e}"))
        })
        .unwrap();
        assert!(dir_target.join("x").is_file());
    }
    assert!(hidden(dir.path()).is_empty());
}

/// A fake session directory at `dir`: its index and one chunk, each with
/// its magic (from ringtrace-session) and some bytes; the chunk's path.
fn session(dir: &Path) -> std::path::PathBuf {
    let cpu = dir.join("123-456/cpu0");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(dir.join("session"), b"RTSESSN\0index bytes").unwrap();
    let chunk = cpu.join("00000000.chunk");
    std::fs::write(&chunk, b"RTCHUNK\0chunk bytes").unwrap();
    chunk
}

/// The refusal of exporting `trace` to `out`, as text.
fn refusal(trace: &Recovery, format: Format, out: &Path) -> String {
    match export(trace, format, out) {
        Err(e @ ExportError::RingFile { .. }) => e.to_string(),
        other => panic!("{}: not refused: {other:?}", out.display()),
    }
}

#[test]
fn an_output_that_is_a_session_index_or_chunk_is_refused_and_left_alone() {
    let dir = TempDir::new("out-session-files");
    let trace = recovery(&dir.path().join("hd.ring"));
    let other = dir.path().join("other");
    let chunk = session(&other);
    let index = other.join("session");
    let said = refusal(&trace, Format::Text, &index);
    let real_index = std::fs::canonicalize(&index).unwrap();
    assert_eq!(
        said,
        format!(
            "refusing to export to {}: it is a ringtrace session index ({}): an export never replaces a session's files; name another file",
            index.display(),
            real_index.display()
        )
    );
    let said = refusal(&trace, Format::Chrome, &chunk);
    assert!(said.contains("it is a ringtrace session chunk ("), "{said}");
    // A chunk moved out of any session is still a chunk.
    let moved = dir.path().join("moved.chunk");
    std::fs::copy(&chunk, &moved).unwrap();
    let said = refusal(&trace, Format::Text, &moved);
    assert!(said.contains("it is a ringtrace session chunk ("), "{said}");
    // Through a link, too.
    let link = dir.path().join("link");
    symlink(&index, &link).unwrap();
    let said = refusal(&trace, Format::Text, &link);
    assert!(said.contains("it is a ringtrace session index ("), "{said}");
    assert_eq!(std::fs::read(&index).unwrap(), b"RTSESSN\0index bytes");
    assert_eq!(std::fs::read(&chunk).unwrap(), b"RTCHUNK\0chunk bytes");
    assert!(is_link(&link));
}

#[test]
fn an_output_anywhere_inside_another_session_is_refused() {
    let dir = TempDir::new("out-other-session");
    let trace = recovery(&dir.path().join("hd.ring"));
    let other = dir.path().join("other");
    session(&other);
    let real_other = std::fs::canonicalize(&other).unwrap();
    let before = std::fs::read_dir(&other).unwrap().count();
    let outside = dir.path().join("outside-link");
    symlink(other.join("via-link.txt"), &outside).unwrap();
    let cases = [
        (other.join("new.txt"), Format::Text),
        (other.join("123-456/cpu0/new.json"), Format::Chrome),
        (other.join("123-456/not-yet/deeper/x.txt"), Format::Text),
        (other.join("ctf"), Format::Ctf),
        (other.join("123-456/../x.txt"), Format::Text),
        (other.clone(), Format::Text),
        (outside, Format::Text),
    ];
    for (out, format) in cases {
        let said = refusal(&trace, format, &out);
        let expected = format!(
            "refusing to export to {}: it is inside the ringtrace session directory {} (it holds a session index): an export never writes into a session (it could replace its index or a chunk); name a path outside it",
            out.display(),
            real_other.display()
        );
        assert_eq!(said, expected);
    }
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), before);
    assert!(!other.join("via-link.txt").exists());
    assert!(!other.join("123-456/cpu0/new.json").exists());
}

#[test]
fn a_file_named_session_without_the_magic_makes_no_session() {
    let dir = TempDir::new("out-not-a-session");
    let trace = recovery(&dir.path().join("hd.ring"));
    std::fs::write(dir.path().join("session"), "notes about a session").unwrap();
    let out = dir.path().join("out.txt");
    export(&trace, Format::Text, &out).unwrap();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with("# ringtrace dump"));
}
