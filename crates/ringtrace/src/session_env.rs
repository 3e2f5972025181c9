//! What `ringtrace record` tells the programs it starts, through the
//! environment (inherited by their children): the session to record into
//! and how. [`TracerBuilder::from_env`](crate::TracerBuilder::from_env)
//! reads it.

use crate::error::TracerError;
use ringtrace_ring::Mode;
use std::path::PathBuf;
use std::time::Duration;

/// The session directory: a program puts its ring file in its `rings/`
/// subdirectory, where the recorder finds and drains it.
pub const SESSION_ENV: &str = "RINGTRACE_SESSION";
/// `discard` (the default), `blocking:MS` (writers wait up to MS
/// milliseconds for the recorder), or `overwrite` (a flight recorder: the
/// recorder drains what it reaches before writers come round).
pub const SESSION_MODE_ENV: &str = "RINGTRACE_SESSION_MODE";
/// Bytes per CPU buffer (an integer, optionally with a `K`, `M` or `G`
/// suffix for KiB, MiB and GiB).
pub const SESSION_BUFFER_ENV: &str = "RINGTRACE_SESSION_BUFFER";
/// The clock every process of the session stamps with, by name.
pub const SESSION_CLOCK_ENV: &str = "RINGTRACE_SESSION_CLOCK";

/// How a session asks a program's writers to behave when the recorder
/// falls behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionMode {
    Discard,
    Blocking(Duration),
    Overwrite,
}

/// The session settings found in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionEnv {
    pub dir: PathBuf,
    pub mode: SessionMode,
    pub buffer: Option<usize>,
    pub clock: Option<String>,
}

/// A session variable whose value means nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvProblem {
    pub var: &'static str,
    pub value: String,
    pub valid: String,
}

impl From<EnvProblem> for TracerError {
    fn from(p: EnvProblem) -> TracerError {
        TracerError::Environment {
            var: p.var,
            value: p.value,
            valid: p.valid,
        }
    }
}

fn bad(var: &'static str, value: &str, valid: &str) -> EnvProblem {
    EnvProblem {
        var,
        value: value.to_owned(),
        valid: valid.to_owned(),
    }
}

impl SessionEnv {
    /// The settings, `None` when no session is set (or it is empty).
    pub(crate) fn read() -> Result<Option<SessionEnv>, EnvProblem> {
        let found = Self::from_vars(|name| {
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        })?;
        // The directory as the recorder gave it, whatever its bytes.
        Ok(found.map(|mut env| {
            if let Some(dir) = std::env::var_os(SESSION_ENV) {
                env.dir = PathBuf::from(dir);
            }
            env
        }))
    }

    /// The settings from `get` (the environment, or a test's table).
    pub(crate) fn from_vars(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<SessionEnv>, EnvProblem> {
        let Some(dir) = get(SESSION_ENV).filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let mode = match get(SESSION_MODE_ENV).as_deref() {
            None | Some("") | Some("discard") => SessionMode::Discard,
            Some("overwrite") => SessionMode::Overwrite,
            Some(other) => {
                let valid =
                    "discard, overwrite, or blocking:MS (a wait of 1 to 60000 milliseconds)";
                let ms = other
                    .strip_prefix("blocking:")
                    .and_then(|ms| ms.parse::<u64>().ok())
                    .filter(|ms| (1..=60_000).contains(ms))
                    .ok_or_else(|| bad(SESSION_MODE_ENV, other, valid))?;
                SessionMode::Blocking(Duration::from_millis(ms))
            }
        };
        let buffer = match get(SESSION_BUFFER_ENV).filter(|b| !b.is_empty()) {
            None => None,
            Some(text) => Some(parse_size(&text).ok_or_else(|| {
                bad(
                    SESSION_BUFFER_ENV,
                    &text,
                    "bytes per CPU buffer: an integer, optionally followed by K, M or G",
                )
            })?),
        };
        Ok(Some(SessionEnv {
            dir: PathBuf::from(dir),
            mode,
            buffer,
            clock: get(SESSION_CLOCK_ENV).filter(|c| !c.is_empty()),
        }))
    }

    /// The ring file of this process: `rings/PID-START.ring`, START being
    /// the process's start time (so that a reused pid names a new file).
    pub(crate) fn ring_path(&self) -> PathBuf {
        let pid = std::process::id();
        self.dir
            .join("rings")
            .join(format!("{pid}-{}.ring", process_start(pid).unwrap_or(0)))
    }

    /// The ring mode this session asks for.
    pub(crate) fn ring_mode(&self) -> Mode {
        match self.mode {
            SessionMode::Overwrite => Mode::Overwrite,
            SessionMode::Discard | SessionMode::Blocking(_) => Mode::Discard,
        }
    }
}

/// `text` as a byte count: digits, then an optional `K`, `M` or `G`
/// (binary), as `ringtrace record --buffer-size` reads it.
fn parse_size(text: &str) -> Option<usize> {
    let units = [('K', 1usize << 10), ('M', 1 << 20), ('G', 1 << 30)];
    let (digits, unit) = units
        .iter()
        .find_map(|&(c, unit)| {
            text.strip_suffix([c, c.to_ascii_lowercase()])
                .map(|d| (d, unit))
        })
        .unwrap_or((text, 1));
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat`'s
/// 22nd field), which with its pid names it uniquely.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": fields after the comm's closing
    // parenthesis, the state being field 3.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<Option<SessionEnv>, TracerError> {
        Ok(env_vars(pairs)?)
    }

    fn env_vars(pairs: &[(&str, &str)]) -> Result<Option<SessionEnv>, EnvProblem> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SessionEnv::from_vars(|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn no_session_variable_means_no_session() {
        assert_eq!(env(&[]).unwrap(), None);
        assert_eq!(env(&[(SESSION_ENV, "")]).unwrap(), None);
    }

    #[test]
    fn the_mode_buffer_and_clock_are_read_and_bad_values_named() {
        let s = env(&[
            (SESSION_ENV, "/tmp/s"),
            (SESSION_MODE_ENV, "blocking:250"),
            (SESSION_BUFFER_ENV, "2M"),
            (SESSION_CLOCK_ENV, "mono"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.mode, SessionMode::Blocking(Duration::from_millis(250)));
        assert_eq!(
            (s.buffer, s.clock.as_deref()),
            (Some(2 << 20), Some("mono"))
        );
        assert_eq!(s.ring_mode(), Mode::Discard);
        for (var, value) in [
            (SESSION_MODE_ENV, "blocking"),
            (SESSION_MODE_ENV, "blocking:0"),
            (SESSION_MODE_ENV, "fast"),
            (SESSION_BUFFER_ENV, "lots"),
            (SESSION_BUFFER_ENV, "99999999999999999999M"),
        ] {
            let err = env(&[(SESSION_ENV, "/tmp/s"), (var, value)])
                .unwrap_err()
                .to_string();
            assert!(err.contains(var) && err.contains(value), "{err}");
        }
    }

    #[test]
    fn this_process_has_a_start_time() {
        assert!(process_start(std::process::id()).is_some());
        assert_eq!(process_start(u32::MAX), None);
    }
}
