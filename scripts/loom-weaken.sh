#!/usr/bin/env bash
# Weakens one ordering at a time and runs the loom models (all but the slow
# two_writers model); prints which models fail. docs/verification.md holds
# the table this printed. The edits are by line number, as the source was
# when the table was made: check that each still lands on the ordering it
# names (a row that no longer applies prints "PATTERN DID NOT APPLY") and
# renumber after editing those files (scripts/loom-weaken-renumber.py COMMIT
# does it). It restores each file with git.
# (Until 2026-12-01 the W8 and W9 rows edited each other's lines.)
set -u
cd "$(dirname "$0")/.."
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -q -p ringtrace-ring --release --test loom --no-run >/dev/null 2>&1
LOOM_BIN=$(ls -t target/loom/release/deps/loom-* | grep -v "\.d$" | head -1)
R=crates/ringtrace-ring/src
declare -a W=(
"W1|fast-path state CAS AcqRel->Relaxed|$R/cpu_buffer.rs|370s/Ordering::AcqRel/Ordering::Relaxed/"
"W2|general-loop state CAS AcqRel/Acquire->Relaxed|$R/cpu_buffer.rs|567s/Ordering::AcqRel/Ordering::Relaxed/;568s/Ordering::Acquire/Ordering::Relaxed/"
"W3|commit fetch_add Release->Relaxed|$R/reservation.rs|188s/Ordering::Release/Ordering::Relaxed/"
"W4|commit_bytes (header, padding, prefix) Release->Relaxed|$R/cpu_buffer.rs|867s/Ordering::Release/Ordering::Relaxed/"
"W5|slot_phys slot load Acquire->Relaxed|$R/cpu_buffer.rs|619s/Ordering::Acquire/Ordering::Relaxed/"
"W6|prepare_page slot and commit loads Acquire->Relaxed|$R/cpu_buffer.rs|647s/Ordering::Acquire/Ordering::Relaxed/;650s/Ordering::Acquire/Ordering::Relaxed/;654s/Ordering::Acquire/Ordering::Relaxed/"
"W7|claim step 3 (fresh count) CAS AcqRel->Relaxed|$R/cpu_buffer.rs|669s/Ordering::AcqRel/Ordering::Relaxed/;670s/Ordering::Acquire/Ordering::Relaxed/"
"W8|claim step 2 slot CAS (nothing unread) AcqRel->Relaxed|$R/cpu_buffer.rs|799s/Ordering::AcqRel/Ordering::Relaxed/;800s/Ordering::Acquire/Ordering::Relaxed/"
"W9|claim step 1 (OPENING) CAS AcqRel->Relaxed|$R/cpu_buffer.rs|699s/Ordering::AcqRel/Ordering::Relaxed/;700s/Ordering::Acquire/Ordering::Relaxed/"
"W10|claim step 2 slot CAS (overrun) AcqRel->Relaxed|$R/cpu_buffer.rs|824s/Ordering::AcqRel, Ordering::Acquire/Ordering::Relaxed, Ordering::Relaxed/"
"W11|overrun_claims_done Release->Relaxed|$R/cpu_buffer.rs|829s/Ordering::Release/Ordering::Relaxed/"
"W12|step E Release fences removed|$R/cpu_buffer.rs|381s/fence(Ordering::Release);/{}/;577s/fence(Ordering::Release);/{}/"
"W13|reader commit-word loads Acquire->Relaxed|$R/reader.rs|284s/Ordering::Acquire/Ordering::Relaxed/;332s/Ordering::Acquire/Ordering::Relaxed/;426s/Ordering::Acquire/Ordering::Relaxed/"
"W14|head_page slot load Acquire->Relaxed|$R/reader.rs|413s/Ordering::Acquire/Ordering::Relaxed/"
"W15|loss_mark loads Acquire->Relaxed|$R/reader.rs|369s/Ordering::Acquire/Ordering::Relaxed/;370s/Ordering::Acquire/Ordering::Relaxed/g;371s/Ordering::Acquire/Ordering::Relaxed/"
"W16|swap_in_spare Release fence removed|$R/reader.rs|566s/fence(Ordering::Release);/{}/"
"W17|spare commit-word store Release->Relaxed|$R/reader.rs|580s/Ordering::Release/Ordering::Relaxed/"
"W18|take/swap slot CAS AcqRel->Relaxed|$R/reader.rs|596s/Ordering::AcqRel/Ordering::Relaxed/;597s/Ordering::Acquire/Ordering::Relaxed/"
"W19|in-place c1/state/c2 Acquire->Relaxed|$R/reader.rs|666s/Ordering::Acquire/Ordering::Relaxed/;667s/Ordering::Acquire/Ordering::Relaxed/;668s/Ordering::Acquire/Ordering::Relaxed/"
"W20|in-place seqlock Acquire fence removed|$R/reader.rs|729s/fence(Ordering::Acquire);/{}/"
"W21|in-place consume CAS AcqRel->Relaxed|$R/reader.rs|739s/Ordering::AcqRel/Ordering::Relaxed/;740s/Ordering::Acquire/Ordering::Relaxed/"
"W22|iterator commit and state loads Acquire->Relaxed|$R/iter.rs|97s/Ordering::Acquire/Ordering::Relaxed/;122s/Ordering::Acquire/Ordering::Relaxed/;123s/Ordering::Acquire/Ordering::Relaxed/"
"W23|iterator seqlock Acquire fence removed|$R/iter.rs|139s/fence(Ordering::Acquire);/{}/"
"W24|discard (drop) fetch_add Release->Relaxed|$R/reservation.rs|221s/Ordering::Release/Ordering::Relaxed/"
)
for w in "${W[@]}"; do
  IFS='|' read -r id what file expr <<<"$w"
  sed -i "$expr" "$file"
  if git diff --quiet -- "$file"; then echo "$id | $what | PATTERN DID NOT APPLY"; continue; fi
  if ! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -q -p ringtrace-ring --release --test loom --no-run >/dev/null 2>&1; then
    echo "$id | $what | BUILD FAILED"; git checkout -q -- "$file"; continue; fi
  out=$(LOOM_MAX_PREEMPTIONS=2 timeout 300 "$LOOM_BIN" --skip two_writers 2>&1)
  failed=$(echo "$out" | grep -E "^test .* \.\.\. FAILED$" | sed 's/^test //; s/ \.\.\. FAILED//' | tr '\n' ' ')
  [ -z "$failed" ] && failed="(none)"
  echo "$id | $what | $failed"
  git checkout -q -- "$file"
done
echo "took ${SECONDS} s"
