//! Temporary outputs left by an export that was killed (SIGKILL, a
//! crash: nothing ran to remove them), removed by the next export to the
//! same output.
//!
//! A temporary output's name says whose it is: hidden, beside the
//! output, the first bytes of the output's name, then the pid of the
//! process that made it (`.NAME.ringtrace-PID-N.tmp`, and the Parquet
//! export's `.NAME.tmp-PID`). One whose process no longer exists is
//! stale. One whose pid is alive is left alone, whichever process now
//! has that pid: a live export's temporary output is never touched.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The bytes of an output's name a temporary name keeps: enough to tell
/// whose it is, few enough that the whole name stays far below NAME_MAX
/// (255 bytes on Linux file systems) for any output name.
pub const NAME_PREFIX: usize = 64;

/// At most `max` bytes from the start of `name`, not cutting a UTF-8
/// character (a name that is not UTF-8 is cut where it is).
pub(crate) fn prefix(name: &[u8], max: usize) -> &[u8] {
    if name.len() <= max {
        return name;
    }
    let is_continuation = |b: u8| b & 0xC0 == 0x80;
    let mut end = max;
    while end > 0 && is_continuation(name[end]) {
        end -= 1;
    }
    &name[..end]
}

/// The pid a temporary name of `output` (a file name) carries, if `name`
/// is one: `.OUT.ringtrace-PID-N.tmp` or `.OUT.tmp-PID`, `OUT` the
/// output name's first [`NAME_PREFIX`] bytes.
fn temporary_pid(output: &[u8], name: &[u8]) -> Option<i32> {
    let stem = prefix(output, NAME_PREFIX);
    let rest = name.strip_prefix(b".")?.strip_prefix(stem)?;
    let digits = |b: &[u8]| -> Option<i32> {
        if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    };
    if let Some(pid) = rest.strip_prefix(b".tmp-") {
        return digits(pid);
    }
    let marks = rest.strip_prefix(b".ringtrace-")?.strip_suffix(b".tmp")?;
    let dash = marks.iter().position(|&b| b == b'-')?;
    digits(&marks[dash + 1..])?;
    digits(&marks[..dash])
}

/// Whether a process of `pid` exists (or may: one we may not signal).
fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return true; // never a pid of ours: left alone
    }
    // SAFETY: signal 0 checks only that the process exists and may be
    // signalled; nothing is sent.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes the stale temporary outputs beside `output` (a path whose
/// last component is the output's name), returning how many. Errors are
/// ignored: what cannot be removed stays as it was.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("stale-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// // Left by a process that no longer exists (pids never reach i32::MAX).
/// let left = dir.join(format!(".t.json.ringtrace-{}-0.tmp", i32::MAX));
/// std::fs::write(&left, b"half").unwrap();
/// let mine = dir.join(format!(".t.json.ringtrace-{}-0.tmp", std::process::id()));
/// std::fs::write(&mine, b"being written").unwrap();
/// let removed = ringtrace_export::export::stale::remove_stale(&dir.join("t.json"));
/// assert_eq!(removed, 1);
/// assert!(!left.exists() && mine.exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn remove_stale(output: &Path) -> usize {
    let Some(name) = output.file_name() else {
        return 0;
    };
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let file_name = entry.file_name();
        let Some(pid) = temporary_pid(name.as_bytes(), file_name.as_bytes()) else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let path = parent.join(OsStr::from_bytes(file_name.as_bytes()));
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(e) => Err(e),
        };
        removed += usize::from(gone.is_ok());
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_of_an_output_carry_their_pid() {
        assert_eq!(
            temporary_pid(b"t.json", b".t.json.ringtrace-42-7.tmp"),
            Some(42)
        );
        assert_eq!(temporary_pid(b"pq", b".pq.tmp-42"), Some(42));
        for other in [
            &b"t.json"[..],
            b".t.json.ringtrace-42-7.tmpx",
            b".t.json.ringtrace-x-7.tmp",
            b".t.json.ringtrace-42-.tmp",
            b".u.json.ringtrace-42-7.tmp",
            b".t.json.tmp-",
            b".t.json.tmp-4a",
        ] {
            assert_eq!(temporary_pid(b"t.json", other), None, "{other:?}");
        }
        let long = [b'a'; 100];
        let mut name = b".".to_vec();
        name.extend_from_slice(&long[..NAME_PREFIX]);
        name.extend_from_slice(b".ringtrace-9-0.tmp");
        assert_eq!(temporary_pid(&long, &name), Some(9));
    }

    #[test]
    fn this_process_is_alive() {
        assert!(alive(std::process::id() as i32));
    }
}
