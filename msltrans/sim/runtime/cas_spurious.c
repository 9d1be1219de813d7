/* MSLTRANS_SIM_CAS_SPURIOUS=N: every Nth weak compare-exchange of a dispatch fails
   spuriously (writes nothing; *expected gets the current value, as Metal allows), so the
   retry paths of CAS loops run. Fibers never interleave inside a loop, so without this the
   weak compare-exchange would never fail when the values match. The variable is read at
   every dispatch (not compiled into kernels: cached libraries follow it). While it is on,
   a dispatch runs on one worker thread, so the calls are counted in execution order. */
#include <stdio.h>
#include <stdlib.h>

#include "sched.h"

static unsigned long long period, calls;

int msl_sim_cas_spurious_reset(char *message, unsigned long size) {
    const char *text = getenv("MSLTRANS_SIM_CAS_SPURIOUS");
    period = 0;
    calls = 0;
    if (!text || !*text) return 0;
    unsigned long long n = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9' && n < 1000000000ull; p++) n = n * 10 + (unsigned)(*p - '0');
    if (*p || n == 1) {
        snprintf(message, size, "MSLTRANS_SIM_CAS_SPURIOUS must be 0 (off) or an integer "
                 "N >= 2 (every Nth weak compare-exchange fails spuriously), not '%s'", text);
        return -1;
    }
    period = n;
    return 0;
}

int msl_sim_cas_spurious(void) { return period && ++calls % period == 0; }

/* With failure injection on, a dispatch runs on one worker: the count is in execution order. */
int msl_sim_cas_spurious_enabled(void) { return period != 0; }
