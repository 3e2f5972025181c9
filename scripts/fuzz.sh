#!/usr/bin/env bash
# Runs each cargo-fuzz target for a bounded time under AddressSanitizer
# (cargo-fuzz's default), starting from the committed seed corpus:
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# SECONDS defaults to 60; the targets to ring_ops, clock_monotonic, decode.
# New inputs go to target/fuzz-corpus/TARGET; the committed corpus (made by
# the seed_corpus example, fuzzed, then minimised with `cargo fuzz cmin`) is
# only read. A failing input is left in fuzz/artifacts/TARGET/; copy it to
# fuzz/regressions/TARGET/ once fixed, and `cargo test -p ringtrace-check
# --test corpus` runs it from then on. Needs nightly and cargo-fuzz
# (`bash .ci/run` installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
all=(ring_ops clock_monotonic decode recover)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "scripts/fuzz.sh: seconds per target must be a whole number of at least 1, not '$seconds'" >&2
  exit 2
fi
for t in "${targets[@]}"; do
  if ! [[ " ${all[*]} " == *" $t "* ]]; then
    echo "scripts/fuzz.sh: no fuzz target '$t' (valid: ${all[*]})" >&2
    exit 2
  fi
done

if ! command -v cargo-fuzz >/dev/null || ! rustup toolchain list | grep -q '^nightly'; then
  echo "scripts/fuzz.sh: needs a nightly toolchain and cargo-fuzz (rustup toolchain install nightly; cargo install cargo-fuzz), or run bash .ci/run, which installs both" >&2
  exit 2
fi
cd fuzz
cargo +nightly fuzz build --sanitizer address
# Each fuzzer is one process on one core: as many run at once as there are
# CPUs, and each is reported when it ends.
jobs=$(nproc 2>/dev/null || echo 1)
fuzz_one() {
  local t="$1"
  local out="../target/fuzz-corpus/$t"
  mkdir -p "$out"
  local extra=()
  [ -f "dict/$t.dict" ] && extra+=("-dict=dict/$t.dict")
  # A script runs at most MAX_OPS / 2 operations, which its first 1.5 KB
  # hold; longer inputs only slow the fuzzer down. A ring file of two CPUs
  # of tiny pages (the seeds) is 20 KB.
  case "$t" in
    decode) ;;
    recover) extra+=("-max_len=24576") ;;
    *) extra+=("-max_len=1536") ;;
  esac
  cargo +nightly fuzz run --sanitizer address "$t" "$out" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "${extra[@]}" \
    >"../target/fuzz-corpus/$t.log" 2>&1
}
report() {
  local t="$1" status="$2"
  local log="../target/fuzz-corpus/$t.log"
  echo "== fuzz $t for ${seconds}s (AddressSanitizer)"
  grep -E "^(Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true
  if [ "$status" -ne 0 ]; then
    # The property that failed, the sanitizer's report, and where the input is.
    grep -E -A3 "panicked at|==[0-9]+==ERROR|SUMMARY|Test unit written|Reproduce with" "$log" | head -40 >&2
    echo "fuzz $t failed (exit $status); full log: target/fuzz-corpus/$t.log" >&2
    return 1
  fi
}
failed=0
i=0
while [ "$i" -lt ${#targets[@]} ]; do
  batch=("${targets[@]:i:jobs}")
  pids=()
  for t in "${batch[@]}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    status=0
    wait "${pids[$k]}" || status=$?
    report "${batch[$k]}" "$status" || failed=1
  done
  i=$((i + jobs))
done
exit "$failed"
