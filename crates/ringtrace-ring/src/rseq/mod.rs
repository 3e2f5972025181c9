//! The write path: restartable sequences (rseq) on the owning CPU, or
//! compare-and-swap from anywhere.
//!
//! A CPU buffer's writers change three words per event: the `(write,
//! last_ts)` state, the page's commit word and the `hit` count. On the
//! **CAS path** they do it with `lock cmpxchg16b`, `lock xadd` and
//! `lock inc`, correct from any CPU. On the **rseq path** a writer running
//! on the buffer's own CPU does each in a restartable sequence that ends
//! in one plain store (see [`section`](self)): the kernel restarts the
//! sequence if the writer is preempted, migrated or interrupted by a
//! signal before that store, so it is atomic with respect to everything
//! else on the CPU, as the kernel's `local_t` operations are with respect
//! to interrupts. Anything that is not on the CPU (a writer that migrated
//! between reserve and commit, a `CpuWriter` of another CPU, a flush or fixup
//! from a reader) goes through a remote update (`remote`): it raises
//! the buffer's flag, fences the CPU with membarrier and then uses the
//! CAS path's locked instruction, so it never races a plain store.
//!
//! The rseq path needs, and [`unavailable`] reports what is missing:
//! - x86_64 Linux (the sections are written for it);
//! - an rseq area registered by glibc 2.35 or later (not with
//!   `GLIBC_TUNABLES=glibc.pthread.rseq=0`, not under qemu-user);
//! - AVX, on which aligned 16-byte stores are atomic (Intel SDM 9.1.1;
//!   AMD APM 7.3.2): the state's store must not tear for readers on other
//!   CPUs;
//! - membarrier's rseq fence (Linux 5.10 or later);
//! - for [`WritePath::Auto`], one buffer per possible CPU, so that each CPU
//!   has a buffer of its own (asked for by name, the rseq path is taken
//!   with fewer buffers too: CPUs without a buffer of their own then write
//!   remotely, a system call each).
//!
//! [`WritePath::Auto`] takes the rseq path where it can and the CAS path
//! elsewhere; the environment variable `RINGTRACE_WRITE_PATH` (`rseq`,
//! `cas` or `auto`) overrides `Auto` without a rebuild, so that a test
//! suite or a benchmark can run on either.

pub(crate) use fast_line::FastLine;
use thiserror::Error;

pub(crate) mod fast_line;
#[cfg(ringtrace_rseq)]
pub(crate) mod remote;
#[cfg(ringtrace_rseq)]
pub(crate) mod section;
mod shared_mode;

/// Which write path a ring uses (see the [module](self) documentation).
///
/// ```
/// use ringtrace_ring::{RingBuffer, RingConfig, WritePath};
/// use ringtrace_clock::Counter;
/// let ring = RingBuffer::new(RingConfig::default().write_path(WritePath::Cas), Counter::new())?;
/// assert_eq!(ring.write_path(), WritePath::Cas);
/// let auto = RingBuffer::new(RingConfig::default(), Counter::new())?;
/// // Rseq where this machine allows it, Cas elsewhere.
/// assert_ne!(auto.write_path(), WritePath::Auto);
/// # Ok::<(), ringtrace_ring::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WritePath {
    /// The rseq path where available, the CAS path otherwise (the
    /// default); `RINGTRACE_WRITE_PATH` may choose instead.
    #[default]
    Auto,
    /// Restartable sequences: no lock-prefixed instruction while the
    /// writer stays on its CPU. Refused where unavailable.
    Rseq,
    /// Compare-and-swap: locked instructions, correct anywhere.
    Cas,
}

impl WritePath {
    /// The name `parse` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            WritePath::Auto => "auto",
            WritePath::Rseq => "rseq",
            WritePath::Cas => "cas",
        }
    }

    /// `auto`, `rseq` or `cas`.
    pub fn parse(name: &str) -> Result<WritePath, WritePathError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(WritePath::Auto),
            "rseq" => Ok(WritePath::Rseq),
            "cas" => Ok(WritePath::Cas),
            _ => Err(WritePathError::Unknown(name.to_string())),
        }
    }
}

impl std::fmt::Display for WritePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A write path that cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WritePathError {
    /// Not a path's name.
    #[error("unknown write path {0:?}: valid are auto, rseq and cas")]
    Unknown(String),
    /// The environment variable names no path.
    #[error("RINGTRACE_WRITE_PATH={0:?} is not a write path: valid are auto, rseq and cas (or unset it)")]
    UnknownInEnvironment(String),
    /// The rseq path was asked for and cannot run here.
    #[error(
        "the rseq write path is unavailable: {0}; use `cas` (or `auto`, which falls back to it)"
    )]
    Unavailable(#[from] RseqUnavailable),
}

