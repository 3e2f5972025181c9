//! The ring files of a session: the ones programs make in its `rings/`
//! directory as they start (found by looking again every few
//! milliseconds), and those named on the command line (`--attach`), each
//! opened to drain once its writer has set it up.

use ringtrace_ring::file::{FileError, LiveFile, WriterState};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a ring file may stay unopenable (still being set up, or not a
/// ring) before the recorder gives up on it and says why.
pub const SETUP_GRACE: Duration = Duration::from_secs(2);
/// How often the directory is read again. A look is a few system calls
/// (tens of microseconds); a recorder that drains in rounds back to back
/// would otherwise spend more time looking than draining.
pub const LOOK_EVERY: Duration = Duration::from_millis(5);

/// A ring file found but not yet opened.
#[derive(Debug)]
struct Pending {
    since: Instant,
    last_error: Option<String>,
}

/// What a look at the ring files found.
#[derive(Debug, Default)]
pub struct Found {
    /// Rings opened to drain, with the pid and start time their names
    /// give (for `--attach`ed files with other names: the header's pid, 0).
    pub opened: Vec<(LiveFile, u64)>,
    /// Ring files given up on, and why (one line each).
    pub refused: Vec<(PathBuf, String)>,
}

/// Finds ring files and opens them.
#[derive(Debug, Default)]
pub struct RingFinder {
    dir: Option<PathBuf>,
    named: Vec<PathBuf>,
    pending: HashMap<PathBuf, Pending>,
    done: std::collections::HashSet<PathBuf>,
    looked_at: Option<Instant>,
}

impl RingFinder {
    /// Watches `dir` (a session's `rings/`) for new ring files.
    pub fn watching(dir: &Path) -> RingFinder {
        RingFinder {
            dir: Some(dir.to_owned()),
            ..RingFinder::default()
        }
    }

    /// Opens exactly these files (`--attach`).
    pub fn named(files: Vec<PathBuf>) -> RingFinder {
        RingFinder {
            named: files,
            ..RingFinder::default()
        }
    }

    /// Whether every file named has been opened or refused, and none is
    /// waiting to be set up.
    pub fn settled(&self) -> bool {
        self.pending.is_empty() && self.named.iter().all(|p| self.done.contains(p))
    }

    /// Looks for ring files not seen yet and tries to open each, at most
    /// every [`LOOK_EVERY`] (finding nothing in between).
    pub fn look(&mut self) -> Found {
        if self.looked_at.is_some_and(|at| at.elapsed() < LOOK_EVERY) {
            return Found::default();
        }
        self.looked_at = Some(Instant::now());
        let mut candidates: Vec<PathBuf> = self.named.clone();
        if let Some(dir) = &self.dir {
            if let Ok(entries) = std::fs::read_dir(dir) {
                for entry in entries.flatten() {
                    let path = entry.path();
                    if path.extension().is_some_and(|e| e == "ring") {
                        candidates.push(path);
                    }
                }
            }
        }
        candidates.sort();
        let mut found = Found::default();
        for path in candidates {
            if self.done.contains(&path) {
                continue;
            }
            let pending = self.pending.entry(path.clone()).or_insert(Pending {
                since: Instant::now(),
                last_error: None,
            });
            match open(&path) {
                Ok(live) => {
                    self.pending.remove(&path);
                    self.done.insert(path.clone());
                    // A ring named otherwise (--attach): when it was
                    // opened, which tells two rings of one process apart.
                    let start = start_of(&path).unwrap_or(live.header().wall_ns);
                    found.opened.push((live, start));
                }
                Err(Retry::Later(why)) if pending.since.elapsed() < SETUP_GRACE => {
                    pending.last_error = Some(why);
                }
                Err(Retry::Later(why) | Retry::Never(why)) => {
                    self.pending.remove(&path);
                    self.done.insert(path.clone());
                    found.refused.push((path, why));
                }
            }
        }
        found
    }
}

/// Why a ring file did not open.
enum Retry {
    /// Perhaps still being made: look again.
    Later(String),
    /// It will not open.
    Never(String),
}

fn open(path: &Path) -> Result<LiveFile, Retry> {
    match LiveFile::open(path) {
        Ok(live)
            if matches!(
                live.writer(),
                WriterState::SettingUp | WriterState::Unknown(0)
            ) =>
        {
            Err(Retry::Later(format!(
                "{}: still being set up by its writer",
                path.display()
            )))
        }
        Ok(live) => Ok(live),
        // A file being made may be empty, short or without its header
        // yet; another drainer or a bad version will not change.
        Err(
            e @ (FileError::Empty { .. }
            | FileError::TruncatedHeader { .. }
            | FileError::NotRingtrace { .. }),
        ) => Err(Retry::Later(e.to_string())),
        Err(FileError::Mismatch { what, .. })
            if what.contains("bytes long") || what.contains("still setting it up") =>
        {
            Err(Retry::Later(format!("{}: {what}", path.display())))
        }
        Err(e) => Err(Retry::Never(e.to_string())),
    }
}

/// The start time a session ring's name (`PID-START.ring`) gives.
pub fn start_of(path: &Path) -> Option<u64> {
    let stem = path.file_stem()?.to_str()?;
    let (_, start) = stem.split_once('-')?;
    start.parse().ok()
}

/// A process's parent pid (`/proc/PID/stat`'s fourth field), while it runs.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a process other than this one has `path` mapped: the writer's
/// children forked with its ring go on writing into it after the writer
/// has exited. Reads each process's `/proc/PID/maps` (those this user may
/// read), so it is for the moment a ring's writer is gone, not each round.
pub fn mapped_elsewhere(path: &Path) -> bool {
    let Ok(path) = std::fs::canonicalize(path) else {
        return false;
    };
    let Some(path) = path.to_str() else {
        return false;
    };
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            return false;
        };
        pid != me
            && std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|maps| {
                maps.lines().any(|l| {
                    // The path is the line's last field, maybe `(deleted)`.
                    l.ends_with(path) || l.ends_with(&format!("{path} (deleted)"))
                })
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_another_process_maps_is_seen_and_one_nobody_maps_is_not() {
        let dir = ringtrace_testkit::TempDir::new("mapped-elsewhere");
        let path = dir.path().join("mapped");
        std::fs::write(&path, [0u8; 4096]).unwrap();
        assert!(!mapped_elsewhere(&path));
        // A child that maps it and waits: python, or skip where absent.
        let child = std::process::Command::new("python3")
            .args([
                "-c",
                "import mmap,sys,time\nf=open(sys.argv[1],'r+b')\nm=mmap.mmap(f.fileno(),4096)\nprint('ok',flush=True)\ntime.sleep(30)",
            ])
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            return;
        };
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        );
        let seen = mapped_elsewhere(&path);
        let _ = child.kill();
        let _ = child.wait();
        if line.trim() == "ok" {
            assert!(seen, "a child maps {}", path.display());
        }
    }

    #[test]
    fn a_session_ring_name_gives_its_start_time() {
        assert_eq!(start_of(Path::new("/s/rings/123-4567.ring")), Some(4567));
        assert_eq!(start_of(Path::new("/tmp/app.ring")), None);
    }

    #[test]
    fn this_process_has_a_parent() {
        assert!(parent_of(std::process::id()).is_some());
    }
}
