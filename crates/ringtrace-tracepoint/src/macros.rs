//! `tracepoint!` declares tracepoints; `trace!` fires one.

/// Declares tracepoints: a name, typed fields and a text format each.
///
/// Each becomes a module of that name holding the tracepoint's description
/// (`TRACEPOINT`), its key (`is_enabled`) and its out-of-line recorder
/// (`emit`). Fire it with [`trace!`](crate::trace), which checks the key
/// before evaluating any argument.
///
/// A tracepoint's full name is `system:event`. The system is the declaring
/// crate's name (`CARGO_CRATE_NAME`, so `my-app` gives `my_app`), or the
/// one a `system = NAME;` header gives for the whole block; the built-in
/// tracepoints are in system `preemptirq`. Two tracepoints with one full
/// name are an error the registry reports ([`registry::check`]) and that
/// refuses to enable either ([`registry::enable`]); a tracepoint in a
/// system of its own may share its event name with another system's.
///
/// [`registry::check`]: crate::registry::check
/// [`registry::enable`]: crate::registry::enable
///
/// ```
/// use ringtrace_tracepoint::{registry, trace, tracepoint};
///
/// tracepoint! {
///     system = app;
///     /// A request was served.
///     pub fn request_done(status: u16, bytes: u64, path: &str) = "status={} bytes={} path={}";
/// }
///
/// fn expensive() -> u64 { unreachable!("not evaluated while the tracepoint is off") }
/// trace!(request_done(200, expensive(), "/"));
///
/// assert_eq!(request_done::TRACEPOINT.name, "app:request_done");
/// assert_eq!(request_done::TRACEPOINT.fields.len(), 3);
/// assert!(!request_done::is_enabled());
/// assert_eq!(registry::find("request_done")?.name, "app:request_done");
/// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
/// ```
#[macro_export]
macro_rules! tracepoint {
    (system = $system:ident ; $($rest:tt)+) => {
        $crate::__tracepoints! { [::core::stringify!($system)] $($rest)+ }
    };
    ($($rest:tt)+) => {
        $crate::__tracepoints! { [::core::env!("CARGO_CRATE_NAME")] $($rest)+ }
    };
}

/// One tracepoint of a [`tracepoint!`] block at a time, with the block's
/// system (tokens that expand to a string literal) carried along. Each
/// tracepoint is one level of macro recursion, so a block holds up to
/// about 120 under the default `recursion_limit`; split longer ones.
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoints {
    ([$($system:tt)+]) => {};
    ([$($system:tt)+]
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($field:ident : $ty:ty),* $(,)? ) = $format:literal ;
        $($rest:tt)*
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case, missing_docs)]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::__tracepoint_key!(KEY);

            /// The tracepoint's description, registered at link time.
            pub static TRACEPOINT: $crate::Tracepoint = $crate::Tracepoint::new(
                $crate::TracepointNames {
                    system: $($system)+,
                    event: ::core::stringify!($name),
                    name: ::core::concat!($($system)+, ":", ::core::stringify!($name)),
                    declared_at: $crate::here!(),
                },
                &[$($crate::Field {
                    name: ::core::stringify!($field),
                    kind: <$ty as $crate::TraceField>::KIND,
                }),*],
                $format,
                $crate::KeyHandle { is_enabled, set: set_key },
            );

            $crate::__private::inventory::submit! {
                $crate::__private::Registered(&TRACEPOINT)
            }

            /// Whether the tracepoint records: the only work done while off.
            #[inline(always)]
            pub fn is_enabled() -> bool {
                $crate::__tracepoint_check!(KEY)
            }

            fn set_key(on: bool) {
                $crate::__tracepoint_set!(KEY, on)
            }

            /// Records one event. Out of line and cold: the enabled path
            /// costs nothing at the call site while the key is off.
            #[cold]
            #[inline(never)]
            #[allow(clippy::too_many_arguments)] // one per field, as declared
            pub fn emit($($field: $ty),*) {
                // Fields of fixed sizes: the event built on the stack and
                // written whole. (Constants: one branch is compiled.)
                const FIXED: ::core::option::Option<usize> = $crate::__private::fixed_len(
                    &[$(<$ty as $crate::TraceField>::FIXED_LEN),*],
                );
                if let ::core::option::Option::Some(_) = FIXED {
                    const LEN: usize = $crate::__private::EVENT_HEADER_LEN + match FIXED {
                        ::core::option::Option::Some(n) => n,
                        ::core::option::Option::None => 0,
                    };
                    let mut event = [0u8; LEN];
                    let mut _at = $crate::__private::EVENT_HEADER_LEN;
                    $(_at += $crate::TraceField::encode_into(
                        &$field,
                        event.get_mut(_at..).unwrap_or_default(),
                    );)*
                    $crate::__private::record_whole(TRACEPOINT.id, &mut event);
                    return;
                }
                let len = 0 $(+ $crate::TraceField::encoded_len(&$field))*;
                $crate::__private::record(TRACEPOINT.id, len, |_out| {
                    $($crate::TraceField::encode(&$field, _out);)*
                });
            }
        }

        $crate::__tracepoints! { [$($system)+] $($rest)* }
    };
}

/// Fires a tracepoint: `trace!(name(arg, ...))`, or `trace!(path::name(...))`.
/// The arguments are evaluated only when the tracepoint is enabled.
#[macro_export]
macro_rules! trace {
    ($($tp:ident)::+ ( $($arg:expr),* $(,)? )) => {
        if $($tp)::+::is_enabled() {
            $($tp)::+::emit($($arg),*)
        }
    };
}

#[cfg(not(feature = "static-keys"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoint_key {
    ($key:ident) => {
        static $key: $crate::StaticKey = $crate::StaticKey::new(false);
    };
}

#[cfg(not(feature = "static-keys"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoint_check {
    ($key:ident) => {
        $key.is_enabled()
    };
}

#[cfg(not(feature = "static-keys"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoint_set {
    ($key:ident, $on:expr) => {
        $key.set($on)
    };
}

#[cfg(feature = "static-keys")]
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoint_key {
    ($key:ident) => {
        $crate::__private::static_keys::define_static_key_false!($key);
    };
}

#[cfg(feature = "static-keys")]
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoint_check {
    ($key:ident) => {
        $crate::__private::static_keys::static_branch_unlikely!($key)
    };
}

#[cfg(feature = "static-keys")]
#[doc(hidden)]
#[macro_export]
macro_rules! __tracepoint_set {
    ($key:ident, $on:expr) => {
        // SAFETY: reached only through the registry (Tracepoint::set_enabled
        // and registry::set_enabled), which refuses
        // unless the process has a single thread, as static-keys requires.
        unsafe {
            if $on {
                $key.enable()
            } else {
                $key.disable()
            }
        }
    };
}
