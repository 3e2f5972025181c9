//! `local`: the platform's fastest per-CPU counter, the kernel's
//! `trace_clock_local()` (which is `sched_clock()`).

use super::{Cntvct, MonoRaw, Tsc};
use crate::{Clock, ClockError, ClockInfo};

/// What backs [`Local`] on this machine.
#[derive(Debug, Clone, Copy)]
enum Backing {
    Tsc(Tsc),
    Cntvct(Cntvct),
    MonoRaw(MonoRaw),
}

/// The fastest per-CPU counter here: `tsc` on x86_64 with a trustworthy
/// TSC, `cntvct` on aarch64, `mono-raw` (through the vDSO) otherwise.
///
/// ```
/// use ringtrace_clock::{Clock, Local};
/// let local = Local::new().unwrap();
/// println!("local is {}", local.backing());
/// assert!(local.read() > 0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Local {
    backing: Backing,
}

impl Local {
    /// Picks the fastest counter that works here.
    pub fn new() -> Result<Local, ClockError> {
        let backing = if let Ok(tsc) = Tsc::new() {
            Backing::Tsc(tsc)
        } else if let Ok(cntvct) = Cntvct::new() {
            Backing::Cntvct(cntvct)
        } else {
            Backing::MonoRaw(MonoRaw::try_new()?)
        };
        Ok(Local { backing })
    }

    /// The name of the source that backs `local` here.
    pub fn backing(&self) -> &'static str {
        match self.backing {
            Backing::Tsc(_) => "tsc",
            Backing::Cntvct(_) => "cntvct",
            Backing::MonoRaw(_) => "mono-raw",
        }
    }
}

impl Clock for Local {
    #[inline(always)]
    fn read(&self) -> u64 {
        match &self.backing {
            Backing::Tsc(c) => c.read(),
            Backing::Cntvct(c) => c.read(),
            Backing::MonoRaw(c) => c.read(),
        }
    }

    fn info(&self) -> ClockInfo {
        let mut info = match &self.backing {
            Backing::Tsc(c) => c.info(),
            Backing::Cntvct(c) => c.info(),
            Backing::MonoRaw(c) => c.info(),
        };
        info.name = "local".to_owned();
        info
    }
}
