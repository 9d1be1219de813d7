/* Host-side interface of libmslsim (called from Python through ctypes; the layouts of
   msl_sim_launch and msl_sim_report are mirrored in msltrans/sim/native.py). */
#ifndef MSLSIM_H
#define MSLSIM_H
#include "../include/msl_sim/abi.h"

#define MSL_SIM_MAX_THREADS 1024
#define MSL_SIM_TG_LIMIT 32768u
/* Bytes the arena extends past the limit: room for threadgroup statics placed at an odd
   multiple of their alignment (rendezvous.c), which Metal's accounting does not count. */
#define MSL_SIM_TG_SLACK 16u
#define MSL_SIM_MAX_TG_ARGS 31

enum msl_sim_schedule { MSL_SIM_FORWARD = 0, MSL_SIM_REVERSE = 1, MSL_SIM_SHUFFLE = 2 };

enum msl_sim_error_kind {
    MSL_SIM_OK = 0,
    MSL_SIM_ERR_SEGV = 1,        /* bad address: Python maps it to a buffer */
    MSL_SIM_ERR_STACK = 2,       /* fiber stack overflow */
    MSL_SIM_ERR_FPE = 3,         /* integer division trap */
    MSL_SIM_ERR_DIVERGENCE = 4,  /* barrier / SIMD op reached by part of a group */
    MSL_SIM_ERR_TG_MEMORY = 5,   /* threadgroup memory over the limit */
    MSL_SIM_ERR_FAIL = 6,        /* msl_sim_fail from device code */
    MSL_SIM_ERR_LAUNCH = 7,      /* invalid launch geometry */
    MSL_SIM_ERR_BUS = 8,
    MSL_SIM_ERR_TIMEOUT = 9,     /* ran past launch->timeout_ms (a spin-wait never ends) */
    MSL_SIM_ERR_COHERENCE = 10,  /* plain load of another threadgroup's store (coherence.c) */
};

/* The coherence check's input (coherence.c): the dispatch's device memory (shadowed) and
   the address ranges of its coherent(device) buffers. */
#define MSL_SIM_MAX_COHERENCE_RANGES 64
typedef struct msl_sim_coherence_range {
    unsigned long long start, size;
} msl_sim_coherence_range;

typedef struct msl_sim_coherence_in {
    const msl_sim_coherence_range *regions;
    unsigned n_regions;
    unsigned n_coherent;
    const msl_sim_coherence_range *coherent;
} msl_sim_coherence_in;

typedef struct msl_sim_launch {
    msl_sim_entry entry;
    void *const *buffers;
    unsigned n_buffers;
    unsigned n_tg;
    const unsigned long *tg_lengths;   /* bytes of each [[threadgroup(i)]] argument */
    unsigned threads[3];               /* total threads (dispatchThreads semantics) */
    unsigned group_size[3];
    unsigned schedule;
    unsigned workers;                  /* worker threads; 0: MSLTRANS_SIM_THREADS or all CPUs */
    unsigned long long seed;
    unsigned timeout_ms;               /* 0: no limit */
    unsigned profile;                  /* nonzero: count events (profile.c) */
    void *profile_out;                 /* where profile.c adds its counters */
    msl_sim_entry lanes_entry;         /* the kernel run a simdgroup at a time (lanes.c), or NULL */
    const msl_sim_coherence_in *coherence;   /* a checked build's coherence check, or NULL */
} msl_sim_launch;

typedef struct msl_sim_report {
    int kind;
    int is_write;
    int signo;
    unsigned group[3];
    unsigned local[3];
    unsigned local_index;
    unsigned long long fault_addr;
    unsigned long long pc;
    unsigned long long pc_offset;      /* pc relative to its shared object */
    unsigned long tg_static_bytes;     /* static threadgroup memory the kernel declared */
    unsigned long long groups_run;
    unsigned workers;                  /* worker threads the dispatch ran on */
    char object_path[512];
    char message[2048];
    /* MSL_SIM_ERR_COHERENCE: the thread that stored the byte read (fault_addr), whether with
       an atomic, and the code offset of its store in the kernel library (0: unknown). */
    unsigned writer_group[3];
    unsigned writer_local[3];
    unsigned writer_atomic;
    unsigned long long writer_pc_offset;
} msl_sim_report;

int msl_sim_dispatch(const msl_sim_launch *launch, msl_sim_report *report);
void *msl_sim_map_guarded(unsigned long size, unsigned long align, void **map_base,
                          unsigned long *map_len);
void msl_sim_unmap(void *map_base, unsigned long map_len);
int msl_sim_abi_version(void);
/* memcpy of non-overlapping memory on the dispatch's workers (as many as a dispatch would
   use now, one for each MB at most). */
void msl_sim_copy(void *dst, const void *src, unsigned long size);
/* Reads MSLTRANS_SIM_CAS_SPURIOUS and restarts its count (each dispatch); -1 + message if
   the value is invalid. */
int msl_sim_cas_spurious_reset(char *message, unsigned long size);

/* Internals shared by the runtime's C files. */
typedef struct msl_sim_fault {
    int signo;
    int is_write;
    void *addr;
    void *pc;
} msl_sim_fault;

/* The per-thread dispatch time limit fires this signal (not SIGALRM: a host's own alarm,
   e.g. pytest-timeout's, stays armed and untouched). */
#define MSL_SIM_TIMER_SIGNAL (SIGRTMIN + 4)
#endif
