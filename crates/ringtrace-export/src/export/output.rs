//! Writing an export so that a failure leaves no half-written output: the
//! file (or directory) is built under a temporary name beside the target
//! and renamed over it only when complete.

use super::ExportError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary name beside `target`: same directory, so the rename is
/// atomic; hidden, and marked with the pid.
fn temporary(target: &Path) -> Result<PathBuf, ExportError> {
    let name = target
        .file_name()
        .ok_or_else(|| ExportError::refused(target, "the output path names no file"))?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".ringtrace-{}.tmp", std::process::id()));
    Ok(target.with_file_name(tmp))
}

fn failed(path: &Path, e: std::io::Error) -> ExportError {
    ExportError::io(path, &e)
}

/// Writes the file `target` with `fill`, through a buffered writer on a
/// temporary file renamed over `target` once `fill` and the flush succeed.
/// On any error the temporary file is removed and `target` is untouched.
///
/// A `target` that exists and is not a regular file (a pipe, a terminal,
/// `/dev/stdout`, a device) is written in place, as `cat > target` would:
/// renaming over it would replace the device with a file. Its write and
/// flush errors (a closed pipe, a full device) are the export's.
pub fn write_file(
    target: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    if let Ok(meta) = std::fs::metadata(target) {
        if !meta.is_file() && !meta.is_dir() {
            return write_in_place(target, fill);
        }
    }
    let tmp = temporary(target)?;
    let result = (|| {
        let file = std::fs::File::create(&tmp).map_err(|e| failed(target, e))?;
        let mut out = std::io::BufWriter::new(file);
        fill(&mut out)?;
        let file = out
            .into_inner()
            .map_err(|e| failed(target, e.into_error()))?;
        file.sync_all().map_err(|e| failed(target, e))?;
        std::fs::rename(&tmp, target).map_err(|e| failed(target, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes a special file (pipe, device) directly: nothing to rename, and
/// nothing to sync (pipes refuse fsync).
fn write_in_place(
    target: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(target)
        .map_err(|e| failed(target, e))?;
    let mut out = std::io::BufWriter::new(file);
    fill(&mut out)?;
    out.flush().map_err(|e| failed(target, e))
}

/// Builds the directory `target` with `fill` (given the directory to fill),
/// under a temporary name renamed to `target` once complete. `target` must
/// not exist, or be an empty directory (replaced); on any error the
/// temporary directory is removed.
pub fn write_dir(
    target: &Path,
    fill: impl FnOnce(&Path) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    if let Ok(mut entries) = std::fs::read_dir(target) {
        if entries.next().is_some() {
            return Err(ExportError::refused(
                target,
                "the directory exists and is not empty",
            ));
        }
    } else if target.exists() {
        return Err(ExportError::refused(
            target,
            "it exists and is not a directory",
        ));
    }
    let tmp = temporary(target)?;
    let result = (|| {
        std::fs::create_dir(&tmp).map_err(|e| failed(target, e))?;
        fill(&tmp)?;
        if target.exists() {
            std::fs::remove_dir(target).map_err(|e| failed(target, e))?;
        }
        std::fs::rename(&tmp, target).map_err(|e| failed(target, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
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
