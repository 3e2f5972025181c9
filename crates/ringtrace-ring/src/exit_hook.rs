//! Running code at a normal process exit, with the exit code where the C
//! library tells it: [`register_exit_handler`].

/// What a process runs when it exits normally, registered by
/// [`register_exit_handler`].
///
/// A handler is a type, not a value: the C library keeps a plain function
/// pointer (with `atexit`, not even an argument), so the handler can carry
/// no state of its own and reaches what it works on through statics.
pub trait ExitHandler {
    /// Runs at the normal exit: a return from `main` or a call to
    /// `exit` (`std::process::exit`), on the thread that exits.
    ///
    /// `code` is the exit code a parent sees (the low byte of the status
    /// passed to `exit`) where the C library tells it (glibc's `on_exit`),
    /// else `None`. A panic that escapes this function aborts the process,
    /// as any unwind out of an `extern "C"` function does: catch what may
    /// panic.
    fn exited(code: Option<u8>);
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
extern "C" {
    /// glibc's `on_exit(3)`: as `atexit`, and the handler is given the
    /// status passed to `exit`.
    fn on_exit(
        function: extern "C" fn(libc::c_int, *mut libc::c_void),
        arg: *mut libc::c_void,
    ) -> libc::c_int;
}

/// What `on_exit` calls: `H`, with the code a parent sees, the status's
/// low byte.
#[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
extern "C" fn exited_with<H: ExitHandler>(status: libc::c_int, _: *mut libc::c_void) {
    H::exited(Some(status as u8));
}

/// What `atexit` calls: `H`, with no code.
#[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
extern "C" fn exited<H: ExitHandler>() {
    H::exited(None);
}

/// Registers `H` to run when the process exits normally
/// ([`ExitHandler::exited`]); returns whether the C library took it.
///
/// On Linux with glibc (`target_env = "gnu"`) the handler is registered by
/// `on_exit(3)`, and is given the exit code; on every other target (musl,
/// macOS, …, and under Miri) by `atexit(3)`, and the code is `None`.
/// Either way it runs once per registration, in reverse order of
/// registration among all the process's `atexit` and `on_exit` handlers,
/// after `main` has returned or `exit` was called. Nothing runs it on a
/// crash, a signal's default action, `abort()` (a `panic = "abort"` panic)
/// or `_exit`; a panic that unwinds out of `main` exits by `exit(101)` and
/// does run it.
///
/// Each call registers again: call it once per process (a
/// [`Once`](std::sync::Once)) for a handler that should run once. A `false`
/// return (the C library out of room) leaves the handler unregistered.
///
/// # Examples
///
/// ```
/// use ringtrace_ring::{register_exit_handler, ExitHandler};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Once;
///
/// static EVENTS: AtomicU64 = AtomicU64::new(0);
///
/// /// Reports the events counted, and how the process ended.
/// struct Report;
///
/// impl ExitHandler for Report {
///     fn exited(code: Option<u8>) {
///         let events = EVENTS.load(Ordering::Relaxed);
///         match code {
///             Some(code) => eprintln!("{events} events, exit code {code}"),
///             None => eprintln!("{events} events"),
///         }
///     }
/// }
///
/// static AT_EXIT: Once = Once::new();
/// AT_EXIT.call_once(|| {
///     assert!(register_exit_handler::<Report>());
/// });
/// EVENTS.fetch_add(1, Ordering::Relaxed);
/// ```
pub fn register_exit_handler<H: ExitHandler>() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    // SAFETY: `exited_with::<H>` is an `extern "C" fn` with the
    // signature on_exit expects, alive for the whole process (a
    // function, not a closure); it ignores its argument, which is null.
    // on_exit only records the pair. An unwind out of the handler
    // aborts rather than crossing into C.
    let registered = unsafe { on_exit(exited_with::<H>, std::ptr::null_mut()) };
    #[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
    // SAFETY: `exited::<H>` is an `extern "C" fn()`, alive for the whole
    // process (a function, not a closure); atexit only records it. An
    // unwind out of the handler aborts rather than crossing into C.
    let registered = unsafe { libc::atexit(exited::<H>) };
    registered == 0
}
