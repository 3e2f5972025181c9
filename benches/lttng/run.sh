#!/usr/bin/env bash
# LTTng-UST 2.13 side of the `ringtrace record` comparison.  See README.md.
#
#   run.sh lossless [--threads N] [--seconds D] [--start R] [--steps S] [--repeats K] [options]
#   run.sh max      [--threads N] [--seconds D] [--repeats K] [options]
#   run.sh probe    --rate R [--threads N] [--seconds D] [options]   (one measurement)
#
# options (channel settings are per CPU, per-UID buffers unless --buffers pid):
#   --subbuf-size SIZE        sub-buffer size            (default 256K)
#   --num-subbuf N            sub-buffers per CPU        (default 4)
#   --buffers uid|pid         LTTng buffering scheme     (default uid)
#   --blocking-timeout T      inf or microseconds: blocking mode (default: none = discard mode)
#   --outdir DIR              where per-probe trace dirs go (default /var/tmp)
#   --json FILE               write every probe's JSON to FILE (lossless/max)
#   --log FILE                append each probe's stderr (producer/lttng details) to FILE
#   --max-other-cpu F         rerun a run if other processes used > F CPUs during it (default 0.25)
#   --noise-retries N, --noise-wait S   reruns of such a run (3) and pause before each (10 s)
#
# Installs nothing.  Starts a private lttng-sessiond if none of this user runs,
# and kills it (and only it) at exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[[ $# -ge 1 ]] || usage
cmd=$1; shift
case $cmd in lossless|max|probe) ;; -h|--help) usage ;; *) echo "run.sh: unknown command $cmd" >&2; usage ;; esac

threads=1 seconds=2 rate= start=250000 steps=6 repeats= json= log=
search_extra=()
subbuf_size=256K num_subbuf=4 buffers=uid blocking= outdir=/var/tmp
while [[ $# -gt 0 ]]; do
    case $1 in
        --threads) threads=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --start) start=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --repeats) repeats=$2; shift 2 ;;
        --json) json=$2; shift 2 ;;
        --log) log=$2; shift 2 ;;
        --max-other-cpu|--noise-retries|--noise-wait) search_extra+=("$1" "$2"); shift 2 ;;
        --subbuf-size) subbuf_size=$2; shift 2 ;;
        --num-subbuf) num_subbuf=$2; shift 2 ;;
        --buffers) buffers=$2; shift 2 ;;
        --blocking-timeout) blocking=$2; shift 2 ;;
        --outdir) outdir=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "run.sh: unknown option $1" >&2; usage ;;
    esac
done
[[ $cmd != probe || -n $rate ]] || { echo "run.sh probe: --rate R is required" >&2; exit 2; }

# ---- prerequisites (checked, never installed) -------------------------------
missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 (apt-get install $2)"); }
need lttng lttng-tools
need lttng-sessiond lttng-tools
need babeltrace2 babeltrace2
need gcc gcc
need python3 python3
need pgrep procps
need du coreutils
if command -v gcc >/dev/null 2>&1; then
    if ! printf '#include <lttng/tracepoint.h>\n#include <lttng/tracepoint-event.h>\n' |
        gcc -E -x c - >/dev/null 2>&1; then
        missing+=("lttng-ust headers <lttng/tracepoint.h> (apt-get install liblttng-ust-dev)")
    fi
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "run.sh: missing prerequisites:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
[[ -d $outdir && -w $outdir ]] || { echo "run.sh: --outdir $outdir is not a writable directory" >&2; exit 1; }

# ---- temp dir, private LTTNG_HOME, cleanup ----------------------------------
tmp=$(mktemp -d /tmp/rtbench-lttng-run.XXXXXX)
export LTTNG_HOME=$tmp/home
mkdir -p "$LTTNG_HOME"
our_sessiond=

