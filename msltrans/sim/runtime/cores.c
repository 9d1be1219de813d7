/* How many workers a dispatch may use without taking a core from another program, and the
   dispatch test hook (MSLTRANS_SIM_DISPATCH_TEST).

   The cores this process may use (sched_getaffinity) less the threads of other programs
   running now: the kernel's count of runnable threads (/proc/loadavg's fourth field, read
   at each dispatch; it counts the reading thread itself, and this process's pool threads
   that spin for work are taken out). A count over a process restricted to part of the
   machine's CPUs is scaled to its share of them. One sample sees a short-lived thread as
   well as a CPU-bound one, so the estimate is the smaller of this sample and the previous
   one when that one is recent: a program that keeps a core busy is in both. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched.h"

/* A sample older than this does not filter the next one. */
#define RECENT_NS 200000000ull

unsigned msl_sim_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (unsigned)n;
    }
    return 1;
}

/* Runnable threads of the whole machine now, or -1 where /proc/loadavg cannot be read. */
static long running_now(void) {
    static int fd = -2;
    if (fd == -2) fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[128];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = 0;
    /* "0.52 0.61 0.70 3/412 12345": the field before '/' */
    char *slash = strchr(text, '/');
    if (!slash) return -1;
    char *p = slash;
    while (p > text && p[-1] >= '0' && p[-1] <= '9') p--;
    if (p == slash) return -1;
    return strtol(p, NULL, 10);
}

unsigned msl_sim_free_cores(unsigned spinning, const msl_sim_dispatch_hook *hook) {
    static unsigned long long last_ns;
    static long last_others = -1;
    unsigned cores = msl_sim_cores();
    if (cores <= 1) return 1;
    long running = hook->running ? (long)hook->running : running_now();
    if (running < 0) return cores;
    long others = running - 1 - (long)spinning;   /* the calling thread counts itself */
    if (others < 0) others = 0;
    static long online;   /* sysconf reads a file each time (20 us): once */
    if (!online) online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > (long)cores) others = (others * (long)cores + online - 1) / online;
    long estimate = others;
    if (!hook->running) {   /* a sample: filtered by the last one, and kept */
        unsigned long long now = msl_sim_now_ns();
        if (last_others >= 0 && now - last_ns < RECENT_NS && last_others < estimate)
            estimate = last_others;
        last_others = others;
        last_ns = now;
    }
    return estimate >= (long)cores ? 1 : cores - (unsigned)estimate;
}

/* Where a woken pool thread runs: the scheduler's choice, and on a virtual machine that is
   the waking thread's own CPU (an idle virtual CPU whose host thread is not running counts
   as preempted, not idle, to the guest's scheduler), so the woken thread waited behind the
   caller until a balancing tick moved it (benchmarks/sim_wake_latency.py: two threads'
   2 ms of work took 4.0-5.4 ms after a pause on a 2-CPU machine, 2.1 ms steered). Before a
   pool thread is woken it is allowed every CPU of this thread's set but the one the caller
   runs on; *steered keeps that CPU + 1 (0: none yet), so a thread is set again only when
   the caller has moved. */
void msl_sim_steer(pthread_t thread, int *steered) {
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu + 1 == *steered) return;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) || !CPU_ISSET(cpu, &set) || CPU_COUNT(&set) < 2)
        return;
    CPU_CLR(cpu, &set);
    if (pthread_setaffinity_np(thread, sizeof set, &set) == 0) *steered = cpu + 1;
}

/* MSLTRANS_SIM_DISPATCH_TEST: comma-separated `chunk=N` (threadgroups a claim takes),
   `reverse` (claims from the last threadgroup down), `late_ms=N` (pool workers wait N ms
   after being woken before they look for work), `caller_late_ms=N` (the calling thread
   waits N ms after opening the launch: the pool workers take the first groups),
   `running=N` (the count of runnable threads the worker count is chosen from, instead of
   /proc/loadavg's), `no_prewake` (msl_sim_prewake does nothing). A test aid: results must not change. */
int msl_sim_dispatch_test(msl_sim_dispatch_hook *hook, char *message, unsigned long size) {
    memset(hook, 0, sizeof *hook);
    const char *text = getenv("MSLTRANS_SIM_DISPATCH_TEST");
    if (!text || !*text) return 0;
    const char *p = text;
    int bad = 0;
    while (*p && !bad) {
        unsigned long *field = NULL;
        if (!strncmp(p, "chunk=", 6)) {
            field = &hook->chunk;
            p += 6;
        } else if (!strncmp(p, "caller_late_ms=", 15)) {
            field = &hook->caller_late_ms;
            p += 15;
        } else if (!strncmp(p, "running=", 8)) {
            field = &hook->running;
            p += 8;
        } else if (!strncmp(p, "late_ms=", 8)) {
            field = &hook->late_ms;
            p += 8;
        } else if (!strncmp(p, "reverse", 7)) {
            hook->reverse = 1;
            p += 7;
        } else if (!strncmp(p, "no_prewake", 10)) {
            hook->no_prewake = 1;
            p += 10;
        } else {
            bad = 1;
        }
        if (field) {
            unsigned long n = 0;
            const char *start = p;
            for (; *p >= '0' && *p <= '9' && n < 1000000; p++) n = n * 10 + (unsigned)(*p - '0');
            if (p == start || (field == &hook->chunk && n == 0)) bad = 1;
            *field = n;
        }
        if (*p == ',') p++;
        else if (*p) bad = 1;
    }
    if (bad) {
        snprintf(message, size, "MSLTRANS_SIM_DISPATCH_TEST must be comma-separated chunk=N "
                 "(N >= 1), reverse, late_ms=N, caller_late_ms=N, running=N, no_prewake; "
                 "not '%s'", text);
        return -1;
    }
    return 0;
}
