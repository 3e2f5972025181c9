//! What a function costs in the binary, counted rather than timed: the
//! bytes of its symbol in the running executable, and the instructions it
//! executes from its entry to its return.
//!
//! - **Bytes**: [`Executable::open`] reads the ELF symbol table of
//!   `/proc/self/exe`; [`Executable::symbol_at`] finds the function symbol
//!   that starts at a run-time address (the load bias of a position-
//!   independent executable taken off with `dladdr`) and gives its size.
//!   Only the function's own bytes: whatever it calls out of line is a
//!   symbol of its own, counted separately by whoever asks for it.
//! - **Instructions**: [`count_instructions`] forks a child that asks to be
//!   traced (`PTRACE_TRACEME`), stops itself, then calls the function; the
//!   parent single-steps it (`PTRACE_SINGLESTEP`), from the stop to the
//!   function's entry, reads the return address on top of the stack there,
//!   and counts every instruction until the child comes back to it, with
//!   the `ret` and everything the function calls. It is exact where no
//!   hardware counter is (a virtual machine without a PMU), and the same
//!   on every run: no timing is involved.
//!
//! x86_64 Linux only; elsewhere every function returns
//! [`CodeSizeError::Unsupported`].
//!
//! ```no_run
//! use ringtrace_cli::code_size::{self, Executable};
//! #[inline(never)]
//! fn four_nops() {
//!     // SAFETY: nops touch no memory, register or flag.
//!     unsafe { std::arch::asm!("nop", "nop", "nop", "nop", options(nomem, nostack, preserves_flags)) }
//! }
//! let exe = Executable::open()?;
//! let symbol = exe.symbol_of(four_nops)?;
//! println!("{} is {} bytes", symbol.name, symbol.size);
//! // 4 nops and the ret (a build with frame pointers adds their setup).
//! let n = code_size::count_instructions(four_nops)?;
//! assert!(n >= 5);
//! # Ok::<(), code_size::CodeSizeError>(())
//! ```

use std::path::PathBuf;

/// Single steps allowed for one count, from the child's stop to the
/// function's return: a bound on a function that never returns. A step
/// costs two context switches, some microseconds.
pub const MAX_STEPS: u64 = 2_000_000;

/// Why a size or a count could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodeSizeError {
    /// Not x86_64 Linux.
    #[error(
        "code sizes and instruction counts are read on x86_64 Linux only (ELF symbols, \
         ptrace single-stepping); this is {arch} {os}"
    )]
    Unsupported {
        /// `std::env::consts::ARCH`.
        arch: &'static str,
        /// `std::env::consts::OS`.
        os: &'static str,
    },
    /// A system call failed.
    #[error("{call} failed: {source}")]
    Os {
        /// The call, with its request (`ptrace(PTRACE_SINGLESTEP)`).
        call: &'static str,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
    },
    /// The executable could not be read.
    #[error("cannot read the executable {path}: {source}")]
    ReadExecutable {
        /// The path read.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The executable is not an ELF file `object` can read.
    #[error("cannot parse the executable {path} as ELF: {reason}")]
    Parse {
        /// The path read.
        path: PathBuf,
        /// What `object` said.
        reason: String,
    },
    /// The executable has no function symbols (stripped).
    #[error(
        "the executable {path} has no symbol table (stripped?): build it without `strip` to \
         read code sizes"
    )]
    NoSymbolTable {
        /// The path read.
        path: PathBuf,
    },
    /// No object is mapped at the address.
    #[error("address {address:#x} is in no loaded object (dladdr found none)")]
    NotMapped {
        /// The run-time address.
        address: usize,
    },
    /// No function symbol of nonzero size starts at the address.
    #[error(
        "no function symbol starts at {address:#x} (file address {file_address:#x}) in {path}: \
         not the start of a function of this executable (one in a shared library, or inlined?)"
    )]
    NoSymbol {
        /// The run-time address.
        address: usize,
        /// The address in the file's terms.
        file_address: u64,
        /// The executable.
        path: PathBuf,
    },
    /// The traced child did not behave as expected.
    #[error("the traced child {0}")]
    Child(String),
    /// The function did not return within [`MAX_STEPS`].
    #[error("the function did not return within {limit} single steps")]
    TooManySteps {
        /// [`MAX_STEPS`].
        limit: u64,
    },
}

