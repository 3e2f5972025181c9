//! Removing a temporary output from a signal handler: async-signal-safe
//! system calls only (`unlink`, `open`, `getdents64`, `unlinkat`,
//! `close`, `rmdir`), a buffer on the stack, no allocation, no lock, no
//! panic.
//!
//! A directory is emptied, then removed. `readdir` is not async-signal-safe
//! (`opendir` allocates), so its entries are read with the `getdents64`
//! system call (Linux; elsewhere a directory is removed only if already
//! empty). Each entry is unlinked, or, if it is a directory, removed when
//! empty: the exports' temporary directories are flat (CTF's metadata and
//! streams, Parquet's tables). A symbolic link at the path is unlinked,
//! never followed. Failures are ignored: a path already gone (renamed into
//! place just before the signal) leaves nothing to do.
// Elsewhere than Linux, the getdents64 walk is left unused.
#![cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]

use std::ffi::CStr;

/// Times a directory is emptied and removal tried: more than once, in
/// case another thread, still writing, adds a file meanwhile.
const ROUNDS: usize = 4;
/// Where a getdents64 record's length (2 bytes) starts.
const LENGTH_AT: usize = 16;
/// Where a getdents64 record's name starts.
const NAME_AT: usize = 19;

/// Unlinks the file `path`.
pub(super) fn file(path: &CStr) {
    // SAFETY: `path` is NUL-terminated; unlink is async-signal-safe.
    unsafe { libc::unlink(path.as_ptr()) };
}

/// Removes the directory `path` with the files in it.
pub(super) fn dir(path: &CStr) {
    for _ in 0..ROUNDS {
        if !empty(path) {
            break;
        }
        // SAFETY: `path` is NUL-terminated; rmdir is async-signal-safe.
        if unsafe { libc::rmdir(path.as_ptr()) } == 0 {
            return;
        }
    }
    // SAFETY: as above: an empty directory (or one where getdents64 is
    // not available) is removed; any other is left.
    unsafe { libc::rmdir(path.as_ptr()) };
}

/// Unlinks every entry of the directory `path`; false if it cannot be
/// opened as one (gone, a link, a file).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn empty(path: &CStr) -> bool {
    /// getdents64's buffer: its records are 8-byte aligned.
    #[repr(C, align(8))]
    struct Buffer([u8; 4096]);
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `path` is NUL-terminated; open is async-signal-safe.
    let fd = unsafe { libc::open(path.as_ptr(), flags) };
    if fd < 0 {
        return false;
    }
    let mut buffer = Buffer([0; 4096]);
    loop {
        let (at, len) = (buffer.0.as_mut_ptr(), buffer.0.len());
        // SAFETY: `fd` is open, `at` is writable for `len` bytes; the
        // system call writes at most that, and has no user-space state.
        let read = unsafe { libc::syscall(libc::SYS_getdents64, fd, at, len) };
        let Some(records) = usize::try_from(read).ok().and_then(|n| buffer.0.get(..n)) else {
            break;
        };
        if records.is_empty() {
            break;
        }
        names(records, |name| {
            // SAFETY: `fd` is open and `name` NUL-terminated; unlinkat is
            // async-signal-safe. A directory refuses the first (EISDIR)
            // and is removed by the second if empty.
            unsafe {
                if libc::unlinkat(fd, name.as_ptr(), 0) != 0 {
                    libc::unlinkat(fd, name.as_ptr(), libc::AT_REMOVEDIR);
                }
            }
        });
    }
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    true
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn empty(_path: &CStr) -> bool {
    false
}

/// Calls `each` with the name of every record of a getdents64 buffer but
/// `.` and `..`. A record (`struct linux_dirent64`) is the inode (8
/// bytes), the next offset (8), its own length (2), the type (1), then
/// the NUL-terminated name, padded. A malformed record ends the walk.
fn names(mut records: &[u8], mut each: impl FnMut(&CStr)) {
    while let Some(length) = records.get(LENGTH_AT..LENGTH_AT + 2) {
        let length = <[u8; 2]>::try_from(length).map_or(0, u16::from_ne_bytes);
        let length = usize::from(length);
        // A length below NAME_AT (0 included) gives no name: the walk ends.
        let (Some(name), Some(rest)) = (records.get(NAME_AT..length), records.get(length..)) else {
            return;
        };
        if let Ok(name) = CStr::from_bytes_until_nul(name) {
            if !matches!(name.to_bytes(), b"." | b"..") {
                each(name);
            }
        }
        records = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    fn record(name: &str) -> Vec<u8> {
        let length = (NAME_AT + name.len() + 1).next_multiple_of(8);
        let mut r = vec![0u8; length];
        r[LENGTH_AT..LENGTH_AT + 2].copy_from_slice(&(length as u16).to_ne_bytes());
        r[NAME_AT..NAME_AT + name.len()].copy_from_slice(name.as_bytes());
        r
    }

    fn collect(records: &[u8]) -> Vec<String> {
        let mut seen = Vec::new();
        names(records, |n| seen.push(n.to_str().unwrap().to_owned()));
        seen
    }

    #[test]
    fn records_give_their_names_but_the_dot_entries_and_stop_at_a_bad_one() {
        let mut buf = [record("."), record(".."), record("metadata"), record("s0")].concat();
        assert_eq!(collect(&buf), ["metadata", "s0"]);
        // A zero length, a length past the end, a cut record: the walk ends.
        let good = buf.len();
        buf.extend(record("lost"));
        buf[good + LENGTH_AT..good + LENGTH_AT + 2].copy_from_slice(&0u16.to_ne_bytes());
        assert_eq!(collect(&buf), ["metadata", "s0"]);
        buf[good + LENGTH_AT..good + LENGTH_AT + 2].copy_from_slice(&4096u16.to_ne_bytes());
        assert_eq!(collect(&buf), ["metadata", "s0"]);
        assert_eq!(collect(&buf[..good + 17]), ["metadata", "s0"]);
        assert!(collect(&[]).is_empty());
    }

    #[test]
    fn a_directory_of_many_files_is_removed_and_a_link_is_not_followed() {
        let base = std::env::temp_dir().join(format!("ringtrace-remove-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join(".out.tmp");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        // More than one 4 KiB buffer of names.
        for i in 0..300 {
            std::fs::write(dir.join(format!("stream-with-a-long-name-{i:04}")), b"x").unwrap();
        }
        let c = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        let kept = base.join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("file"), b"x").unwrap();
        let link = base.join(".link.tmp");
        std::os::unix::fs::symlink(&kept, &link).unwrap();
        super::dir(&c(&dir));
        super::dir(&c(&link));
        assert!(!dir.exists());
        assert!(kept.join("file").exists(), "the link was followed");
        file(&c(&link));
        assert!(std::fs::symlink_metadata(&link).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
