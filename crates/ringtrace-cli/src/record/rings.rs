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
    /// Rings whose process died before it had set them up.
    pub stillborn: Vec<Stillborn>,
}

/// A ring file whose process died while it set the ring up (killed
/// between making the file and opening the ring). A tracer hands out its
/// ring only once set up, so nothing was ever written to it.
#[derive(Debug)]
pub struct Stillborn {
    /// The ring file.
    pub path: PathBuf,
    /// The process, as the file's name (`PID-START.ring`) gives it.
    pub pid: u32,
    /// Its start time, from the name.
    pub start: u64,
    /// What the file holds, when its header was written: its geometry
    /// and clock, for the session's list of processes.
    pub recovery: Option<ringtrace_ring::file::Recovery>,
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
            let mut opened = open(&path);
            if matches!(opened, Err(Retry::SettingUp(_))) && writer_gone(&path) {
                // Looked at again now that its process is known gone: set
                // up just before it died, it opens (and is recovered as
                // any ring whose writer died).
                opened = match open(&path) {
                    Err(Retry::SettingUp(_)) => Err(Retry::Stillborn),
                    other => other,
                };
            }
            match opened {
                Ok(live) => {
                    self.pending.remove(&path);
                    self.done.insert(path.clone());
                    // A ring named otherwise (--attach): when it was
                    // opened, which tells two rings of one process apart.
                    let start = start_of(&path).unwrap_or(live.header().wall_ns);
                    found.opened.push((live, start));
                }
                Err(Retry::Stillborn) => {
                    self.pending.remove(&path);
                    self.done.insert(path.clone());
                    // Named `PID-START.ring`, as `writer_gone` asked.
                    found.stillborn.push(Stillborn {
                        pid: pid_of(&path).unwrap_or(0),
                        start: start_of(&path).unwrap_or(0),
                        recovery: ringtrace_ring::file::recover(&path).ok(),
                        path,
                    });
                }
                Err(Retry::Later(why) | Retry::SettingUp(why))
                    if pending.since.elapsed() < SETUP_GRACE =>
                {
                    pending.last_error = Some(why);
                }
                Err(Retry::Later(why) | Retry::SettingUp(why) | Retry::Never(why)) => {
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
    /// Being set up by its writer, as far as can be told: empty, zeros
    /// where its header goes, or its status word not yet open.
    SettingUp(String),
    /// Perhaps still being made: look again.
    Later(String),
    /// Being set up, and its process is gone: it never will be.
    Stillborn,
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
            Err(Retry::SettingUp(format!(
                "{}: still being set up by its writer",
                path.display()
            )))
        }
        Ok(live) => Ok(live),
        Err(e @ FileError::Empty { .. }) => Err(Retry::SettingUp(e.to_string())),
        // Sized but its header not yet written: zeros. Anything else
        // there is another program's file (or one still being copied).
        Err(e @ (FileError::TruncatedHeader { .. } | FileError::NotRingtrace { .. })) => {
            if starts_with_zeros(path) {
                Err(Retry::SettingUp(e.to_string()))
            } else {
                Err(Retry::Later(e.to_string()))
            }
        }
        Err(FileError::Mismatch { what, .. }) if what.contains("still setting it up") => {
            Err(Retry::SettingUp(format!("{}: {what}", path.display())))
        }
        // A file being copied in may be short for a while; another
        // drainer or a bad version will not change.
        Err(FileError::Mismatch { what, .. }) if what.contains("bytes long") => {
            Err(Retry::Later(format!("{}: {what}", path.display())))
        }
        Err(e) => Err(Retry::Never(e.to_string())),
    }
}

/// Whether `path`'s first page (or all of it, if shorter) is zeros, as a
/// ring file is between being sized and its header being written.
fn starts_with_zeros(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(4096);
    file.take(4096).read_to_end(&mut head).is_ok() && head.iter().all(|&b| b == 0)
}

/// Whether the process that makes the session ring `path` (named
/// `PID-START.ring`) is known to be gone: no process of that pid and
/// start time runs (a zombie counts as gone). A file named otherwise says
/// nothing of its writer: never gone.
fn writer_gone(path: &Path) -> bool {
    let (Some(pid), Some(start)) = (pid_of(path), start_of(path)) else {
        return false;
    };
    !running(pid, start)
}

/// Whether process `pid`, started at `start` (`/proc/PID/stat` field 22;
/// 0: any start), runs and is not a zombie.
fn running(pid: u32, start: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return true;
    };
    let mut fields = rest.split_whitespace();
    if matches!(fields.next(), Some("Z" | "X" | "x")) {
        return false;
    }
    // Field 22, the 20th after the state.
    start == 0 || fields.nth(18).and_then(|f| f.parse::<u64>().ok()) == Some(start)
}

/// The pid a session ring's name (`PID-START.ring`) gives.
pub fn pid_of(path: &Path) -> Option<u32> {
    let stem = path.file_stem()?.to_str()?;
    let (pid, start) = stem.split_once('-')?;
    start.parse::<u64>().ok()?;
    pid.parse().ok()
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
    fn a_session_ring_name_gives_its_pid() {
        assert_eq!(pid_of(Path::new("/s/rings/123-4567.ring")), Some(123));
        assert_eq!(pid_of(Path::new("/tmp/app-x.ring")), None);
        assert_eq!(pid_of(Path::new("/tmp/app.ring")), None);
    }

    #[test]
    fn this_process_runs_and_a_reaped_child_does_not() {
        let me = std::process::id();
        let start = ringtrace::process_start(me).unwrap();
        assert!(running(me, start));
        assert!(running(me, 0));
        assert!(
            !running(me, start + 1),
            "another start time is another process"
        );
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!running(pid, 0));
    }

    #[test]
    fn this_process_has_a_parent() {
        assert!(parent_of(std::process::id()).is_some());
    }
}
