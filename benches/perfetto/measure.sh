#!/usr/bin/env bash
# The Perfetto export against the Chrome JSON of the same traces: bytes
# per event (raw and zstd), export time, and peak resident memory (GNU
# time's "Maximum resident set size"); and a large session exported
# streamed, to show its memory does not grow with the session.
#
#   bash benches/perfetto/measure.sh [BIG_SECONDS]
#
# Traces: the async_backend example's ring (tracing spans and events of
# 64 async tasks), a session of 5M 16-byte tracepoint events (paced at
# 5M/s for 1 s), and a session of the paced example as fast as it goes
# for BIG_SECONDS (default 2: about 45M events here; about 1.1 GB of
# chunks, and its Perfetto trace about 1.7 GB, in a temporary directory
# removed at the end). The Chrome export of the large session is not run:
# it holds the whole trace in memory (about 1 KB an event).
set -euo pipefail
cd "$(dirname "$0")/../.."
big_seconds=${1:-2}
cargo build -q --release --locked -p ringtrace-cli --bin ringtrace
cargo build -q --release --locked -p ringtrace --example paced --example async_backend
bin=target/release
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs `ringtrace export IN --format F -o OUT`; prints "seconds max_rss_kb".
# The export's own summary line goes to $tmp/said.
timed_export() {
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin/ringtrace" export "$1" --format "$2" -o "$3" 2>"$tmp/said"
  cat "$tmp/time"
}
# The event count of the last export's summary line.
exported_events() {
  sed -n 's/^ringtrace export: \([0-9]*\) events.*/\1/p' "$tmp/said"
}

row() { # name input events
  local name=$1 input=$2 events=$3
  read -r pt pm < <(timed_export "$input" perfetto "$tmp/t.pftrace")
  read -r ct cm < <(timed_export "$input" chrome "$tmp/t.json")
  local ps cs pz cz
  ps=$(stat -c %s "$tmp/t.pftrace"); cs=$(stat -c %s "$tmp/t.json")
  pz=$(zstd -q -c "$tmp/t.pftrace" | wc -c); cz=$(zstd -q -c "$tmp/t.json" | wc -c)
  python3 - "$name" "$events" "$ps" "$cs" "$pz" "$cz" "$pt" "$ct" "$pm" "$cm" <<'PY'
import sys
name, n, ps, cs, pz, cz, pt, ct, pm, cm = sys.argv[1:]
n, ps, cs, pz, cz = map(int, (n, ps, cs, pz, cz))
pt, ct, pm, cm = float(pt), float(ct), int(pm), int(cm)
print(f"| {name} | {n} | {ps/n:.1f} | {cs/n:.1f} | {cs/ps:.2f} | {pz/n:.2f} | {cz/n:.2f} | "
      f"{n/max(pt,1e-3)/1e6:.2f} | {n/max(ct,1e-3)/1e6:.2f} | {pm/1024:.0f} | {cm/1024:.0f} |")
PY
rm -f "$tmp/t.pftrace" "$tmp/t.json"
}

echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $(date -u +%F)"
echo
echo "| trace | events | perfetto B/event | chrome B/event | chrome / perfetto | perfetto zstd B/event | chrome zstd B/event | perfetto M events/s | chrome M events/s | perfetto peak MB | chrome peak MB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
"$bin/examples/async_backend" --ring "$tmp/async.ring" >/dev/null
n=$("$bin/ringtrace" dump --json "$tmp/async.ring" | wc -l)
row "tracing: 64 async tasks (ring file)" "$tmp/async.ring" "$n"
"$bin/ringtrace" record -o "$tmp/mid" --mode blocking -- "$bin/examples/paced" --rate 5000000 --threads 1 --seconds 1 >/dev/null 2>&1
n=$("$bin/ringtrace" export "$tmp/mid" --format perfetto -o /dev/null 2>&1 | sed -n 's/^ringtrace export: \([0-9]*\) events.*/\1/p')
row "tracepoints: 16-byte events (session)" "$tmp/mid" "$n"
rm -rf "$tmp/mid"

"$bin/ringtrace" record -o "$tmp/big" --mode blocking -- "$bin/examples/paced" --rate 0 --threads 1 --seconds "$big_seconds" >/dev/null 2>&1
read -r bt bm < <(timed_export "$tmp/big" perfetto "$tmp/big.pftrace")
n=$(exported_events)
echo
echo "large session, streamed: $n events, $(du -sb "$tmp/big" | cut -f1) bytes of chunks, to $(stat -c %s "$tmp/big.pftrace") bytes of Perfetto trace in $bt s ($(python3 -c "print(f'{$n / $bt / 1e6:.2f}')") M events/s), peak resident $((bm / 1024)) MB"
