//! Writing an export so that a failure leaves no half-written output: the
//! file (or directory) is built under a temporary name beside the target
//! and renamed over it only when complete.
//!
//! What an output path leads to decides how it is written:
//!
//! - `-`, `/dev/stdout` (and `/dev/stderr`): the descriptor this process
//!   holds (fd 1 or 2), written directly, at its offset and in its append
//!   mode, as the shell set it up (`> x.txt`, `>> x.txt`, a pipe).
//! - A symbolic link: never replaced. It is followed (through a chain of
//!   links, a dangling one included) and what it leads to is written as
//!   below, the temporary file beside that target.
//! - A path under `/dev` or `/proc`, a character or block device, a FIFO,
//!   a socket: opened and written in place, as `cat > target` would; no
//!   temporary file, no rename (it would replace the node with a file, or
//!   fail: `/proc/self/fd/N` is no directory to put a file in).
//! - Anything else, a regular file or a new one: a temporary file beside
//!   it, renamed over it once complete.
//!
//! A temporary name is hidden, in the target's directory (so the rename is
//! atomic), marked with the pid and a counter, and short whatever the
//! target's name: at most [`NAME_PREFIX`] bytes of that name are kept.
//! While it exists it is registered with [`interrupt`](super::interrupt),
//! so that SIGINT, SIGTERM or SIGHUP ending the process removes it too;
//! one left by an export killed outright is removed by the next export to
//! the same output ([`stale`](super::stale)).

use super::interrupt::Temporary;
use super::ExportError;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use super::stale::NAME_PREFIX;
use super::stale::{prefix, remove_stale};
/// Symbolic links followed at the end of an output path before giving
/// up: the kernel's own limit (MAXSYMLINKS).
const MAX_LINKS: usize = 40;
/// Temporary names tried before giving up, each found taken (left by a
/// process of the same pid that died).
const MAX_ATTEMPTS: u32 = 100;

/// Where [`write_file`] writes.
#[derive(Debug)]
enum Destination {
    /// A duplicate of this process's fd 1 or 2: `-`, `/dev/stdout`,
    /// `/dev/stderr`.
    Descriptor(OwnedFd),
    /// A device, FIFO or socket, or a path under `/dev` or `/proc`.
    InPlace(PathBuf),
    /// A regular file or a new one: replaced by a rename.
    Replace(PathBuf),
}

fn failed(path: &Path, e: std::io::Error) -> ExportError {
    ExportError::io(path, &e)
}

/// Writes the file `target` with `fill`, through a buffered writer on a
/// temporary file renamed over `target` once `fill` and the flush succeed.
/// On any error the temporary file is removed and `target` is untouched.
///
/// `-` and `/dev/stdout` are this process's standard output, written
/// directly. A `target` that is a symbolic link is written through: what
/// it leads to is replaced, never the link. A device, a FIFO, a socket, or
/// any path under `/dev` or `/proc` is written in place, as
/// `cat > target` would: renaming over it would replace the node with a
/// file. Their write and flush errors (a closed pipe, a full device) are
/// the export's. Every error names `target` as given.
pub fn write_file(
    target: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    match destination(target)? {
        Destination::Descriptor(fd) => {
            // Whatever this process printed before comes first.
            std::io::stdout().flush().map_err(|e| failed(target, e))?;
            write_unsynced(target, std::fs::File::from(fd), fill)
        }
        Destination::InPlace(path) => write_in_place(target, &path, fill),
        Destination::Replace(path) => write_replacing(target, &path, fill),
    }
}

/// How [`write_file`] writes `target` (see the module's documentation).
fn destination(target: &Path) -> Result<Destination, ExportError> {
    if let Some(fd) = standard_stream(target) {
        return fd
            .map(Destination::Descriptor)
            .map_err(|e| failed(target, e));
    }
    // A directory (or a name ending in `/`, which only a directory can
    // have) is no file to write: said so, not as the rename's error.
    let slash = target.as_os_str().as_encoded_bytes().ends_with(b"/");
    let what = if std::fs::metadata(target).is_ok_and(|m| m.is_dir()) {
        Some("it is a directory")
    } else if slash {
        Some("a name ending in `/` names a directory")
    } else {
        None
    };
    if let Some(what) = what {
        return Err(ExportError::refused(
            target,
            format!("{what}, and this format writes one file: give the file's name"),
        ));
    }
    let path = follow_links(target)?;
    if is_system(&path) || is_special(&path) {
        Ok(Destination::InPlace(path))
    } else {
        Ok(Destination::Replace(path))
    }
}

