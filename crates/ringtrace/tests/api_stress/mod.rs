//! Shared by the `api_stress_*` tests.
pub mod harness;