fn unsupported() -> CodeSizeError {
    CodeSizeError::Unsupported {
        arch: std::env::consts::ARCH,
        os: std::env::consts::OS,
    }
}

/// A function symbol of the running executable.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Symbol {
    /// The symbol's name as the ELF file spells it (mangled).
    pub name: String,
    /// Its address in the file's terms (before the load bias).
    pub file_address: u64,
    /// Its size in bytes, from the symbol table: the function's own code,
    /// padding after it not included.
    pub size: u64,
}

/// The running executable's function symbols, read once.
#[derive(Debug)]
pub struct Executable {
    path: PathBuf,
    /// (file address, size, name), sorted by address; function symbols of
    /// nonzero size only.
    functions: Vec<(u64, u64, String)>,
    /// The lowest address of a loaded segment, page-aligned down: what
    /// `dladdr`'s `dli_fbase` stands for in the file's terms.
    first_segment: u64,
}

impl Executable {
    /// Reads the symbol table of `/proc/self/exe`.
    ///
    /// ```no_run
    /// let exe = ringtrace_cli::code_size::Executable::open()?;
    /// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
    /// ```
    pub fn open() -> Result<Executable, CodeSizeError> {
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            return Err(unsupported());
        }
        let path = PathBuf::from("/proc/self/exe");
        let data = std::fs::read(&path).map_err(|source| CodeSizeError::ReadExecutable {
            path: path.clone(),
            source,
        })?;
        Self::parse(path, &data)
    }

    fn parse(path: PathBuf, data: &[u8]) -> Result<Executable, CodeSizeError> {
        use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
        let file = object::File::parse(data).map_err(|e| CodeSizeError::Parse {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let mut functions: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_owned())))
            .collect();
        if functions.is_empty() {
            return Err(CodeSizeError::NoSymbolTable { path });
        }
        functions.sort();
        const PAGE: u64 = 4096;
        let first_segment = file.segments().map(|s| s.address()).min().unwrap_or(0) & !(PAGE - 1);
        Ok(Executable {
            path,
            functions,
            first_segment,
        })
    }

    /// The function symbol that starts at the run-time `address`.
    ///
    /// ```no_run
    /// use ringtrace_cli::code_size::Executable;
    /// #[inline(never)]
    /// fn callee(x: u64) -> u64 { x.rotate_left(7) ^ 3 }
    /// let exe = Executable::open()?;
    /// let s = exe.symbol_at(callee as fn(u64) -> u64 as usize)?;
    /// assert!(s.size > 0);
    /// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
    /// ```
    pub fn symbol_at(&self, address: usize) -> Result<Symbol, CodeSizeError> {
        let base = load_base(address)?;
        let file_address = (address as u64)
            .wrapping_sub(base as u64)
            .wrapping_add(self.first_segment);
        let start = self.functions.partition_point(|f| f.0 < file_address);
        self.functions
            .get(start)
            .filter(|f| f.0 == file_address)
            .map(|(a, size, name)| Symbol {
                name: name.clone(),
                file_address: *a,
                size: *size,
            })
            .ok_or_else(|| CodeSizeError::NoSymbol {
                address,
                file_address,
                path: self.path.clone(),
            })
    }

    /// The symbol of `f`, a function of this executable.
    ///
    /// ```no_run
    /// #[inline(never)]
    /// fn nothing() {}
    /// let exe = ringtrace_cli::code_size::Executable::open()?;
    /// assert!(exe.symbol_of(nothing)?.size >= 1); // at least the ret
    /// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
    /// ```
    pub fn symbol_of(&self, f: fn()) -> Result<Symbol, CodeSizeError> {
        self.symbol_at(f as usize)
    }
}

