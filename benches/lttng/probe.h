/* LTTng-UST 2.13 tracepoint provider for the ringtrace vs LTTng recorder
 * benchmark.  One event, 16 bytes of payload, to match ringtrace's 16-byte
 * bench payload:
 *   seq    u64  per-thread sequence number (0, 1, 2, ...)
 *   thread u32  producer thread index
 *   aux    u32  free 32-bit word (the producer stores the low bits of the
 *               batch index; it exists only to pad the payload to 16 bytes)
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ringtrace_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./probe.h"

#if !defined(RINGTRACE_BENCH_PROBE_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RINGTRACE_BENCH_PROBE_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    ringtrace_bench,
    event,
    LTTNG_UST_TP_ARGS(
        uint64_t, seq,
        uint32_t, thread,
        uint32_t, aux
    ),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, seq, seq)
        lttng_ust_field_integer(uint32_t, thread, thread)
        lttng_ust_field_integer(uint32_t, aux, aux)
    )
)

#endif /* RINGTRACE_BENCH_PROBE_H */

#include <lttng/tracepoint-event.h>