/// A duplicate of fd 1 for `-` and `/dev/stdout` (fd 2 for
/// `/dev/stderr`): the same open file, so its offset and append mode are
/// the shell's, whatever it is (a file, a pipe, a socket, which opening
/// `/dev/stdout` anew would refuse). `None` for any other path.
fn standard_stream(target: &Path) -> Option<std::io::Result<OwnedFd>> {
    let bytes = target.as_os_str().as_bytes();
    match bytes {
        b"-" | b"/dev/stdout" | b"/dev/fd/1" | b"/proc/self/fd/1" => {
            Some(std::io::stdout().as_fd().try_clone_to_owned())
        }
        b"/dev/stderr" | b"/dev/fd/2" | b"/proc/self/fd/2" => {
            Some(std::io::stderr().as_fd().try_clone_to_owned())
        }
        _ => None,
    }
}

/// `path` with the symbolic links at its last component followed, each
/// link's relative target taken from the link's directory, as the kernel
/// would when opening it; a dangling link leads to the file it names. It
/// stops at a path under `/dev` or `/proc`, whose links (such as
/// `/proc/self/fd/1`, which may read `pipe:[…]`) name no file to write
/// beside. Only the last component: links among the directories need no
/// following, the temporary file is in the same directory either way.
pub(crate) fn follow_links(path: &Path) -> Result<PathBuf, ExportError> {
    let mut at = path.to_owned();
    for _ in 0..MAX_LINKS {
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link || is_system(&at) {
            return Ok(at);
        }
        let link = std::fs::read_link(&at).map_err(|e| failed(path, e))?;
        // `join` keeps an absolute `link` as it is.
        at = at.parent().unwrap_or(Path::new("")).join(link);
    }
    Err(ExportError::refused(
        path,
        format!(
            "it is a chain of more than {MAX_LINKS} symbolic links (a loop?); name the file itself"
        ),
    ))
}

/// Whether `path` (made absolute, not resolved) is under `/dev` or
/// `/proc`: nodes and views of the system, never replaced by a rename.
fn is_system(path: &Path) -> bool {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    absolute.starts_with("/dev") || absolute.starts_with("/proc")
}

