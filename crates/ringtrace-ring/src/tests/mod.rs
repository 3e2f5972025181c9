//! Tests of the write paths that need the whole ring and its internals
//! together: they sit above every module, as the ring does, so that no
//! module of the protocol imports the ring.

mod file_versions;
#[cfg(ringtrace_rseq)]
mod per_cpu_words;
#[cfg(ringtrace_rseq)]
mod whole_writes;
