#!/usr/bin/env bash
# One LTTng-UST measurement ("probe command" for search.py).
#
#   lttng_probe.sh --rate R --threads N --seconds D
#
# R is events/s PER THREAD (0 = unpaced).  Needs a running root session daemon
# (run.sh starts one) and the producer binary (run.sh builds it).  Prints
# human-readable progress on stderr and exactly one JSON line on stdout:
#
#   {"emitted":E,"read":R,"lost":L,"consumer_cpu_ns":C,"bytes":B, ...extras}
#
#   emitted          events the producer threads emitted (their own count)
#   read             events babeltrace2 read back from the trace on disk
#   lost             emitted - read (ground truth, whatever the cause)
#   consumer_cpu_ns  on-CPU ns of lttng-consumerd (all its threads, from
#                    /proc/PID/task/*/schedstat) from just before `lttng start`
#                    to after `lttng destroy`; consumer_cpu_ns_stat is the same
#                    from /proc/PID/stat utime+stime (10 ms ticks)
#   bytes            du -sb of the trace directory (data+metadata+index)
#   extras: discarded_tracer (channel "Discarded events" from `lttng list`,
#   low 63 bits; discarded_tracer_raw as printed),
#   discarded_bt2 (sum of babeltrace2 "Tracer discarded N events" warnings, or
#   null if that pass was skipped; summed modulo 2^64, see below),
#   bt2_wrapped (warnings >= 2^63), discard_msgs, sessiond_cpu_ns,
#   machine_{busy,idle,iowait,steal}_ns (all CPUs, /proc/stat, same window),
#   window_ns (wall time of that window), other_cpu_ns (machine busy minus
#   producer, consumerd and sessiond CPU: foreign load; search.py retries a
#   run when it exceeds a share of one CPU),
#   producer_cpu_ns, wall_ns, threads, rate, seconds, channel settings.
#
# Settings (environment, all optional):
#   LTTNG_BENCH_PRODUCER   producer binary       (default: ./producer next to this script)
#   LTTNG_BENCH_SUBBUF_SIZE  sub-buffer size       (default 256K)
#   LTTNG_BENCH_NUM_SUBBUF   sub-buffers per CPU   (default 4)
#   LTTNG_BENCH_BUFFERS    uid | pid             (default uid = LTTng's default)
#   LTTNG_BENCH_BLOCKING_TIMEOUT  unset = discard mode (never blocks, LTTng's
#                          default); inf or N us = blocking mode (the producer
#                          then runs with LTTNG_UST_ALLOW_BLOCKING=1)
#   LTTNG_BENCH_OUTDIR     parent dir of the per-probe trace dir (default /var/tmp)
#   LTTNG_BENCH_PRETTY     auto | always | never: run the (slow, ~2 us/event)
#                          babeltrace2 text pass that yields the discarded-event
#                          warnings.  auto = only when the counter pass saw
#                          discarded-event messages (default auto)
#   LTTNG_BENCH_PRETTY_MAX_EVENTS  auto skips the text pass above this many
#                          events read (default 10000000, ~1.1 us/event here)
#   LTTNG_BENCH_KEEP=1     keep the trace directory (path printed on stderr)
#   LTTNG_BENCH_CONSUMERD_RT  a SCHED_FIFO priority: every lttng-consumerd
#                          thread runs under it (chrt), as `ringtrace record
#                          --realtime` runs its recorder (default: unset,
#                          the normal policy)
#   LTTNG_BENCH_SESSIOND_PID  session daemon whose lttng-consumerd children are
#                          measured (default: oldest lttng-sessiond of this user)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rate= threads= seconds=
while [[ $# -gt 0 ]]; do
    case $1 in
        --rate) rate=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        *) echo "lttng_probe.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [[ -z $rate || -z $threads || -z $seconds ]]; then
    echo "usage: lttng_probe.sh --rate R --threads N --seconds D" >&2
    exit 2
fi

producer=${LTTNG_BENCH_PRODUCER:-$here/producer}
subbuf_size=${LTTNG_BENCH_SUBBUF_SIZE:-256K}
num_subbuf=${LTTNG_BENCH_NUM_SUBBUF:-4}
buffers=${LTTNG_BENCH_BUFFERS:-uid}
blocking=${LTTNG_BENCH_BLOCKING_TIMEOUT:-}
outbase=${LTTNG_BENCH_OUTDIR:-/var/tmp}
pretty=${LTTNG_BENCH_PRETTY:-auto}
pretty_max=${LTTNG_BENCH_PRETTY_MAX_EVENTS:-10000000}
[[ -x $producer ]] || { echo "lttng_probe.sh: producer binary $producer not found (run.sh builds it)" >&2; exit 1; }

# Private client home unless the caller (run.sh) already set one.
own_home=
if [[ -z ${LTTNG_HOME:-} ]]; then
    own_home=$(mktemp -d /tmp/rtbench-lttng-home.XXXXXX)
    export LTTNG_HOME=$own_home