/// Whether `path` exists and is neither a regular file nor a directory: a
/// device, a FIFO, a socket.
fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// A hidden name beside `path`, marked with the pid and a fresh counter:
/// same directory, so the rename is atomic. Only the first
/// [`NAME_PREFIX`] bytes of `path`'s name are kept (cut at a character's
/// start), so the name fits any file system's limit. Errors name `target`.
fn temporary(target: &Path, path: &Path) -> Result<PathBuf, ExportError> {
    /// Every temporary name this process made; Relaxed: only uniqueness
    /// matters, which the atomic increment gives on its own.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| ExportError::refused(target, "the output path names no file"))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = OsString::from(".");
    tmp.push(OsStr::from_bytes(prefix(name.as_bytes(), NAME_PREFIX)));
    tmp.push(format!(".ringtrace-{}-{n}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp))
}

/// Creates, with `create`, a new temporary file or directory beside
/// `path` and returns its name with what `create` made and its
/// registration, made before it (`register`): hold that until it is
/// renamed or removed. `create` must fail with `AlreadyExists` on a name
/// that is taken (`create_new`, `create_dir`): a stale temporary file is
/// never reused, nor a link planted at its name written through; the next
/// name is tried instead.
fn create_temporary<T>(
    target: &Path,
    path: &Path,
    register: fn(&Path) -> Temporary,
    create: impl Fn(&Path) -> std::io::Result<T>,
) -> Result<(PathBuf, T, Temporary), ExportError> {
    // What an export to this output killed earlier left.
    remove_stale(path);
    for _ in 0..MAX_ATTEMPTS {
        let tmp = temporary(target, path)?;
        let registered = register(&tmp);
        match create(&tmp) {
            Ok(made) => return Ok((tmp, made, registered)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed(target, e)),
        }
    }
    Err(ExportError::refused(
        target,
        format!("{MAX_ATTEMPTS} temporary names beside it were all taken"),
    ))
}

/// Writes `path` (what `target` leads to) by a temporary file renamed
/// over it; on any error the temporary file is removed.
fn write_replacing(
    target: &Path,
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let new_file = |tmp: &Path| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)
    };
    let (tmp, file, registered) = create_temporary(target, path, Temporary::file, new_file)?;
    let result = (|| {
        let mut out = std::io::BufWriter::new(file);
        fill(&mut out)?;
        let file = out
            .into_inner()
            .map_err(|e| failed(target, e.into_error()))?;
        file.sync_all().map_err(|e| failed(target, e))?;
        std::fs::rename(&tmp, path).map_err(|e| failed(target, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    // Renamed or removed: a signal from now on has nothing to remove.
    drop(registered);
    result
}

/// Writes a special file (pipe, device) or a path under `/dev` or `/proc`
/// directly, opened as `cat > path` opens it: created if absent,
/// truncated if a regular file (a pipe or a device ignores that). A FIFO
/// is waited on for a reader for at most [`FIFO_WAIT`], never forever.
fn write_in_place(
    target: &Path,
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    use std::os::unix::fs::FileTypeExt;
    let is_fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let file = if is_fifo {
        open_fifo(target, path)?
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| failed(target, e))?
    };
    write_unsynced(target, file, fill)
}

/// How long an export to a FIFO waits for the FIFO's reader: enough for
/// one started just after the export (`ringtrace export -o p & cat p`).
pub const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the FIFO `path` for writing once a reader has it open, polling
/// without blocking (a blocking open waits for a reader forever), then
/// makes it blocking again for the writes. Errors name `target`.
fn open_fifo(target: &Path, path: &Path) -> Result<std::fs::File, ExportError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = std::time::Instant::now() + FIFO_WAIT;
    let file = loop {
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path);
        match opened {
            Ok(file) => break file,
            // ENXIO: no process has the FIFO open for reading yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if std::time::Instant::now() >= deadline {
                    return Err(ExportError::refused(
                        target,
                        format!(
                            "it is a FIFO and no reader opened it within {} s; start the \
                             reader first (e.g. `cat FIFO`), or name a regular file",
                            FIFO_WAIT.as_secs()
                        ),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(failed(target, e)),
        }
    };
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is the open descriptor `file` owns for this whole
    // block; F_GETFL and F_SETFL only read and set its status flags.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !cleared {
        return Err(failed(target, std::io::Error::last_os_error()));
    }
    Ok(file)
}

/// Fills `file` through a buffer and flushes it: nothing to rename, and
/// nothing to sync (pipes refuse fsync).
fn write_unsynced(
    target: &Path,
    file: std::fs::File,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let mut out = std::io::BufWriter::new(file);
    fill(&mut out)?;
    out.flush().map_err(|e| failed(target, e))
}

/// Builds the directory `target` with `fill` (given the directory to fill),
/// under a temporary name renamed to `target` once complete. `target` must
/// not exist, or be an empty directory (replaced); a symbolic link is
/// followed, and what it leads to is built, never the link replaced. On
/// any error the temporary directory is removed.
pub fn write_dir(
    target: &Path,
    fill: impl FnOnce(&Path) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let path = follow_links(target)?;
    if let Ok(mut entries) = std::fs::read_dir(&path) {
        if entries.next().is_some() {
            return Err(ExportError::refused(
                target,
                "the directory exists and is not empty",
            ));
        }
    } else if path.exists() {
        return Err(ExportError::refused(
            target,
            "it exists and is not a directory",
        ));
    }
    let new_dir = |tmp: &Path| std::fs::create_dir(tmp);
    let (tmp, (), registered) = create_temporary(target, &path, Temporary::dir, new_dir)?;
    let result = (|| {
        fill(&tmp)?;
        if path.exists() {
            std::fs::remove_dir(&path).map_err(|e| failed(target, e))?;
        }
        std::fs::rename(&tmp, &path).map_err(|e| failed(target, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    drop(registered);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_export_leaves_neither_output_nor_temporary_file() {
        let dir = std::env::temp_dir().join(format!("ringtrace-export-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("t.out");
        let err = write_file(&target, |w| {
            w.write_all(b"half").unwrap();
            Err(ExportError::refused(&target, "stopped"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        write_file(&target, |w| {
            w.write_all(b"whole").map_err(|e| failed(&target, e))
        })
        .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn fifo(name: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("ringtrace-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        path
    }

    fn is_fifo(path: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).unwrap().file_type().is_fifo()
    }

    #[test]
    #[cfg_attr(miri, ignore = "makes a FIFO")]
    fn a_pipe_is_written_in_place_not_replaced_and_a_closed_one_is_an_error() {
        // A reader that takes everything: the export arrives whole.
        let path = fifo("export-pipe");
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || std::fs::read(path).unwrap())
        };
        write_file(&path, |w| {
            w.write_all(b"whole").map_err(|e| failed(&path, e))
        })
        .unwrap();
        assert_eq!(reader.join().unwrap(), b"whole");
        assert!(is_fifo(&path), "the pipe was replaced by a file");

        // A reader that leaves after one byte: the write fails (EPIPE; the
        // test harness ignores SIGPIPE, as Rust programs do), naming the path.
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut f = std::fs::File::open(path).unwrap();
                let _ = f.read(&mut [0u8; 1]);
            })
        };
        let err = write_file(&path, |w| {
            w.write_all(&vec![b'x'; 4 << 20])
                .map_err(|e| failed(&path, e))
        })
        .unwrap_err();
        reader.join().unwrap();
        assert!(err.to_string().contains("ringtrace-export-pipe"), "{err}");
        assert!(is_fifo(&path));
        std::fs::remove_file(&path).unwrap();
    }
}
