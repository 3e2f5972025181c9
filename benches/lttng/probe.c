/* Tracepoint provider object: instantiates the probe declared in probe.h.
 * Linked statically into producer (no LD_PRELOAD / dlopen needed). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "probe.h"