fi

session="rtbench-$$-$RANDOM"
workdir=$(mktemp -d "$outbase/rtbench-lttng.XXXXXX")
tracedir=$workdir/trace
created=0

cleanup() {
    if [[ $created == 1 ]]; then
        lttng destroy "$session" >/dev/null 2>&1 || true
    fi
    if [[ ${LTTNG_BENCH_KEEP:-0} == 1 ]]; then
        echo "lttng_probe.sh: kept trace in $tracedir" >&2
    else
        rm -rf "$workdir"
    fi
    [[ -n $own_home ]] && rm -rf "$own_home"
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

clk_tck=$(getconf CLK_TCK)
sessiond_pid=${LTTNG_BENCH_SESSIOND_PID:-$(pgrep -o -x -u "$(id -u)" lttng-sessiond || true)}
[[ -n $sessiond_pid ]] || { echo "lttng_probe.sh: no lttng-sessiond of this user running (run.sh starts one)" >&2; exit 1; }

# utime+stime (ns, CLK_TCK resolution: 10 ms) summed over the given pids
# (absent pids count 0).
cpu_ns_of() {
    local total=0 pid line
    for pid in "$@"; do
        line=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
        line=${line##*) }          # drop "pid (comm) " (comm may hold spaces)
        # fields after comm: state=1 ... utime=12 stime=13
        read -r -a f <<<"$line"
        total=$((total + (f[11] + f[12]) * 1000000000 / clk_tck))
    done
    echo "$total"
}
# On-CPU time (ns resolution) from /proc/PID/task/*/schedstat, summed over
# all live threads of the given pids.
sched_ns_of() {
    local total=0 pid t v
    for pid in "$@"; do
        for t in /proc/"$pid"/task/*/schedstat; do
            read -r v _ <"$t" 2>/dev/null || continue
            total=$((total + v))
        done
    done
    echo "$total"
}
# Whole machine, from the aggregate "cpu" line of /proc/stat (USER_HZ ticks):
# prints "busy idle iowait steal" in ns (busy = user+nice+system+irq+softirq).
machine_ns() {
    local _cpu u n sy id io irq sirq st _rest
    read -r _cpu u n sy id io irq sirq st _rest </proc/stat
    local k=$((1000000000 / clk_tck))
    echo "$(((u + n + sy + irq + sirq) * k)) $((id * k)) $((io * k)) $((st * k))"
}
consumerd_pids() { pgrep -x -P "$sessiond_pid" lttng-consumerd || true; }

log() { echo "[lttng_probe] $*" >&2; }

lttng create "$session" --output="$tracedir" >/dev/null
created=1
chan_opts=(--userspace --session="$session" --subbuf-size="$subbuf_size" --num-subbuf="$num_subbuf" --buffers-"$buffers")
mode=discard
if [[ -n $blocking ]]; then
    chan_opts+=(--blocking-timeout="$blocking")
    mode="discard+blocking-timeout=$blocking"
fi
lttng enable-channel "${chan_opts[@]}" bench >/dev/null
lttng enable-event --userspace --session="$session" --channel=bench 'ringtrace_bench:*' >/dev/null

# consumerd is spawned by the sessiond when the first channel is enabled.
mapfile -t cpids < <(consumerd_pids)
if [[ -n ${LTTNG_BENCH_CONSUMERD_RT:-} ]]; then
    for pid in "${cpids[@]}"; do
        chrt -f -a -p "$LTTNG_BENCH_CONSUMERD_RT" "$pid" >/dev/null
    done
    mode="$mode,consumerd=SCHED_FIFO:$LTTNG_BENCH_CONSUMERD_RT"
fi
cons0=$(cpu_ns_of "${cpids[@]}")
consq0=$(sched_ns_of "${cpids[@]}")
sess0=$(sched_ns_of "$sessiond_pid")
read -r mb0 mi0 mw0 ms0 < <(machine_ns)
t0=$(date +%s%N)
lttng start "$session" >/dev/null

penv=(LTTNG_UST_REGISTER_TIMEOUT=30000)
[[ -n $blocking ]] && penv+=(LTTNG_UST_ALLOW_BLOCKING=1)
pout=$(env "${penv[@]}" "$producer" --threads "$threads" --rate "$rate" --seconds "$seconds")
printf '%s\n' "$pout" | grep -v '^RESULT' | sed 's/^/[producer] /' >&2

lttng stop "$session" >/dev/null 2>&1
# Exact integer sums (awk would round to doubles; see the wrap-around note below).
sum_ints() { python3 -c 'import sys; print(sum(int(x) for x in sys.stdin.read().split()) % 2**64)'; }
# lttng 2.13.9 sometimes reports the channel's discarded count with bit 63 set
# (2^63 + the true count, checked against emitted - read); keep the raw value
# and report the low 63 bits.
discarded_tracer_raw=$(lttng list "$session" | awk '/Discarded events:/ {print $3}' | sum_ints)
discarded_tracer=$(python3 -c "print($discarded_tracer_raw & (2**63 - 1))")
lttng destroy "$session" >/dev/null
created=0

mapfile -t cpids < <(consumerd_pids)
cons1=$(cpu_ns_of "${cpids[@]}")
consq1=$(sched_ns_of "${cpids[@]}")
sess1=$(sched_ns_of "$sessiond_pid")
read -r mb1 mi1 mw1 ms1 < <(machine_ns)
t1=$(date +%s%N)

result=$(printf '%s\n' "$pout" | sed -n 's/^RESULT //p')
jget() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$result"; }
emitted=$(jget emitted)
producer_cpu_ns=$(jget producer_cpu_ns)
wall_ns=$(jget wall_ns)

# Pass 1 (fast): count events and discarded-event messages.
counts=$(babeltrace2 "$tracedir" -c sink.utils.counter --params='step=+0')
read_events=$(awk '/Event messages$/ {print $1}' <<<"$counts")
discard_msgs=$(awk '/Discarded event messages?$/ {print $1}' <<<"$counts")
# Pass 2 (slow, optional): the text sink's per-gap warnings carry the counts.
discarded_bt2=null
bt2_wrapped=null
if [[ $pretty == always || ($pretty == auto && $discard_msgs -gt 0 && $read_events -le $pretty_max) ]]; then
    errf=$workdir/bt2.err
    babeltrace2 "$tracedir" -c sink.text.pretty --params='field-default=hide,color="never"' 2>"$errf" >/dev/null || true
    # babeltrace2 2.0.4 computes each gap as the difference of the packets'
    # events_discarded counters modulo 2^64; with LTTng-UST 2.13 per-CPU
    # streams that counter sometimes goes back (a packet carrying a stale,
    # lower value), which yields a warning of ~2^64 - k followed by one of +k.
    # The sum modulo 2^64 is the true total; bt2_wrapped counts such warnings.
    grep -o 'Tracer discarded [0-9]* events' "$errf" | awk '{print $3}' >"$workdir/bt2.n" || true
    discarded_bt2=$(sum_ints <"$workdir/bt2.n")
    bt2_wrapped=$(python3 -c 'import sys; print(sum(1 for x in sys.stdin.read().split() if int(x) >= 2**63))' <"$workdir/bt2.n")
fi
bytes=$(du -sb "$tracedir" | cut -f1)

lost=$((emitted - read_events))
window=$((t1 - t0))
# CPU used by anything but the producer threads and the two daemons during the
# window (lttng client commands and producer start-up account for ~0.1 CPU s).
other=$(((mb1 - mb0) - producer_cpu_ns - (consq1 - consq0) - (sess1 - sess0)))
cons_stat=$((cons1 - cons0))
cons=$((consq1 - consq0))
sess=$((sess1 - sess0))
log "rate=$rate/thread threads=$threads seconds=$seconds channel=${num_subbuf}x$subbuf_size/cpu buffers=per-$buffers mode=$mode"
log "emitted=$emitted read=$read_events lost=$lost discarded(tracer)=$discarded_tracer discarded(bt2)=$discarded_bt2 (wrapped warnings: $bt2_wrapped) consumerd_cpu=$((cons / 1000000))ms(stat:$((cons_stat / 1000000))ms) sessiond_cpu=$((sess / 1000000))ms other_cpu=$((other / 1000000))ms/$((window / 1000000))ms bytes=$bytes"
printf '{"emitted":%s,"read":%s,"lost":%s,"consumer_cpu_ns":%s,"bytes":%s,"consumer_cpu_ns_stat":%s,"discarded_tracer":%s,"discarded_tracer_raw":%s,"discarded_bt2":%s,"discard_msgs":%s,"bt2_wrapped":%s,"sessiond_cpu_ns":%s,"machine_busy_ns":%s,"machine_idle_ns":%s,"machine_iowait_ns":%s,"machine_steal_ns":%s,"window_ns":%s,"other_cpu_ns":%s,"producer_cpu_ns":%s,"wall_ns":%s,"threads":%s,"rate":%s,"seconds":%s,"subbuf_size":"%s","num_subbuf":%s,"buffers":"%s","mode":"%s"}\n' \
    "$emitted" "$read_events" "$lost" "$cons" "$bytes" "$cons_stat" "$discarded_tracer" "$discarded_tracer_raw" "$discarded_bt2" "$discard_msgs" "$bt2_wrapped" \
    "$sess" $((mb1 - mb0)) $((mi1 - mi0)) $((mw1 - mw0)) $((ms1 - ms0)) "$window" "$other" "$producer_cpu_ns" "$wall_ns" "$threads" "$rate" "$seconds" "$subbuf_size" "$num_subbuf" "$buffers" "$mode"
