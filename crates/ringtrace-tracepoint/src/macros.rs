//! `tracepoint!` declares tracepoints; `trace!` fires one.

/// Declares tracepoints: a name, typed fields and a text format each.
///
/// Each becomes a module of that name holding the tracepoint's description
/// (`TRACEPOINT`), its key (`is_enabled`) and its out-of-line recorder
/// (`emit`). Fire it with [`trace!`](crate::trace), which checks the key
/// before evaluating any argument.
///
/// ```
/// use ringtrace_tracepoint::{trace, tracepoint};
///
/// tracepoint! {
///     /// A request was served.
///     pub fn request_done(status: u16, bytes: u64, path: &str) = "status={} bytes={} path={}";
/// }
///
/// fn expensive() -> u64 { unreachable!("not evaluated while the tracepoint is off") }
/// trace!(request_done(200, expensive(), "/"));
///
/// assert_eq!(request_done::TRACEPOINT.fields.len(), 3);
/// assert!(!request_done::is_enabled());
/// ```
#[macro_export]
macro_rules! tracepoint {
    ($(
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($field:ident : $ty:ty),* $(,)? ) = $format:literal ;
    )+) => {$(
        $(#[$meta])*
        #[allow(non_snake_case, missing_docs)]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::__tracepoint_key!(KEY);

            /// The tracepoint's description, registered at link time.
            pub static TRACEPOINT: $crate::Tracepoint = $crate::Tracepoint::new(
                stringify!($name),
                &[$($crate::Field {
                    name: stringify!($field),
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
            pub fn emit($($field: $ty),*) {
                let len = 0 $(+ $crate::TraceField::encoded_len(&$field))*;
                $crate::__private::record(TRACEPOINT.id, len, |_out| {
                    $($crate::TraceField::encode(&$field, _out);)*
                });
            }
        }
    )+};
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
        // SAFETY: reached only through registry::set_enabled, which refuses
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
