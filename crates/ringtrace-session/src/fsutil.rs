//! The file system steps a session takes: directories 0700 and files 0600
//! whatever the umask, files replaced by rename, the writer's lock.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every directory of a session.
pub(crate) const DIR_MODE: u32 = 0o700;
/// Mode of every file of a session.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Makes directory `path`, mode 0700 (set again after making it, so that
/// the umask does not matter). Fails if it exists.
pub(crate) fn mkdir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(path)?;
    fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
}

/// Creates file `path`, which must not exist, mode 0600, for writing; a
/// symbolic link there is refused.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// The temporary name `path` is built under before its rename.
pub(crate) fn temp_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes `bytes` to `path` by rename: a temporary file written and
/// renamed over `path`. A crash of the process (SIGKILL included) leaves
/// the old file or the new one, whole: the page cache keeps both. Nothing
/// is synced (see [`replace_durably`]). On failure the temporary file is
/// removed; the error names the path it was about.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> Result<(), (PathBuf, &'static str, io::Error)> {
    write_renamed(path, bytes, false)
}

/// As [`replace`], with the temporary file synced before its rename and
/// the directory after: a crash of the machine too leaves one of them.
pub(crate) fn replace_durably(
    path: &Path,
    bytes: &[u8],
) -> Result<(), (PathBuf, &'static str, io::Error)> {
    write_renamed(path, bytes, true)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

fn write_renamed(
    path: &Path,
    bytes: &[u8],
    sync: bool,
) -> Result<(), (PathBuf, &'static str, io::Error)> {
    let tmp = temp_name(path);
    let _ = fs::remove_file(&tmp); // left by a crash
    let written = (|| {
        let mut file = create_new(&tmp).map_err(|e| (tmp.clone(), "create", e))?;
        file.write_all(bytes)
            .map_err(|e| (tmp.clone(), "write", e))?;
        if sync {
            file.sync_all().map_err(|e| (tmp.clone(), "sync", e))?;
        }
        fs::rename(&tmp, path).map_err(|e| (path.to_owned(), "rename into place", e))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Syncs a directory, so that a rename in it survives a machine crash
/// (best effort: some file systems refuse, and the data is safe from a
/// process crash without it).
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Takes `file`'s exclusive lock without waiting: false when another
/// holds it. Held until the file is closed.
pub(crate) fn try_lock(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor this File owns and keeps open; no
    // memory is passed.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Whether `e` says the file system is full (or a quota is).
pub(crate) fn is_no_space(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}
