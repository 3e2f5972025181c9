//! The session writer: makes the directory (or refuses it), adds
//! processes, writes the final index.

use crate::error::{CreateError, WriteError};
use crate::fsutil;
use crate::index::{Counters, IndexCpu, IndexProcess, RotatedOut};
use crate::options::SessionOptions;
use crate::process::{self, ProcessInfo};
use crate::process_writer::{self as pw, ProcessSummary, ProcessWriter};
use crate::shared::{Shared, INDEX, LOCK, RESERVE, RESERVE_LEN, RINGS};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Writes one session directory. Cheap to clone, `Send + Sync`: one
/// drainer thread per process can add its process and write it.
///
/// ```
/// use ringtrace_session::{SessionOptions, SessionWriter};
/// let parent = std::env::temp_dir().join(format!("ringtrace-doc-session-{}", std::process::id()));
/// # let _ = std::fs::remove_dir_all(&parent);
/// std::fs::create_dir(&parent)?;
/// let session = SessionWriter::create(parent.join("trace"), SessionOptions::default())?;
/// assert!(parent.join("trace/session").exists());
/// // A second writer is refused, naming the directory.
/// let again = SessionWriter::create(parent.join("trace"), SessionOptions::default());
/// assert!(again.unwrap_err().to_string().contains("holds a session already"));
/// session.finish()?;
/// # std::fs::remove_dir_all(&parent)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SessionWriter {
    shared: Arc<Shared>,
}

/// What a session's writers wrote, and did not.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionSummary {
    /// Each process, in the order added.
    pub processes: Vec<ProcessSummary>,
    /// What `max_size` deleted, over every process.
    pub rotated_out: RotatedOut,
}

impl SessionWriter {
    /// Makes session directory `dir` and takes its lock. `dir` must not
    /// exist (its parent must), or be an empty directory. Refused, with
    /// nothing written: a directory holding a session (its index or its
    /// lock), or any other file; a missing parent; a path that is not a
    /// directory; one the writer may not write in; options out of range.
    pub fn create(
        dir: impl AsRef<Path>,
        options: SessionOptions,
    ) -> Result<SessionWriter, CreateError> {
        options.check()?;
        let dir = dir.as_ref().to_owned();
        let made = prepare(&dir)?;
        match populate(&dir, options) {
            Ok(shared) => Ok(SessionWriter {
                shared: Arc::new(shared),
            }),
            Err(e) => {
                if made {
                    let _ = fs::remove_dir_all(&dir);
                } else {
                    for name in [INDEX, RINGS, RESERVE, LOCK] {
                        let p = dir.join(name);
                        let _ = fs::remove_file(&p).or_else(|_| fs::remove_dir_all(&p));
                    }
                    let _ = fs::remove_file(fsutil::temp_name(&dir.join(INDEX)));
                }
                Err(e)
            }
        }
    }

    /// The session's directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The directory traced programs create their ring files in
    /// (`DIR/rings`, mode 0700).
    pub fn rings_dir(&self) -> PathBuf {
        self.shared.dir.join(RINGS)
    }

    /// Adds a process: makes its directory `<pid>-<start>`, writes its
    /// description and metadata, and names it in the index. The header's
    /// `metadata_checksum` is recorded as the metadata's own checksum.
    pub fn add_process(&self, mut info: ProcessInfo) -> Result<ProcessWriter, WriteError> {
        let name = info.dir_name();
        let h = &info.header;
        if !(64..=65_536).contains(&h.page_size) || !h.page_size.is_power_of_two() {
            return Err(WriteError::InvalidHeader {
                why: format!("page size {}: a power of two from 64 to 65536", h.page_size),
                name,
            });
        }
        if !(1..=4096).contains(&h.cpus) {
            return Err(WriteError::InvalidHeader {
                why: format!("{} CPUs: 1 to 4096", h.cpus),
                name,
            });
        }
        info.header.metadata_checksum = fsutil_checksum(&info.metadata);
        let mut state = self.shared.state();
        if state.index.finished {
            return Err(WriteError::Finished {
                what: "the session".into(),
            });
        }
        if state.index.processes.iter().any(|p| p.dir_name == name) {
            return Err(WriteError::ProcessExists { name });
        }
        let dir = self.shared.dir.join(&name);
        let made = (|| {
            fsutil::mkdir(&dir).map_err(|e| (dir.clone(), "create", e))?;
            fsutil::replace(&dir.join("metadata"), &info.metadata)?;
            fsutil::replace(&dir.join("process"), &process::encode(&info, None, None))?;
            let annex = dir.join("annex");
            fsutil::create_new(&annex).map_err(|e| (annex.clone(), "create", e))
        })();
        let annex = match made {
            Ok(annex) => annex,
            Err((path, op, e)) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(pw::write_error(path, op, e, Default::default()));
            }
        };
        let number = state.index.processes.len();
        state.index.processes.push(IndexProcess {
            dir_name: name,
            pid: info.pid,
            start: info.start,
            finished: false,
            metadata_records: 0,
            unwritten_metadata_records: 0,
            cpus: vec![IndexCpu::default(); info.header.cpus],
        });
        if let Err(e) = self.shared.write_index(&state) {
            state.index.processes.pop();
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        drop(state);
        Ok(pw::new(self.shared.clone(), number, info, dir, annex))
    }

