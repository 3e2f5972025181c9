//! Helpers shared by the command's tests.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the built `ringtrace` binary with `args`.
pub fn ringtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringtrace"))
        .args(args)
        .output()
        .expect("the ringtrace binary runs")
}

/// The arguments of a short hammer at nice 0 (so that other work on the
/// machine does not starve it), running `seconds`.
pub fn short_hammer(seconds: &'static str) -> Vec<&'static str> {
    vec![
        "hammer",
        "--seconds",
        seconds,
        "--producer-nice",
        "0",
        "--consumer-nice",
        "0",
    ]
}
