//! A process that died while it set up its ring (killed between making
//! the ring file and opening the ring): it wrote nothing, since a tracer
//! hands out its ring only once set up, but it belongs in the session, so
//! that the session says it ran and how it ended rather than nothing.

use super::rings::Stillborn;
use super::spawn::Ended;
use super::RecordedProcess;
use ringtrace_session::{ProcessExit, ProcessInfo, SessionWriter};
use std::path::PathBuf;

/// What the recorder has said of the session's processes and ring files
/// beyond the rings it drains.
#[derive(Debug, Default)]
pub struct Noted {
    /// The processes in the session's order: `None` for the next ring
    /// drained, `Some` for one that died setting up its ring.
    pub order: Vec<Option<RecordedProcess>>,
    /// One line each: ring files not drained and why, clocks that do not
    /// compare, processes that died setting up their ring.
    pub lines: Vec<String>,
    /// The ring files those lines are about.
    pub reported: Vec<PathBuf>,
    /// Whether ring files are kept once their process is in the session.
    pub keep_rings: bool,
}

impl Noted {
    /// `path` is not drained, for `why`: said now, and in the summary.
    pub fn refused(&mut self, path: PathBuf, why: &str) {
        let line = format!("{}: not drained: {why}", path.display());
        eprintln!("ringtrace record: {line}");
        self.lines.push(line);
        self.reported.push(path);
    }

    /// `ring`'s process died setting it up (see [`note`]): said now, and
    /// in the summary; the process is in the session if its header was
    /// written.
    pub fn stillborn(
        &mut self,
        session: &SessionWriter,
        ring: Stillborn,
        exit: Option<Ended>,
    ) -> Result<(), String> {
        self.reported.push(ring.path.clone());
        let (process, line) = note(session, ring, exit, self.keep_rings)?;
        eprintln!("ringtrace record: {line}");
        self.lines.push(line);
        self.order.extend(process.map(Some));
        Ok(())
    }
}

/// Adds `ring`'s process to `session` with no events (when its header was
/// written: the session needs its geometry and clock), removes the ring
/// file unless it is to be kept, and says what happened in one line.
/// `exit`: how the process ended, when the recorder started it.
pub fn note(
    session: &SessionWriter,
    ring: Stillborn,
    exit: Option<Ended>,
    keep_ring: bool,
) -> Result<(Option<RecordedProcess>, String), String> {
    let how = match exit {
        Some(Ended::Code(code)) => ProcessExit::Exited(code),
        Some(Ended::Signal(sig)) => ProcessExit::Signaled(sig),
        None => ProcessExit::DiedWithRing,
    };
    let recorded = match ring.recovery {
        Some(recovery) => {
            let header = recovery.header;
            let comm = header.comm.clone();
            let clock = header.clock.name.clone();
            let info = ProcessInfo {
                pid: ring.pid,
                start: ring.start,
                // Gone: its parent is no longer known.
                ppid: 0,
                comm: comm.clone(),
                metadata: recovery.metadata.unwrap_or_default(),
                header,
            };
            let mut out = session.add_process(info).map_err(|e| e.to_string())?;
            out.finish(how).map_err(|e| e.to_string())?;
            Some(RecordedProcess {
                pid: ring.pid,
                comm,
                clock,
                exit: Some(how),
                ring: ring.path.clone(),
            })
        }
        None => None,
    };
    if !keep_ring {
        // Nothing was written to it (a file without a header yet is
        // empty or zeros): the session holds all there is.
        let _ = std::fs::remove_file(&ring.path);
    }
    let who = match &recorded {
        Some(p) => format!(
            "process {} ({})",
            p.pid,
            ringtrace_export::text::escape(&p.comm)
        ),
        None => format!("process {}", ring.pid),
    };
    let line = format!(
        "{}: {who} {how} before it had set up its ring: it recorded nothing",
        ring.path.display(),
        how = match how {
            ProcessExit::DiedWithRing => "died".to_owned(),
            other => other.to_string(),
        }
    );
    Ok((recorded, line))
}
