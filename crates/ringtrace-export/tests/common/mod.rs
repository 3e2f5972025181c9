//! Helpers shared by the exporters' tests.
#![allow(dead_code)]

#[allow(unused_imports)] // not every test binary that includes this uses it
pub use ringtrace_testkit::TempDir;

pub mod trace;