/// Why the rseq write path cannot run in this process.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RseqUnavailable {
    /// Built for another machine: the path is x86_64 Linux only.
    #[error("it is written for x86_64 Linux only")]
    NotX86Linux,
    /// Built for loom's model or run under Miri, which cannot run its
    /// assembly.
    #[error("not under Miri or loom, which cannot run its assembly")]
    Modelled,
    /// glibc registered no rseq area for the process's threads.
    #[error("glibc registered no rseq area (glibc before 2.35, GLIBC_TUNABLES=glibc.pthread.rseq=0, or an emulator such as qemu-user)")]
    NoRseqArea,
    /// glibc's `__rseq_offset` is 0, which no glibc sets.
    #[error("glibc's __rseq_offset is 0, which no glibc sets")]
    ZeroOffset,
    /// The CPU has no AVX, so a 16-byte store is not guaranteed atomic.
    #[error("this CPU has no AVX, so a 16-byte store is not guaranteed atomic")]
    NoAvx,
    /// The kernel has no membarrier system call.
    #[error("membarrier is not available ({errno}); the rseq path needs Linux 5.10 or later")]
    NoMembarrier {
        /// What the system call said.
        errno: String,
    },
    /// The kernel's membarrier cannot restart rseq sections.
    #[error(
        "membarrier cannot restart rseq sections on this kernel (Linux 5.10 or later is needed)"
    )]
    NoRseqFence,
    /// membarrier refused to register the process.
    #[error("membarrier refused to register this process for rseq fences ({errno})")]
    RegisterRefused {
        /// What the system call said.
        errno: String,
    },
}

/// The environment variable that overrides [`WritePath::Auto`].
pub const WRITE_PATH_ENV: &str = "RINGTRACE_WRITE_PATH";

/// Why the rseq path cannot run in this process, or `None` if it can.
/// Checked once (it registers the process with membarrier).
pub fn unavailable() -> Option<RseqUnavailable> {
    probe().err()
}

#[cfg(ringtrace_rseq)]
fn probe() -> Result<std::num::NonZeroIsize, RseqUnavailable> {
    static PROBE: std::sync::OnceLock<Result<std::num::NonZeroIsize, RseqUnavailable>> =
        std::sync::OnceLock::new();
    PROBE
        .get_or_init(|| {
            let offset = crate::cpu::rseq_offset().ok_or(RseqUnavailable::NoRseqArea)?;
            let offset = std::num::NonZeroIsize::new(offset).ok_or(RseqUnavailable::ZeroOffset)?;
            if !std::arch::is_x86_feature_detected!("avx") {
                return Err(RseqUnavailable::NoAvx);
            }
            remote::register()?;
            Ok(offset)
        })
        .clone()
}

#[cfg(not(ringtrace_rseq))]
fn probe() -> Result<std::num::NonZeroIsize, RseqUnavailable> {
    Err(if cfg!(miri) || cfg!(loom) {
        RseqUnavailable::Modelled
    } else {
        RseqUnavailable::NotX86Linux
    })
}

/// Sections the kernel aborted on this thread (preemption, migration or a
/// signal in the middle of one): each abort handler adds one. Always 0 off
/// the rseq path.
pub fn thread_aborts() -> u64 {
    #[cfg(ringtrace_rseq)]
    {
        section::thread_aborts()
    }
    #[cfg(not(ringtrace_rseq))]
    {
        0
    }
}

/// Resolves the configured path for a ring of `buffers` CPU buffers:
/// the path, or why `Rseq` cannot be had.
pub(crate) fn resolve(asked: WritePath, buffers: usize) -> Result<Resolved, WritePathError> {
    let asked = match asked {
        WritePath::Auto => match std::env::var(WRITE_PATH_ENV) {
            Ok(name) if !name.is_empty() => WritePath::parse(&name)
                .map_err(|_| WritePathError::UnknownInEnvironment(name.clone()))?,
            _ => WritePath::Auto,
        },
        other => other,
    };
    match asked {
        WritePath::Cas => Ok(Resolved::Cas),
        // Asked for, it is taken with fewer buffers than CPUs too: writers
        // on a CPU without a buffer of its own then update another CPU's
        // buffer remotely, a system call each. Correct, and what the test
        // suite runs under RINGTRACE_WRITE_PATH=rseq to mix the two.
        WritePath::Rseq => probe()
            .map(Resolved::Rseq)
            .map_err(WritePathError::Unavailable),
        WritePath::Auto => Ok(match probe() {
            Ok(offset) if buffers >= crate::cpu::possible_cpus() => Resolved::Rseq(offset),
            _ => Resolved::Cas,
        }),
    }
}

/// A resolved path: `Rseq` with glibc's `__rseq_offset` (never 0: the
/// thread pointer points at glibc's thread header, not at the rseq area).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolved {
    Cas,
    Rseq(std::num::NonZeroIsize),
}

/// One CPU buffer's side of the write path: its fast line (which path,
/// the gate, and what the rseq fast path reads) and the count of remote
/// updates. In process memory, not in a file ring's file: another process
/// that adopts the file chooses its own path.
#[derive(Debug)]
pub(crate) struct PerCpuPath {
    line: FastLine,
    #[cfg_attr(not(ringtrace_rseq), allow(dead_code))]
    cpu: u32,
    /// Remote updates done, and shared mode (see `shared_mode`).
    remote: shared_mode::RemoteCounts,
}

