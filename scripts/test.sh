#!/usr/bin/env bash
# Runs every check ringtrace has: format, lints, the tests natively, the
# clock and ring crates' tests on aarch64 under qemu-user (where CNTVCT is
# real), the ring's loom models, the tests that make no system call under
# Miri, and each fuzz target for a bounded time under AddressSanitizer.
# Prints how long each part took at the end.
#
#   bash scripts/test.sh                 # everything, as CI runs it
#   bash scripts/test.sh quick           # the first tier: lint and test
#   bash scripts/test.sh full            # every tier (the same as no tier)
#   bash scripts/test.sh --quick         # everything, briefly (local use)
#   bash scripts/test.sh --only loom,miri  # some parts alone
#   bash scripts/test.sh --list          # the parts, in the order they run
#
# The parts, cheapest first: lint (fmt, clippy, doc links, the layer's
# dependencies), test (cargo test natively, each write path, the
# examples), aarch64 (the clock and ring under qemu-user), static-keys,
# loom, miri, fuzz.
# --quick fuzzes 10 s a target instead of 60, bounds loom at one preemption
# instead of two, and runs under Miri only the unit tests and the shared
# properties (the ring's integration tests are the slow part).
# It installs nothing: on a fresh machine run `bash .ci/run`, which installs
# what these checks need and then runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."

parts="lint test aarch64 static-keys loom miri fuzz"
quick=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --list) printf '%s\n' $parts; exit 0 ;;
    --only)
      [ $# -ge 2 ] || { echo "scripts/test.sh: --only needs a list of parts (valid: ${parts// /, })" >&2; exit 2; }
      only="$2"; shift
      [ -n "${only//,/}" ] || { echo "scripts/test.sh: --only needs at least one part (valid: ${parts// /, })" >&2; exit 2; }
      for p in ${only//,/ }; do
        [[ " $parts " == *" $p "* ]] || { echo "scripts/test.sh: unknown part '$p' (valid: ${parts// /, })" >&2; exit 2; }
      done ;;
    quick) only="lint,test" ;;
    full) only="" ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument '$1' (valid: quick, full, --quick, --only PARTS, --list, --help)" >&2; exit 2 ;;
  esac
  shift
done
# Whether part $1 runs: every part, or those --only names.
part() {
  [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]
}
if [ "$quick" = 1 ]; then
  fuzz_seconds=10; loom_preemptions=1
else
  fuzz_seconds=60; loom_preemptions=2
fi

timings=()
current=""
started=0
step() {
  finish_step
  current="$*"
  started=$SECONDS
  printf '\n== %s\n' "$current"
}
finish_step() {
  if [ -n "$current" ]; then
    timings+=("$(printf '%4d s  %s' $((SECONDS - started)) "$current")")
  fi
  current=""
}

if part lint; then
  step "cargo fmt --check"
  cargo fmt --all -- --check
  (cd fuzz && cargo fmt -- --check)

  step "cargo clippy (x86_64)"
  cargo clippy --workspace --all-targets --locked -- -D warnings

  step "cargo clippy (tracepoint features: static-keys, debug-preempt)"
  cargo clippy -p ringtrace-tracepoint --all-targets --locked --features static-keys,debug-preempt -- -D warnings

  step "cargo clippy (the command with patched keys: --features static-keys, as the README runs it)"
  cargo clippy -p ringtrace-cli --all-targets --locked --features static-keys -- -D warnings

  step "cargo clippy (aarch64)"
  cargo clippy -p ringtrace-clock --all-targets --locked --target aarch64-unknown-linux-gnu -- -D warnings

  step "cargo doc of the libraries: every intra-doc link resolves (RUSTDOCFLAGS=-D warnings)"
  RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --lib --locked

  step "the tracing layer links no serde_json (its normal dependencies)"
  if cargo tree -p ringtrace-tracing -e normal --locked --prefix none | grep -q '^serde_json '; then
    echo "ringtrace-tracing depends on serde_json: the recording side must not" >&2
    exit 1
  fi
fi

