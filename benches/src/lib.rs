//! Micro-benchmarks for ringtrace live in `benches/`; this crate has no library code.
