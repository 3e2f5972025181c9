/* producer: N threads emitting the ringtrace_bench:event LTTng-UST tracepoint.
 *
 *   producer --threads N --rate R --seconds D [--batch B] [--pin]
 *
 * --rate R   target events/s PER THREAD; 0 = unpaced (as fast as possible).
 * Paced mode: each thread emits R*D events in batches of B events; batch k is
 * released when CLOCK_MONOTONIC reaches start + k*B/R (busy wait, no sleep),
 * so the average rate is exact and bursts are at most B events.  A thread that
 * falls behind emits its late batches back to back (it never skips events).
 * Default B = max(1, R * 20 us), i.e. one clock read per ~20 us of events.
 * Unpaced mode: emit in batches of 1024, stop once D seconds have elapsed.
 *
 * Output (stdout): one line per thread, then a single machine-readable line
 *   RESULT {"threads":N,"rate":R,"emitted":E,"producer_cpu_ns":C,"wall_ns":W}
 * where wall_ns is the longest thread's emission time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

struct worker {
    pthread_t tid;
    uint32_t index;
    uint64_t emitted;
    uint64_t cpu_ns;
    uint64_t wall_ns;
    uint64_t max_lag_ns; /* paced only: worst lateness of a batch release */
};

static uint32_t g_threads = 1;
static double g_rate = 0;      /* per thread, events/s; 0 = unpaced */
static double g_seconds = 2;
static uint64_t g_batch = 0;
static int g_pin = 0;
static _Atomic int g_ready = 0;
static _Atomic uint64_t g_start_ns = 0;

static inline uint64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    const uint32_t me = w->index;

    if (g_pin) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)(me % (uint32_t)ncpu), &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }

    atomic_fetch_add(&g_ready, 1);
    uint64_t start;
    while ((start = atomic_load(&g_start_ns)) == 0)
        ;
    while (now_ns(CLOCK_MONOTONIC) < start)
        ;
    const uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t seq = 0;

    if (g_rate > 0) {
        const uint64_t total = (uint64_t)(g_rate * g_seconds + 0.5);
        uint64_t batch = g_batch ? g_batch : (uint64_t)(g_rate * 20e-6);
        if (batch < 1)
            batch = 1;
        const double ns_per_event = 1e9 / g_rate;
        uint64_t k = 0;
        while (seq < total) {
            const uint64_t due = start + (uint64_t)((double)(k * batch) * ns_per_event);
            uint64_t t = now_ns(CLOCK_MONOTONIC);
            if (t < due) {
                while ((t = now_ns(CLOCK_MONOTONIC)) < due)
                    ;
            } else if (t - due > w->max_lag_ns) {
                w->max_lag_ns = t - due;
            }
            uint64_t end = seq + batch;
            if (end > total)
                end = total;
            for (; seq < end; seq++)
                lttng_ust_tracepoint(ringtrace_bench, event, seq, me, (uint32_t)k);
            k++;
        }
    } else {
        const uint64_t stop = start + (uint64_t)(g_seconds * 1e9);
        uint32_t k = 0;
        for (;;) {
            for (int i = 0; i < 1024; i++, seq++)
                lttng_ust_tracepoint(ringtrace_bench, event, seq, me, k);
            k++;
            if (now_ns(CLOCK_MONOTONIC) >= stop)
                break;
        }
    }

    w->wall_ns = now_ns(CLOCK_MONOTONIC) - start;
    w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    w->emitted = seq;
    return NULL;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --threads N --rate R --seconds D [--batch B] [--pin]\n"
            "  --rate R: events/s per thread, 0 = unpaced\n",
            argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--pin")) {
            g_pin = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--threads"))
            g_threads = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--rate"))
            g_rate = strtod(v, NULL);
        else if (!strcmp(a, "--seconds"))
            g_seconds = strtod(v, NULL);
        else if (!strcmp(a, "--batch"))
            g_batch = strtoull(v, NULL, 10);
        else
            usage(argv[0]);
    }
    if (g_threads < 1 || g_seconds <= 0 || g_rate < 0)
        usage(argv[0]);

    struct worker *ws = calloc(g_threads, sizeof(*ws));
    if (!ws)
        return 1;
    for (uint32_t i = 0; i < g_threads; i++) {
        ws[i].index = i;
        int err = pthread_create(&ws[i].tid, NULL, run, &ws[i]);
        if (err) {
            fprintf(stderr, "pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    while (atomic_load(&g_ready) < (int)g_threads)
        sched_yield();
    /* Common start 2 ms from now so every thread is spinning when it opens. */
    atomic_store(&g_start_ns, now_ns(CLOCK_MONOTONIC) + 2000000ull);

    uint64_t emitted = 0, cpu = 0, wall = 0;
    for (uint32_t i = 0; i < g_threads; i++) {
        pthread_join(ws[i].tid, NULL);
        struct worker *w = &ws[i];
        printf("thread=%" PRIu32 " emitted=%" PRIu64 " cpu_ns=%" PRIu64
               " wall_ns=%" PRIu64 " rate=%.0f/s cpu_ns_per_event=%.1f max_lag_us=%.1f\n",
               w->index, w->emitted, w->cpu_ns, w->wall_ns,
               w->wall_ns ? (double)w->emitted * 1e9 / (double)w->wall_ns : 0.0,
               w->emitted ? (double)w->cpu_ns / (double)w->emitted : 0.0,
               (double)w->max_lag_ns / 1e3);
        emitted += w->emitted;
        cpu += w->cpu_ns;
        if (w->wall_ns > wall)
            wall = w->wall_ns;
    }
    printf("RESULT {\"threads\":%" PRIu32 ",\"rate\":%.0f,\"emitted\":%" PRIu64
           ",\"producer_cpu_ns\":%" PRIu64 ",\"wall_ns\":%" PRIu64 "}\n",
           g_threads, g_rate, emitted, cpu, wall);
    free(ws);
    return 0;
}