impl PerCpuPath {
    /// The CAS path, with `line` (see `choose`).
    pub(crate) fn new(cpu: usize, line: FastLine) -> Self {
        PerCpuPath {
            line,
            cpu: cpu as u32,
            remote: shared_mode::RemoteCounts::default(),
        }
    }

    /// Sets the path, before the buffer is shared.
    pub(crate) fn choose(&mut self, path: Resolved) {
        self.line.set_rseq_offset(match path {
            Resolved::Cas => 0,
            Resolved::Rseq(offset) => offset.get(),
        });
    }

    /// The path this buffer's writers take.
    pub(crate) fn path(&self) -> WritePath {
        if self.line.rseq_offset() != 0 {
            WritePath::Rseq
        } else {
            WritePath::Cas
        }
    }

    /// Remote updates so far that made a system call (see `remote`).
    pub(crate) fn remote_updates(&self) -> u64 {
        self.remote.fenced()
    }

    /// Times the buffer went into shared mode (see `shared_mode`).
    pub(crate) fn shared_mode_entries(&self) -> u64 {
        self.remote.entries()
    }

    /// Remote updates made in shared mode, without a system call.
    pub(crate) fn shared_updates(&self) -> u64 {
        self.remote.shared()
    }

    /// A page was opened on the buffer: where shared mode ends (see
    /// `shared_mode`). A no-op unless the buffer is shared.
    #[inline]
    pub(crate) fn page_opened(&self) {
        #[cfg(ringtrace_rseq)]
        self.remote.page_opened(&self.line.gate);
    }

    /// The fast line, for every path's writers (the open-page entry).
    #[inline(always)]
    pub(crate) fn line(&self) -> &FastLine {
        &self.line
    }

    /// The fast line on the rseq path, `None` on the CAS path: one test of
    /// the rseq offset.
    #[cfg(ringtrace_rseq)]
    #[inline(always)]
    pub(crate) fn fast(&self) -> Option<&FastLine> {
        (self.line.rseq_offset() != 0).then_some(&self.line)
    }

    /// The buffer's CPU, which the locked sections check `cpu_id` against.
    #[cfg(ringtrace_rseq)]
    #[inline(always)]
    pub(crate) fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Raises (or lowers) the remote flag without fencing, for a test that
    /// makes the sections on the CPU take their locked form.
    #[cfg(all(
        test,
        target_os = "linux",
        target_arch = "x86_64",
        not(loom),
        not(miri)
    ))]
    pub(crate) fn hold_flag(&self, up: bool) {
        use std::sync::atomic::Ordering;
        if up {
            self.line
                .gate
                .fetch_add(remote::REMOTE_ONE, Ordering::SeqCst);
        } else {
            self.line
                .gate
                .fetch_sub(remote::REMOTE_ONE, Ordering::SeqCst);
        }
    }

    /// Begins a remote update (see `remote`).
    #[cfg(ringtrace_rseq)]
    #[cold]
    pub(crate) fn remote(&self) -> remote::RemoteUpdate<'_> {
        remote::RemoteUpdate::begin(&self.line.gate, self.cpu, &self.remote)
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn path_names_parse_and_a_bad_one_names_the_valid_ones() {
        for path in [WritePath::Auto, WritePath::Rseq, WritePath::Cas] {
            assert_eq!(WritePath::parse(path.name()), Ok(path));
        }
        assert_eq!(WritePath::parse(" RSEQ "), Ok(WritePath::Rseq));
        let e = WritePath::parse("lockfree").unwrap_err().to_string();
        assert!(
            e.contains("lockfree") && e.contains("auto, rseq and cas"),
            "{e}"
        );
    }

    #[test]
    fn cas_is_always_available_and_auto_never_stays_auto() {
        assert_eq!(resolve(WritePath::Cas, 1), Ok(Resolved::Cas));
        assert!(resolve(WritePath::Auto, 1).is_ok());
    }

    /// Run by scripts/test.sh with GLIBC_TUNABLES=glibc.pthread.rseq=0 and
    /// RINGTRACE_EXPECT_NO_RSEQ=1: glibc registers no rseq area, so the
    /// rseq path is refused with the reason and `auto` falls back.
    #[test]
    fn without_glibc_rseq_the_rseq_path_is_refused_and_auto_falls_back_to_cas() {
        if std::env::var("RINGTRACE_EXPECT_NO_RSEQ").as_deref() != Ok("1") {
            return;
        }
        let why = unavailable().expect("rseq was expected to be unavailable");
        assert_eq!(why, RseqUnavailable::NoRseqArea, "{why}");
        let e = resolve(WritePath::Rseq, 4096).unwrap_err().to_string();
        assert!(e.contains("unavailable") && e.contains("cas"), "{e}");
        if std::env::var(WRITE_PATH_ENV).is_err() {
            assert_eq!(resolve(WritePath::Auto, 4096), Ok(Resolved::Cas));
        }
    }
}
