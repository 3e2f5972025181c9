#!/usr/bin/env bash
# Both recorders' lossless rates, one after the other in one run on this
# machine: LTTng-UST (run.sh, discard session) and `ringtrace record`
# (ringtrace_probe.py) in discard and in blocking mode, with 1 and 2
# producer threads, 16-byte events, 1 MiB per CPU on both sides (LTTng's
# 4 x 256 KiB sub-buffers), CLOCK_MONOTONIC on both sides; then ringtrace
# with its `tsc` clock (labelled), and bytes per event with zstd.
#
#   benches/lttng/compare.sh [--seconds D] [--threads "1 2"] [--skip-lttng]
#                            [--realtime PRIO]
#
# --realtime PRIO runs both consumers under SCHED_FIFO at PRIO (LTTng's
# lttng-consumerd through chrt, ringtrace's through `record --realtime`),
# as `perf record -r` does; every section's label then says so.
#
# Each search's table goes to stdout, with its RESULT line; the last lines
# sum them up. Run it on a quiet machine: a concurrent build divides every
# rate (see RESULTS.md). Builds ringtrace (release) first; installs nothing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

seconds=2 threads="1 2" lttng=1 rt=
while [[ $# -gt 0 ]]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --skip-lttng) lttng=0; shift ;;
        --realtime) rt=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown argument '$1' (valid: --seconds D, --threads LIST, --skip-lttng, --realtime PRIO)" >&2; exit 2 ;;
    esac
done

(cd "$root" && cargo build -q --release --locked -p ringtrace-cli -p ringtrace --examples --bins)
echo "# date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# cpu:     $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc) online"
echo "# kernel:  $(uname -r)"
tag=""
if [[ -n $rt ]]; then
    export LTTNG_BENCH_CONSUMERD_RT=$rt RINGTRACE_PROBE_REALTIME=$rt
    tag=", consumer SCHED_FIFO $rt"
    echo "# consumers: SCHED_FIFO priority $rt on both sides"
fi
summary=()
note() { summary+=("$1: $(grep '^RESULT' "$2" | tail -1)"); }
log=$(mktemp /tmp/rtbench-compare.XXXXXX)
trap 'rm -f "$log"' EXIT

search() {
    local label="$1$tag"; shift
    echo
    echo "## $label"
    "$@" | tee "$log"
    note "$label" "$log"
}

probe="python3 $here/ringtrace_probe.py"
for n in $threads; do
    if [[ $lttng == 1 ]]; then
        search "LTTng-UST discard, $n thread(s)" \
            "$here/run.sh" lossless --threads "$n" --seconds "$seconds" --start 500000
    fi
    search "ringtrace record discard (mono), $n thread(s)" \
        python3 "$here/search.py" lossless --probe "$probe" --threads "$n" --seconds "$seconds" --start 500000
    RINGTRACE_PROBE_MODE=blocking:1000 search "ringtrace record blocking 1 s (mono), $n thread(s)" \
        python3 "$here/search.py" lossless --probe "$probe" --threads "$n" --seconds "$seconds" --start 500000
done
RINGTRACE_PROBE_CLOCK=tsc search "ringtrace record discard (tsc clock, not LTTng's), 1 thread(s)" \
    python3 "$here/search.py" lossless --probe "$probe" --threads 1 --seconds "$seconds" --start 500000
RINGTRACE_PROBE_CLOCK=tsc RINGTRACE_PROBE_MODE=blocking:1000 search "ringtrace record blocking 1 s (tsc clock, not LTTng's), 1 thread(s)" \
    python3 "$here/search.py" lossless --probe "$probe" --threads 1 --seconds "$seconds" --start 4000000
echo
echo "## bytes on disk per event at 1 M events/s, 1 thread"
for z in "" 3; do
    out=$(RINGTRACE_PROBE_ZSTD=$z python3 "$here/ringtrace_probe.py" --rate 1000000 --threads 1 --seconds "$seconds" 2>/dev/null)
    echo "zstd ${z:-off}: $out"
    per=$(python3 -c 'import json, sys
d = json.loads(sys.argv[1]); n = max(d["read"], 1)
print("%.1f B/event, recorder %.1f ns/event" % (d["bytes"] / n, d["consumer_cpu_ns"] / n))' "$out")
    summary+=("bytes/event, zstd ${z:-off}: $per")
done
echo
echo "## summary"
printf '%s\n' "${summary[@]}"
