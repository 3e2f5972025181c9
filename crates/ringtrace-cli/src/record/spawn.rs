//! The traced command: started with the session in its environment (its
//! children inherit it), reaped when it exits, and sent the stop signal
//! the recorder got.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Code(code) => write!(f, "exited with code {code}"),
            Ended::Signal(sig) => write!(f, "killed by signal {sig} ({})", signal_name(*sig)),
        }
    }
}

/// The name of signal `sig` (`SIGKILL`), or `signal N`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_owned()
}

/// The command the recorder started.
#[derive(Debug)]
pub struct Traced {
    child: Child,
    ended: Option<Ended>,
}

impl Traced {
    /// Starts `argv` (program, then arguments) with `env` added to the
    /// recorder's environment. An empty command or one that cannot be
    /// started is an error naming it.
    pub fn start(argv: &[OsString], env: &[(&str, OsString)]) -> Result<Traced, String> {
        let Some((program, args)) = argv.split_first() else {
            return Err("no command to run: give one after `--`, as in `ringtrace record -o trace -- ./my-program`".into());
        };
        let mut command = Command::new(program);
        command.args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command.spawn().map_err(|e| {
            format!(
                "cannot start {}: {e}",
                std::path::Path::new(program).display()
            )
        })?;
        Ok(Traced { child, ended: None })
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, once it has (reaped then; never blocks).
    pub fn ended(&mut self) -> Option<Ended> {
        if self.ended.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.ended = Some(match (status.code(), status.signal()) {
                    (Some(code), _) => Ended::Code(code),
                    (None, Some(sig)) => Ended::Signal(sig),
                    (None, None) => Ended::Code(-1),
                });
            }
        }
        self.ended
    }

    /// Sends it `sig`, unless it has ended.
    pub fn signal(&mut self, sig: i32) {
        if self.ended().is_none() {
            if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
                // SAFETY: kill(2) on our own child, which we have not
                // reaped (so the pid is still its).
                unsafe { libc::kill(pid, sig) };
            }
        }
    }
}