    /// What was written so far, per process.
    pub fn summary(&self) -> SessionSummary {
        let state = self.shared.state();
        let processes: Vec<ProcessSummary> =
            state.index.processes.iter().map(pw::summary_of).collect();
        let mut rotated_out = RotatedOut::default();
        for p in &state.index.processes {
            let mut t = Counters::default();
            for c in &p.cpus {
                t.add(&c.counters);
            }
            rotated_out.add(&t.rotated_out);
        }
        SessionSummary {
            processes,
            rotated_out,
        }
    }

    /// Writes the final index, marked finished, and returns what was
    /// written, and lets the session's lock go. Finish each
    /// [`ProcessWriter`] first: a process not finished keeps its open
    /// chunks, read as a crashed writer's are. Further calls (from clones)
    /// are refused.
    pub fn finish(&self) -> Result<SessionSummary, WriteError> {
        {
            let mut state = self.shared.state();
            if state.index.finished {
                return Err(WriteError::Finished {
                    what: "the session".into(),
                });
            }
            state.index.finished = true;
            if let Err(e) = self.shared.write_index(&state) {
                state.index.finished = false;
                return Err(e);
            }
        }
        self.shared.unlock();
        Ok(self.summary())
    }
}

fn fsutil_checksum(bytes: &[u8]) -> u64 {
    crate::codec::fnv1a64(bytes)
}

/// Checks `dir` (and makes it when absent): returns whether it was made.
fn prepare(dir: &Path) -> Result<bool, CreateError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    // A symbolic link the user named is followed (a session on another
    // disk); links inside the session are never made nor followed.
    // A link to nothing is not a directory (its own metadata says so).
    let named = fs::symlink_metadata(dir).map(|m| match m.file_type().is_symlink() {
        true => fs::metadata(dir).unwrap_or(m),
        false => m,
    });
    match named {
        Ok(m) if m.is_dir() => {
            check_empty(dir)?;
            return Ok(false);
        }
        Ok(_) => {
            return Err(CreateError::NotADirectory {
                path: dir.to_owned(),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(CreateError::NotADirectory { path: parent });
        }
        Err(e) => {
            return Err(CreateError::Io {
                path: dir.to_owned(),
                op: "inspect",
                source: e,
            })
        }
    }
    match fs::metadata(&parent) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(CreateError::NotADirectory { path: parent }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(CreateError::MissingParent {
                dir: dir.to_owned(),
                parent,
            })
        }
        Err(e) => {
            return Err(CreateError::Io {
                path: parent,
                op: "inspect",
                source: e,
            })
        }
    }
    fsutil::mkdir(dir).map_err(|e| create_error(&parent, dir, "create", e))?;
    Ok(true)
}

/// An error of a step in `dir` (whose parent is `parent`).
fn create_error(unwritable: &Path, path: &Path, op: &'static str, e: io::Error) -> CreateError {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM | libc::EROFS) => CreateError::Unwritable {
            path: unwritable.to_owned(),
            source: e,
        },
        Some(libc::ENOTDIR) => CreateError::NotADirectory {
            path: unwritable.to_owned(),
        },
        _ => CreateError::Io {
            path: path.to_owned(),
            op,
            source: e,
        },
    }
}

fn check_empty(dir: &Path) -> Result<(), CreateError> {
    let entries = fs::read_dir(dir).map_err(|e| create_error(dir, dir, "list", e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names.iter().any(|n| n == INDEX) {
        return Err(CreateError::ExistingSession {
            dir: dir.to_owned(),
            what: "a session index",
        });
    }
    if names.iter().any(|n| n == LOCK) {
        return Err(CreateError::ExistingSession {
            dir: dir.to_owned(),
            what: "a session lock",
        });
    }
    match names.into_iter().next() {
        Some(entry) => Err(CreateError::NotEmpty {
            dir: dir.to_owned(),
            entry,
        }),
        None => Ok(()),
    }
}

/// Takes the lock, makes `rings/`, writes the first index.
fn populate(dir: &Path, options: SessionOptions) -> Result<Shared, CreateError> {
    let lock_path = dir.join(LOCK);
    let lock = fsutil::create_new(&lock_path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            CreateError::ExistingSession {
                dir: dir.to_owned(),
                what: "a session lock",
            }
        } else {
            create_error(dir, &lock_path, "create", e)
        }
    })?;
    match fsutil::try_lock(&lock) {
        Ok(true) => {}
        Ok(false) => {
            return Err(CreateError::ExistingSession {
                dir: dir.to_owned(),
                what: "a session lock",
            })
        }
        Err(e) => {
            return Err(CreateError::Io {
                path: lock_path,
                op: "lock",
                source: e,
            })
        }
    }
    let rings = dir.join(RINGS);
    fsutil::mkdir(&rings).map_err(|e| create_error(dir, &rings, "create", e))?;
    let reserve = dir.join(RESERVE);
    fsutil::create_new(&reserve)
        .and_then(|f| std::io::Write::write_all(&mut &f, &[0; RESERVE_LEN]))
        .map_err(|e| create_error(dir, &reserve, "write", e))?;
    fs::set_permissions(
        dir,
        std::os::unix::fs::PermissionsExt::from_mode(fsutil::DIR_MODE),
    )
    .map_err(|e| create_error(dir, dir, "set the mode of", e))?;
    let shared = Shared::new(dir.to_owned(), options, lock);
    shared.write_index(&shared.state()).map_err(|e| match e {
        WriteError::Io { path, op, source } => create_error(dir, &path, op, source),
        other => CreateError::Io {
            path: dir.join(INDEX),
            op: "write",
            source: io::Error::other(other.to_string()),
        },
    })?;
    Ok(shared)
}
