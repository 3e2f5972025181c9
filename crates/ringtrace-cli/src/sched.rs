//! Thread placement for the measuring commands: CPU pinning, nice levels
//! and SCHED_FIFO, each with an error that says what was refused and why.

use thiserror::Error;

/// A scheduling request the system refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SchedError {
    /// The nice level is outside -20..=19.
    #[error("nice level {0} is invalid: it must be from -20 to 19")]
    BadNice(i32),
    /// The FIFO priority is outside 0..=2 (0 means "not FIFO").
    #[error("FIFO priority {0} is invalid: use 0 (off), 1 or 2")]
    BadFifo(u8),
    /// The kernel said no.
    #[error("{what} was refused: {reason}")]
    Refused {
        /// What was asked.
        what: String,
        /// The kernel's reason, with a hint when it is a permission.
        reason: String,
    },
}

fn refused(what: String) -> SchedError {
    let err = std::io::Error::last_os_error();
    let hint =
        if err.raw_os_error() == Some(libc::EPERM) || err.raw_os_error() == Some(libc::EACCES) {
            " (this needs root or CAP_SYS_NICE)"
        } else {
            ""
        };
    SchedError::Refused {
        what,
        reason: format!("{err}{hint}"),
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<(), SchedError> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET with a CPU
    // below CPU_SETSIZE (checked) sets one bit of it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(SchedError::Refused {
                what: format!("pinning to CPU {cpu}"),
                reason: "CPU number out of range".into(),
            });
        }
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(refused(format!("pinning to CPU {cpu}")));
    }
    Ok(())
}

/// Sets the calling thread's nice level.
pub fn set_nice(nice: i32) -> Result<(), SchedError> {
    if !(-20..=19).contains(&nice) {
        return Err(SchedError::BadNice(nice));
    }
    // SAFETY: gettid has no preconditions; setpriority on our own thread id
    // changes only this thread's nice level.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if rc != 0 {
        return Err(refused(format!("nice {nice}")));
    }
    Ok(())
}

/// Puts the calling thread in SCHED_FIFO at `priority` (1 or 2); 0 does
/// nothing, as ring_buffer_benchmark's `*_fifo=0`.
pub fn set_fifo(priority: u8) -> Result<(), SchedError> {
    match priority {
        0 => Ok(()),
        1 | 2 => {
            let param = libc::sched_param {
                sched_priority: i32::from(priority),
            };
            // SAFETY: `param` is a valid sched_param; pid 0 is this thread.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
                return Err(refused(format!("SCHED_FIFO priority {priority}")));
            }
            Ok(())
        }
        other => Err(SchedError::BadFifo(other)),
    }
}