cleanup() {
    local rc=$?
    set +e
    if [[ -n $our_sessiond ]]; then
        # Sessions of our probes are destroyed by lttng_probe.sh itself; this
        # catches anything left after an interrupt, then stops the daemon.
        local kids s
        kids=$(pgrep -P "$our_sessiond" 2>/dev/null | tr '\n' ' ')
        for s in $(lttng list 2>/dev/null | sed -n 's/^ *[0-9]*) \(rtbench-[^ ]*\).*/\1/p'); do
            lttng destroy "$s" >/dev/null 2>&1
        done
        kill -TERM "$our_sessiond" 2>/dev/null
        for _ in $(seq 100); do
            kill -0 "$our_sessiond" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$our_sessiond" 2>/dev/null; then
            echo "run.sh: session daemon $our_sessiond did not stop, sending SIGKILL" >&2
            kill -KILL "$our_sessiond" 2>/dev/null
        fi
        for s in $kids; do
            for _ in $(seq 50); do kill -0 "$s" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$s" 2>/dev/null && kill -KILL "$s" 2>/dev/null
        done
        echo "run.sh: stopped the session daemon we started (pid $our_sessiond)" >&2
    fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build ------------------------------------------------------------------
gcc -O2 -Wall -Wextra -I"$here" -o "$tmp/producer" "$here/producer.c" "$here/probe.c" \
    -llttng-ust -ldl -lpthread

# ---- session daemon ---------------------------------------------------------
uid=$(id -u)
sessiond=$(pgrep -o -x -u "$uid" lttng-sessiond || true)
if [[ -n $sessiond ]]; then
    echo "run.sh: using the already running lttng-sessiond (pid $sessiond); it will be left running" >&2
else
    lttng-sessiond --daemonize --no-kernel
    sessiond=$(pgrep -o -x -u "$uid" lttng-sessiond || true)
    [[ -n $sessiond ]] || { echo "run.sh: lttng-sessiond did not start" >&2; exit 1; }
    our_sessiond=$sessiond
fi

export LTTNG_BENCH_PRODUCER=$tmp/producer
export LTTNG_BENCH_SESSIOND_PID=$sessiond
export LTTNG_BENCH_SUBBUF_SIZE=$subbuf_size
export LTTNG_BENCH_NUM_SUBBUF=$num_subbuf
export LTTNG_BENCH_BUFFERS=$buffers
export LTTNG_BENCH_OUTDIR=$outdir
if [[ -n $blocking ]]; then export LTTNG_BENCH_BLOCKING_TIMEOUT=$blocking; else unset LTTNG_BENCH_BLOCKING_TIMEOUT; fi

# ---- banner -----------------------------------------------------------------
ncpu=$(nproc)
echo "# date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# cpu:     $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) x $ncpu online"
echo "# kernel:  $(uname -r)"
echo "# lttng:   $(lttng --version | head -1); lttng-ust $(dpkg-query -W -f='${Version}' liblttng-ust1 2>/dev/null || echo '?'); $(babeltrace2 --version | head -1)"
echo "# channel: userspace, per-$buffers buffers, $num_subbuf x $subbuf_size sub-buffers per CPU," \
    "$([[ -n $blocking ]] && echo "blocking-timeout=$blocking" || echo 'discard mode (default), no blocking')," \
    "switch/read timers off, mmap output"
echo "# event:   ringtrace_bench:event {u64 seq, u32 thread, u32 aux} = 16 bytes payload"
echo "# outdir:  $outdir ($(df -PT "$outdir" | awk 'NR==2 {print $2 " on " $1}'))"
echo "# command: run.sh $cmd --threads $threads --seconds $seconds${rate:+ --rate $rate}"

probe="$here/lttng_probe.sh"
case $cmd in
    probe)
        "$probe" --rate "$rate" --threads "$threads" --seconds "$seconds"
        ;;
    lossless)
        python3 "$here/search.py" lossless --probe "$probe" --threads "$threads" --seconds "$seconds" \
            --start "$start" --steps "$steps" ${repeats:+--repeats "$repeats"} ${json:+--json "$json"} ${log:+--log "$log"} ${search_extra[@]+"${search_extra[@]}"}
        ;;
    max)
        python3 "$here/search.py" max --probe "$probe" --threads "$threads" --seconds "$seconds" \
            ${repeats:+--repeats "$repeats"} ${json:+--json "$json"} ${log:+--log "$log"} ${search_extra[@]+"${search_extra[@]}"}
        ;;
esac
