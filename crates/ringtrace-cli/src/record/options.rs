//! What `ringtrace record` is asked to do, checked, and what it tells the
//! programs it starts.

use ringtrace_session::{SessionOptions, SessionWriter};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How the traced programs' writers behave when the recorder falls
/// behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedMode {
    /// New events are refused and counted, per CPU and cause.
    Discard,
    /// A writer waits up to this long for room, then counts a loss.
    Blocking(Duration),
    /// The oldest undrained events are overwritten and counted.
    Overwrite,
}

/// A recording's settings.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The session directory to make.
    pub output: PathBuf,
    /// The command to start (program, then arguments); empty with
    /// `attach`.
    pub command: Vec<OsString>,
    /// Ring files to drain instead of starting a command.
    pub attach: Option<Vec<PathBuf>>,
    /// The writers' mode.
    pub mode: RecordedMode,
    /// Bytes per CPU buffer of each program's ring (`None`: the
    /// program's own choice).
    pub buffer_size: Option<usize>,
    /// The clock every program stamps with (`None`: each program's own).
    pub clock: Option<String>,
    /// Chunks, rotation, retention, compression.
    pub session: SessionOptions,
    /// Print events as they are drained.
    pub live: bool,
    /// Keep each ring file once drained (removed by default).
    pub keep_rings: bool,
    /// Run the recorder under `SCHED_FIFO` at this priority (1 to 99; see
    /// [`super::priority`]); `None`: the normal policy.
    pub realtime: Option<u8>,
    /// Send the span trees to an OpenTelemetry collector as they are
    /// drained (`--endpoint`).
    #[cfg(feature = "otlp")]
    pub otlp: Option<ringtrace_otlp::OtlpOptions>,
}

impl RecordOptions {
    /// The environment the command starts with (see
    /// `ringtrace::TracerBuilder::from_env`).
    pub fn environment(&self, session: &SessionWriter) -> Vec<(&'static str, OsString)> {
        // Absolute: a command that changes directory (`sh -c 'cd /x &&
        // prog'`, a daemon's chdir("/")) still finds the session.
        let dir = std::path::absolute(session.dir()).unwrap_or_else(|_| session.dir().to_owned());
        let mut env: Vec<(&'static str, OsString)> =
            vec![(ringtrace::SESSION_ENV, dir.into_os_string())];
        let mode = match self.mode {
            RecordedMode::Discard => "discard".into(),
            RecordedMode::Overwrite => "overwrite".into(),
            RecordedMode::Blocking(wait) => format!("blocking:{}", wait.as_millis().max(1)),
        };
        env.push((ringtrace::SESSION_MODE_ENV, mode.into()));
        if let Some(bytes) = self.buffer_size {
            env.push((ringtrace::SESSION_BUFFER_ENV, bytes.to_string().into()));
        }
        if let Some(clock) = &self.clock {
            env.push((ringtrace::SESSION_CLOCK_ENV, clock.into()));
        }
        env
    }
}

/// A size in bytes: digits, then an optional `K`, `M` or `G` (binary).
///
/// ```
/// use ringtrace_cli::record::parse_size;
/// assert_eq!(parse_size("4M"), Ok(4 << 20));
/// assert_eq!(parse_size("512"), Ok(512));
/// assert!(parse_size("4X").unwrap_err().contains("K, M or G"));
/// assert!(parse_size("99999999999G").unwrap_err().contains("too large"));
/// ```
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("`{text}` is not a size: give bytes, optionally followed by K, M or G (binary multiples), as in 64M")
    };
    let (digits, shift) = match text.as_bytes().last() {
        Some(b'K' | b'k') => (&text[..text.len() - 1], 10),
        Some(b'M' | b'm') => (&text[..text.len() - 1], 20),
        Some(b'G' | b'g') => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    let too_large = || {
        format!(
            "`{text}` is too large: a size is at most {} bytes (16E)",
            u64::MAX
        )
    };
    let n: u64 = match digits.parse() {
        Ok(n) => n,
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => return Err(too_large()),
        Err(_) => return Err(bad()),
    };
    n.checked_mul(1u64 << shift).ok_or_else(too_large)
}
