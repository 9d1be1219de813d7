/* How late a thread woken through a futex starts, and on which CPU: the measurement behind
   the simulator's msl_sim_steer (docs/sim-execution.md, "Execution model").

   The caller pauses (as a user between launches), wakes a sleeping worker, then both work
   2 ms (as a dispatch's two workers would). Reported: the delay from the wake to the
   worker's first instruction, the round's time from the wake until both are done (2 ms
   when they run side by side, 4 ms when they share a CPU), and how often the worker ran
   on the caller's CPU. With
   `steer`, the worker's affinity is first set to every CPU of the caller's set but the
   caller's (what msl_sim_steer does). Run by benchmarks/sim_wake_latency.py. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 40

static unsigned word;
static int finished, worker_cpu;
static double started;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void busy(double seconds) {
    double end = now() + seconds;
    while (now() < end) {}
}

static void *worker(void *arg) {
    (void)arg;
    unsigned seen = 0;
    for (;;) {
        while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == seen)
            syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
        started = now();
        worker_cpu = sched_getcpu();
        busy(0.002);
        __atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PAUSE_SECONDS steer|free\n", argv[0]);
        return 2;
    }
    double pause = atof(argv[1]);
    int steer = strcmp(argv[2], "steer") == 0;
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    usleep(10000);
    double late[ROUNDS], round_time[ROUNDS];
    int same = 0;
    for (int r = 0; r < ROUNDS; r++) {
        usleep((useconds_t)(pause * 1e6));
        __atomic_store_n(&finished, 0, __ATOMIC_RELEASE);
        int cpu = sched_getcpu();
        double woken = now();
        if (steer) {
            cpu_set_t set;
            if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 1) {
                CPU_CLR(cpu, &set);
                pthread_setaffinity_np(thread, sizeof set, &set);
            }
        }
        __atomic_add_fetch(&word, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        busy(0.002);
        while (!__atomic_load_n(&finished, __ATOMIC_ACQUIRE)) {}
        round_time[r] = now() - woken;
        late[r] = started - woken;
        same += worker_cpu == cpu;
    }
    qsort(late, ROUNDS, sizeof late[0], compare);
    qsort(round_time, ROUNDS, sizeof round_time[0], compare);
    printf("pause %.4f s, %-7s: worker started %4.0f us late (median; p90 %4.0f us), round "
           "%.2f ms (median; p90 %.2f ms), on the caller's CPU %d/%d\n", pause,
           steer ? "steered" : "free", late[ROUNDS / 2] * 1e6, late[ROUNDS * 9 / 10] * 1e6,
           round_time[ROUNDS / 2] * 1e3, round_time[ROUNDS * 9 / 10] * 1e3, same, ROUNDS);
    return 0;
}
