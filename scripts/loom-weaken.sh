#!/usr/bin/env bash
# Weakens the ring's orderings one at a time and runs the loom models (all
# but the slow two_writers model) against each; prints which models fail.
# The orderings are the named constants of
# crates/ringtrace-ring/src/order.rs: `--cfg ringtrace_weaken="NAME"` makes
# NAME Relaxed (or removes a fence), so nothing is edited. docs/verification.md
# holds the table this prints.
#
#   bash scripts/loom-weaken.sh                 # every name
#   bash scripts/loom-weaken.sh state_cas iter_fence   # some
set -u
cd "$(dirname "$0")/.."
ORDER=crates/ringtrace-ring/src/order.rs
mapfile -t ALL < <(grep -o 'ringtrace_weaken = "[a-z0-9_]*"' "$ORDER" | sed 's/.*"\(.*\)"/\1/')
if [ $# -gt 0 ]; then
  for name in "$@"; do
    if ! printf '%s\n' "${ALL[@]}" | grep -qx "$name"; then
      echo "unknown ordering '$name'; $ORDER names: ${ALL[*]}" >&2
      exit 2
    fi
  done
  NAMES=("$@")
else
  NAMES=("${ALL[@]}")
fi
started=$(date +%s)
echo "| name | models that fail |"
echo "|---|---|"
for name in "${NAMES[@]}"; do
  flags="--cfg loom --cfg ringtrace_weaken=\"$name\""
  target=target/loom-weaken
  if ! RUSTFLAGS="$flags" CARGO_TARGET_DIR=$target \
      cargo test -q -p ringtrace-ring --release --test loom --no-run >/dev/null 2>&1; then
    echo "| $name | BUILD FAILED |"; continue
  fi
  bin=$(ls -t $target/release/deps/loom-* | grep -v "\.d$" | head -1)
  out=$(LOOM_MAX_PREEMPTIONS=2 timeout 300 "$bin" --skip two_writers 2>&1)
  failed=$(echo "$out" | grep -E "^test .* \.\.\. FAILED$" | sed 's/^test //; s/ \.\.\. FAILED//' | sed 's/.*/`&`/' | paste -sd, - | sed 's/,/, /g')
  if [ -z "$failed" ]; then
    if echo "$out" | grep -q "^test result: ok"; then failed="**none**"; else failed="DID NOT FINISH (300 s)"; fi
  fi
  echo "| $name | $failed |"
done
echo
echo "$(( $(date +%s) - started )) s, LOOM_MAX_PREEMPTIONS=2, $(date -u +%Y-%m-%d)"
