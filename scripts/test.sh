#!/usr/bin/env bash
# Runs every check ringtrace has: format, lints, the tests natively, the
# clock and ring crates' tests on aarch64 under qemu-user (where CNTVCT is
# real), the ring's loom models, and the ring's tests under Miri.
# It installs nothing: on a fresh machine run `bash .ci/run`, which installs
# what these checks need and then runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (x86_64)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo clippy (tracepoint features: static-keys, debug-preempt)"
cargo clippy -p ringtrace-tracepoint --all-targets --locked --features static-keys,debug-preempt -- -D warnings

step "cargo clippy (the command with patched keys: --features static-keys, as the README runs it)"
cargo clippy -p ringtrace --all-targets --locked --features static-keys -- -D warnings

step "cargo clippy (aarch64)"
cargo clippy -p ringtrace-clock --all-targets --locked --target aarch64-unknown-linux-gnu -- -D warnings

step "cargo test (x86_64)"
cargo test --workspace --locked

step "cargo test ringtrace-clock (aarch64 under qemu-user)"
cargo test -p ringtrace-clock --locked --target aarch64-unknown-linux-gnu

step "cargo test ringtrace-ring (aarch64 under qemu-user: its atomics, 128-bit CAS included, as aarch64 code)"
cargo test -p ringtrace-ring --locked --target aarch64-unknown-linux-gnu

step "pairs with patched keys (the README's report build)"
cargo test -p ringtrace --locked --features static-keys --test pairs_batched

step "tracepoints with patched keys (static-keys) and DEBUG_PREEMPT counters"
cargo run -q -p ringtrace-tracepoint --locked --features static-keys --example patched_keys
cargo test -p ringtrace-tracepoint --locked --features debug-preempt --test counters

step "loom models of the ring (reserve, commit, read)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
  cargo test -p ringtrace-ring --locked --release --test loom

step "miri: the ring's tests that make no system calls"
cargo +nightly miri test -p ringtrace-ring --locked

step "all checks passed"