if part test; then
  step "cargo test (x86_64; includes the fuzz properties under proptest and every committed fuzz input)"
  cargo test --workspace --locked

  step "the ring's tests on each write path: rseq (asked for: rings with fewer buffers than CPUs mix sections and remote updates) and cas"
  RINGTRACE_WRITE_PATH=rseq cargo test -p ringtrace-ring -p ringtrace-check --locked
  RINGTRACE_WRITE_PATH=cas cargo test -p ringtrace-ring -p ringtrace-check --locked

  step "the recorder's and streaming tests on the cas write path (the run above took rseq; the traced programs inherit the choice)"
  RINGTRACE_WRITE_PATH=cas cargo test -p ringtrace-cli --test record --locked
  RINGTRACE_WRITE_PATH=cas cargo test -p ringtrace --test stream --locked

  step "the write path falls back to cas where glibc registers no rseq area (GLIBC_TUNABLES=glibc.pthread.rseq=0)"
  GLIBC_TUNABLES=glibc.pthread.rseq=0 RINGTRACE_EXPECT_NO_RSEQ=1 cargo test -p ringtrace-ring --locked --lib rseq::

  step "docs/analysis.md's SQL in DuckDB and ClickHouse agrees with ringtrace stats (two simulated hosts)"
  cargo test -p ringtrace-cli --locked --test sql

  step "examples, as the README runs them (built by cargo test above)"
  for example in producer_thread custom_clock tracing_backend async_backend; do
    cargo run -q --locked --example "$example"
  done

  step "the Perfetto export checked with Perfetto's own definitions (perfetto_trace_pb2)"
  perfetto_tmp=$(mktemp -d)
  RINGTRACE_PERFETTO_OUT="$perfetto_tmp/cases" cargo test -q --locked -p ringtrace --test perfetto
  for trace in "$perfetto_tmp"/cases/*.pftrace; do
    python3 scripts/check_perfetto.py "$trace" "${trace%.pftrace}.jsonl" >/dev/null
  done
  echo "$(ls "$perfetto_tmp"/cases/*.pftrace | wc -l) random traces checked"
  cargo run -q --locked --example async_backend -- --ring "$perfetto_tmp/async.ring"
  target_dir=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  cargo build -q --locked -p ringtrace-cli --bin ringtrace
  "$target_dir/debug/ringtrace" export "$perfetto_tmp/async.ring" --format perfetto -o "$perfetto_tmp/async.pftrace"
  "$target_dir/debug/ringtrace" dump --json "$perfetto_tmp/async.ring" > "$perfetto_tmp/async.jsonl"
  python3 scripts/check_perfetto.py "$perfetto_tmp/async.pftrace" "$perfetto_tmp/async.jsonl" --min-tasks 64 --min-links 64
  # Local spans and tracepoints beside the layer's records.
  cargo run -q --locked --example tracing_backend -- --ring "$perfetto_tmp/backend.ring" >/dev/null
  "$target_dir/debug/ringtrace" export "$perfetto_tmp/backend.ring" --format perfetto -o "$perfetto_tmp/backend.pftrace"
  "$target_dir/debug/ringtrace" dump --json "$perfetto_tmp/backend.ring" > "$perfetto_tmp/backend.jsonl"
  python3 scripts/check_perfetto.py "$perfetto_tmp/backend.pftrace" "$perfetto_tmp/backend.jsonl"
  # A session of two processes, exported to one trace.
  cargo build -q --locked -p ringtrace --example paced
  paced="$target_dir/debug/examples/paced --rate 5000 --seconds 1"
  "$target_dir/debug/ringtrace" record -o "$perfetto_tmp/two" -- sh -c "$paced --threads 2 & $paced --threads 1; wait"
  "$target_dir/debug/ringtrace" export "$perfetto_tmp/two" --format perfetto -o "$perfetto_tmp/two.pftrace"
  "$target_dir/debug/ringtrace" dump --json "$perfetto_tmp/two" > "$perfetto_tmp/two.jsonl"
  python3 scripts/check_perfetto.py "$perfetto_tmp/two.pftrace" "$perfetto_tmp/two.jsonl"
  "$target_dir/debug/ringtrace" export "$perfetto_tmp/two" --align-wall-clock --format perfetto -o "$perfetto_tmp/wall.pftrace"
  "$target_dir/debug/ringtrace" dump --json --align-wall-clock "$perfetto_tmp/two" > "$perfetto_tmp/wall.jsonl"
  python3 scripts/check_perfetto.py "$perfetto_tmp/wall.pftrace" "$perfetto_tmp/wall.jsonl" --wall-clock
  python3 -c 'import sys; from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb; t = pb.Trace(); t.ParseFromString(open(sys.argv[1], "rb").read()); n = sum(p.track_descriptor.HasField("process") for p in t.packet); assert n == 2, f"{n} process tracks, not 2"' "$perfetto_tmp/two.pftrace"
  rm -rf "$perfetto_tmp"

  step "the README's recording: ringtrace record a program, export the session, trace-cmd reads it"
  cargo build -q --locked -p ringtrace-cli --bin ringtrace
  cargo build -q --locked -p ringtrace --example paced
  target_dir=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  session_tmp=$(mktemp -d)
  "$target_dir/debug/ringtrace" record -o "$session_tmp/trace" -- "$target_dir/debug/examples/paced" --rate 20000 --threads 2 --seconds 1
  "$target_dir/debug/ringtrace" export "$session_tmp/trace" --format trace-cmd -o "$session_tmp/trace.dat"
  events=$(trace-cmd report -i "$session_tmp/trace.dat" | grep -c ' event: ')
  "$target_dir/debug/ringtrace" export "$session_tmp/trace" --format perfetto -o "$session_tmp/trace.pftrace"
  "$target_dir/debug/ringtrace" dump --json "$session_tmp/trace" > "$session_tmp/trace.jsonl"
  python3 scripts/check_perfetto.py "$session_tmp/trace.pftrace" "$session_tmp/trace.jsonl"
  rm -rf "$session_tmp"
  echo "trace-cmd report: $events events"
  [ "$events" -ge 39000 ] || { echo "the README's recording: $events events, not the 40000 paced fired" >&2; exit 1; }
fi

if part aarch64; then
  step "cargo test ringtrace-clock (aarch64 under qemu-user)"
  cargo test -p ringtrace-clock --locked --target aarch64-unknown-linux-gnu

  step "cargo test ringtrace-ring (aarch64 under qemu-user: its atomics, 128-bit CAS included, as aarch64 code)"
  cargo test -p ringtrace-ring --locked --target aarch64-unknown-linux-gnu
fi

if part static-keys; then
  step "pairs with patched keys (the README's report build)"
  cargo test -p ringtrace-cli --locked --features static-keys --test pairs_batched

  step "tracepoints with patched keys (static-keys) and DEBUG_PREEMPT counters"
  cargo run -q -p ringtrace-tracepoint --locked --features static-keys --example patched_keys
  cargo test -p ringtrace-tracepoint --locked --features debug-preempt --test counters
fi

if part loom; then
  step "loom models of the ring (reserve, commit, read; LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-$loom_preemptions})"
  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-$loom_preemptions}" \
    cargo test -p ringtrace-ring --locked --release --test loom --test loom_rseq_protocol
  # The interrupt registry's model (a signal handler never reads an entry
  # that release freed): --cfg loom for that test alone, as cargo rustc
  # passes it, since the ring's loom mode builds no file rings, which
  # ringtrace-tracepoint and ringtrace-export use (tests/loom_interrupt.rs).
  loom_interrupt=$(CARGO_TARGET_DIR=target/loom-interrupt cargo rustc -q -p ringtrace-export --locked --release --test loom_interrupt --message-format=json-render-diagnostics -- --cfg loom \
    | python3 -c 'import json, sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable")][-1])')
  LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-$loom_preemptions}" "$loom_interrupt"
fi

if part miri; then
  if [ "$quick" = 1 ]; then
    step "miri (quick): the clock's and ring's unit tests, and the fuzz properties"
    cargo +nightly miri test -p ringtrace-ring -p ringtrace-clock --locked --lib
    cargo +nightly miri test -p ringtrace-check --locked --test properties
  else
    step "miri: the ring's, the clock's and the fuzz properties' tests that make no system calls, and the tracing subscriber's unit tests (span ids, clone counts, thread state)"
    # Miri interprets on one core: the clock's, the properties' and the
    # subscriber's tests run beside the ring's, in a target directory of
    # their own (a cargo run holds its directory's lock to the end), their
    # output shown when they end.
    miri_log=$(mktemp)
    (
      export CARGO_TARGET_DIR=target/miri-side
      cargo +nightly miri test -p ringtrace-clock -p ringtrace-check --locked --lib --tests
      cargo +nightly miri test -p ringtrace-tracing --locked --lib -- subscriber
    ) >"$miri_log" 2>&1 &
    miri_side=$!
    miri_ring=0
    cargo +nightly miri test -p ringtrace-ring --locked --lib --tests || miri_ring=$?
    miri_side_status=0
    wait "$miri_side" || miri_side_status=$?
    echo "-- miri: the clock's, the properties' and the subscriber's tests"
    cat "$miri_log"
    rm -f "$miri_log"
    if [ "$miri_ring" -ne 0 ] || [ "$miri_side_status" -ne 0 ]; then
      echo "miri failed: the ring's tests exit $miri_ring, the clock's, properties' and subscriber's exit $miri_side_status" >&2
      exit 1
    fi
  fi
fi

if part fuzz; then
  step "fuzz: ring_ops, clock_monotonic, decode, recover, ${fuzz_seconds} s each under AddressSanitizer"
  bash scripts/fuzz.sh "$fuzz_seconds"
fi

finish_step
if [ -z "$only" ]; then
  printf '\n== all checks passed; time per part:\n'
else
  printf '\n== the parts asked for (%s) passed; time per part:\n' "$only"
fi
printf '%s\n' "${timings[@]}"
printf '%4d s  total\n' "$SECONDS"
