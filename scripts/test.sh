#!/usr/bin/env bash
# Runs every check ringtrace has: format, lints, the tests natively, and the
# clock crate's tests on aarch64 under qemu-user (where CNTVCT is real).
# It installs nothing: on a fresh machine run `bash .ci/run`, which installs
# what these checks need and then runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (x86_64)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo clippy (aarch64)"
cargo clippy -p ringtrace-clock --all-targets --locked --target aarch64-unknown-linux-gnu -- -D warnings

step "cargo test (x86_64)"
cargo test --workspace --locked

step "cargo test ringtrace-clock (aarch64 under qemu-user)"
cargo test -p ringtrace-clock --locked --target aarch64-unknown-linux-gnu

step "all checks passed"