/// The symbol of `f` (reads the executable's symbol table each call; use
/// [`Executable`] for many).
///
/// ```no_run
/// #[inline(never)]
/// fn nothing() {}
/// let s = ringtrace_cli::code_size::symbol_size(nothing)?;
/// assert!(s.size >= 1);
/// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
/// ```
pub fn symbol_size(f: fn()) -> Result<Symbol, CodeSizeError> {
    Executable::open()?.symbol_of(f)
}

/// Where the object holding `address` is mapped (`dladdr`'s `dli_fbase`).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn load_base(address: usize) -> Result<usize, CodeSizeError> {
    // SAFETY: Dl_info is plain data (pointers and integers), valid zeroed.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only looks the address up in the loader's tables and
    // writes `info`, a valid, exclusive Dl_info.
    let found = unsafe { libc::dladdr(address as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fbase.is_null() {
        return Err(CodeSizeError::NotMapped { address });
    }
    Ok(info.dli_fbase as usize)
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn load_base(_address: usize) -> Result<usize, CodeSizeError> {
    Err(unsupported())
}

/// The instructions `f` executes, from its first to its `ret` included,
/// with everything it calls, counted by single-stepping it in a forked
/// child. Exact and repeatable (no timing), for code whose path does not
/// depend on the time or on other threads.
///
/// `f` runs once in the calling thread first, and once more in the child
/// before the count, so that lazy work (a thread-local's first use, a
/// symbol bound on first call) is done and the count is of the steady
/// state. It must be safe to run in a forked child of a process that may
/// have other threads: no locks another thread may hold (no allocation),
/// no waiting on other threads.
///
/// Calling `f` through a pointer costs nothing inside the count; a
/// function with no body counts its `ret` alone (1, or 3 with frame
/// pointers), which is what a caller subtracts to get a body's count.
///
/// ```no_run
/// use ringtrace_cli::code_size::count_instructions;
/// #[inline(never)]
/// fn empty() {}
/// #[inline(never)]
/// fn three_nops() {
///     // SAFETY: nops touch no memory, register or flag.
///     unsafe { std::arch::asm!("nop", "nop", "nop", options(nomem, nostack, preserves_flags)) }
/// }
/// assert_eq!(count_instructions(three_nops)?, count_instructions(empty)? + 3);
/// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
/// ```
pub fn count_instructions(f: fn()) -> Result<u64, CodeSizeError> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        trace::count(f)
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = f;
        Err(unsupported())
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod trace {
    //! The ptrace half: a child that stops for its parent, and the parent
    //! that single-steps it.

    use super::{CodeSizeError, MAX_STEPS};
    use std::ptr::null_mut;

    fn os(call: &'static str) -> CodeSizeError {
        CodeSizeError::Os {
            call,
            source: std::io::Error::last_os_error(),
        }
    }

    /// The child, killed and reaped however the count ends.
    struct Child(libc::pid_t);

    impl Drop for Child {
        fn drop(&mut self) {
            // SAFETY: kill and waitpid take the pid of our own child, which
            // is not reaped before this (only here), so the pid cannot
            // name another process; a null status pointer is allowed.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, null_mut(), 0);
            }
        }
    }

    impl Child {
        /// Waits for the child's next stop: `Ok(signal)`, or an error if it
        /// ended.
        fn wait_stop(&self) -> Result<libc::c_int, CodeSizeError> {
            let mut status = 0;
            loop {
                // SAFETY: `status` is a valid, exclusive c_int.
                let r = unsafe { libc::waitpid(self.0, &mut status, 0) };
                if r == -1 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(os("waitpid"));
                }
                break;
            }
            if libc::WIFSTOPPED(status) {
                Ok(libc::WSTOPSIG(status))
            } else if libc::WIFEXITED(status) {
                Err(CodeSizeError::Child(match libc::WEXITSTATUS(status) {
                    EXIT_NO_TRACEME => "could not ask to be traced (PTRACE_TRACEME refused: \
                                        a seccomp filter or kernel.yama.ptrace_scope = 3?)"
                        .to_owned(),
                    EXIT_PANICKED => "panicked in the function".to_owned(),
                    code => format!("exited with {code} before the function returned"),
                }))
            } else if libc::WIFSIGNALED(status) {
                Err(CodeSizeError::Child(format!(
                    "was killed by signal {}",
                    libc::WTERMSIG(status)
                )))
            } else {
                Err(CodeSizeError::Child(format!(
                    "reported an unknown status {status:#x}"
                )))
            }
        }

        fn step(&self, signal: libc::c_int) -> Result<(), CodeSizeError> {
            // SAFETY: PTRACE_SINGLESTEP on our stopped tracee; addr is
            // ignored and data is a signal number, no pointer.
            let r = unsafe {
                libc::ptrace(
                    libc::PTRACE_SINGLESTEP,
                    self.0,
                    null_mut::<libc::c_void>(),
                    signal as usize as *mut libc::c_void,
                )
            };
            if r == -1 {
                return Err(os("ptrace(PTRACE_SINGLESTEP)"));
            }
            Ok(())
        }

        fn regs(&self) -> Result<libc::user_regs_struct, CodeSizeError> {
            // SAFETY: user_regs_struct is plain integers, valid zeroed.
            let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
            // SAFETY: PTRACE_GETREGS writes one user_regs_struct to `data`,
            // which points to ours, valid and exclusive.
            let r = unsafe {
                libc::ptrace(
                    libc::PTRACE_GETREGS,
                    self.0,
                    null_mut::<libc::c_void>(),
                    &mut regs as *mut libc::user_regs_struct as *mut libc::c_void,
                )
            };
            if r == -1 {
                return Err(os("ptrace(PTRACE_GETREGS)"));
            }
            Ok(regs)
        }

        fn peek(&self, address: u64) -> Result<u64, CodeSizeError> {
            // SAFETY: errno is this thread's; PTRACE_PEEKDATA reads the
            // tracee's memory, not ours, and returns the word (an error
            // is -1 with errno set, so errno is cleared first).
            let word = unsafe {
                *libc::__errno_location() = 0;
                libc::ptrace(
                    libc::PTRACE_PEEKDATA,
                    self.0,
                    address as usize as *mut libc::c_void,
                    null_mut::<libc::c_void>(),
                )
            };
            // SAFETY: errno is this thread's.
            if word == -1 && unsafe { *libc::__errno_location() } != 0 {
                return Err(os("ptrace(PTRACE_PEEKDATA)"));
            }
            Ok(word as u64)
        }
    }

    const EXIT_NO_TRACEME: i32 = 101;
    const EXIT_PANICKED: i32 = 102;

    /// The child's side: asks to be traced, warms `f`, stops, runs `f`
    /// under the parent's single steps, and exits without running any
    /// destructor or atexit handler of the parent's state.
    fn child(f: fn()) -> ! {
        // SAFETY: PTRACE_TRACEME takes no pointer; _exit ends the child at
        // once, the async-signal-safe way out of a fork.
        unsafe {
            if libc::ptrace(
                libc::PTRACE_TRACEME,
                0,
                null_mut::<libc::c_void>(),
                null_mut::<libc::c_void>(),
            ) == -1
            {
                libc::_exit(EXIT_NO_TRACEME);
            }
        }
        if std::panic::catch_unwind(f).is_err() {
            // SAFETY: as above.
            unsafe { libc::_exit(EXIT_PANICKED) }
        }
        // SAFETY: raise only sends a signal to this process; the tracer
        // sees the stop.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
        // black_box: the call goes through the pointer, to `f`'s own entry.
        (std::hint::black_box(f))();
        // SAFETY: as above.
        unsafe { libc::_exit(0) }
    }

    pub(super) fn count(f: fn()) -> Result<u64, CodeSizeError> {
        f();
        let entry = f as usize as u64;
        // SAFETY: fork has no memory-safety precondition; the child runs
        // only `child`, which calls `f` (documented to be fork-safe),
        // raise, ptrace and _exit, never returning into the caller.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            return Err(os("fork"));
        }
        if pid == 0 {
            child(f);
        }
        let child = Child(pid);
        // The child's stop at raise(SIGSTOP), after PTRACE_TRACEME.
        let first = child.wait_stop()?;
        if first != libc::SIGSTOP {
            return Err(CodeSizeError::Child(format!(
                "stopped with signal {first} where SIGSTOP was expected"
            )));
        }
        // From the stop to `f`'s entry, then to its return address with the
        // stack above the entry's (a recursive call returning to the same
        // place does not end the count).
        let mut inside: Option<(u64, u64)> = None;
        let mut count = 0u64;
        let mut pending = 0;
        for _ in 0..MAX_STEPS {
            child.step(pending)?;
            let signal = child.wait_stop()?;
            if signal != libc::SIGTRAP {
                // Another signal stopped the child before the step ran:
                // deliver it with the next step, count nothing.
                pending = signal;
                continue;
            }
            pending = 0;
            let regs = child.regs()?;
            match inside {
                None => {
                    if regs.rip == entry {
                        inside = Some((child.peek(regs.rsp)?, regs.rsp));
                    }
                }
                Some((ret, entry_rsp)) => {
                    count += 1;
                    if regs.rip == ret && regs.rsp > entry_rsp {
                        return Ok(count);
                    }
                }
            }
        }
        Err(CodeSizeError::TooManySteps { limit: MAX_STEPS })
    }
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    /// The same function as [`eight_nops`] without the nops: an asm
    /// block with the same options (without `nostack` an unoptimised build
    /// aligns the stack around it), so that the two differ by the nops.
    #[inline(never)]
    fn empty() {
        // SAFETY: an empty asm block does nothing.
        unsafe { std::arch::asm!("", options(nomem, nostack, preserves_flags)) }
    }

    #[inline(never)]
    fn eight_nops() {
        // SAFETY: nops touch no memory, register or flag.
        unsafe {
            std::arch::asm!(
                "nop",
                "nop",
                "nop",
                "nop",
                "nop",
                "nop",
                "nop",
                "nop",
                options(nomem, nostack, preserves_flags)
            )
        }
    }

    #[inline(never)]
    fn calls_eight_nops_twice() {
        std::hint::black_box(eight_nops as fn())();
        std::hint::black_box(eight_nops as fn())();
    }

    #[test]
    fn eight_nops_count_eight_more_than_an_empty_function() {
        let base = count_instructions(empty).unwrap();
        // The ret alone, or with a frame pointer's push, mov and pop.
        assert!((1..=4).contains(&base), "empty function: {base}");
        assert_eq!(count_instructions(eight_nops).unwrap(), base + 8);
        // Repeatable: no timing in it.
        assert_eq!(count_instructions(eight_nops).unwrap(), base + 8);
    }

    #[test]
    fn a_count_follows_the_calls_the_function_makes() {
        let nops = count_instructions(eight_nops).unwrap();
        let twice = count_instructions(calls_eight_nops_twice).unwrap();
        assert!(twice >= 2 * nops + 2, "{twice} vs 2 x {nops}");
    }

    #[test]
    fn the_nops_symbol_is_eight_bytes_longer_than_the_empty_one() {
        let exe = Executable::open().unwrap();
        let e = exe.symbol_of(empty).unwrap();
        let n = exe.symbol_of(eight_nops).unwrap();
        assert!(e.size > 0);
        assert!(e.name.contains("empty"), "{}", e.name);
        assert!(n.name.contains("eight_nops"), "{}", n.name);
        // One byte per nop, the rest the same.
        assert_eq!(n.size, e.size + 8);
        assert_eq!(symbol_size(eight_nops).unwrap(), n);
    }

    #[test]
    fn an_address_inside_a_function_is_no_symbol() {
        let exe = Executable::open().unwrap();
        let err = exe.symbol_at(eight_nops as fn() as usize + 1).unwrap_err();
        assert!(
            matches!(err, CodeSizeError::NoSymbol { .. }),
            "{err}: expected NoSymbol"
        );
        assert!(err.to_string().contains("no function symbol starts at"));
    }
}
