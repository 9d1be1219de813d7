/* Profiling counters (profile.c): events the runtime sees (barriers, SIMD-group ops,
   simdgroup_matrix ops) and, in a profiling build of a kernel (compiled with clang's
   address-sanitizer instrumentation in callback mode, so that every load and store calls
   __asan_loadN/__asan_storeN first), every device and threadgroup memory access. The layout
   of msl_sim_profile_site and msl_sim_profile_region is mirrored in msltrans/sim/profile.py. */
#ifndef MSLSIM_PROFILE_H
#define MSLSIM_PROFILE_H
#include "sched.h"

/* What a site counts. */
enum {
    MSL_SIM_PROF_DEVICE_LOAD = 1,
    MSL_SIM_PROF_DEVICE_STORE = 2,
    MSL_SIM_PROF_TG_LOAD = 3,
    MSL_SIM_PROF_TG_STORE = 4,
    MSL_SIM_PROF_TG_BARRIER = 10,
    MSL_SIM_PROF_SIMD_BARRIER = 11,
    MSL_SIM_PROF_SIMD_SHUFFLE = 12,
    MSL_SIM_PROF_SIMD_REDUCE = 13,
    MSL_SIM_PROF_SIMD_OTHER = 14,
    MSL_SIM_PROF_MMA = 15,
    MSL_SIM_PROF_MATRIX_LOAD = 16,
    MSL_SIM_PROF_MATRIX_STORE = 17,
};

/* Segment size of the coalescing count, and the bank model of threadgroup memory. */
#define MSL_SIM_PROF_SEGMENT 128u
#define MSL_SIM_PROF_BANKS 32u
#define MSL_SIM_PROF_BANK_BYTES 4u

typedef struct msl_sim_profile_site {
    unsigned long long pc[2];         /* code offsets in the kernel library (0: elsewhere):
                                         the site and the return address of its function */
    unsigned kind, width;             /* width: bytes per lane access (memory kinds) */
    unsigned long long lane_ops;      /* executions by single threads */
    unsigned long long instructions;  /* simdgroup-wide executions (see profile.c) */
    unsigned long long bytes;         /* bytes the lanes asked for */
    unsigned long long segments;      /* device: 128-byte segments touched, summed */
    unsigned long long wavefronts;    /* threadgroup: bank cycles (most words in one bank) */
} msl_sim_profile_site;

/* A device buffer of the dispatch, for classifying addresses and for the footprint. */
typedef struct msl_sim_profile_region {
    unsigned long long start, size;
    unsigned long long read_segments, write_segments;   /* out: distinct segments touched */
} msl_sim_profile_region;

typedef struct msl_sim_profile_out {
    msl_sim_profile_region *regions;
    unsigned n_regions;
    unsigned n_sites;                 /* out */
    msl_sim_profile_site *sites;      /* out: valid until the next profiled dispatch */
} msl_sim_profile_out;

int msl_sim_profile_begin(const msl_sim_launch *launch, msl_sim_worker **workers, unsigned n);
void msl_sim_profile_end(msl_sim_worker **workers, unsigned n);
void msl_sim_profile_group(msl_sim_worker *w);
void msl_sim_profile_matrix(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site);
void msl_sim_profile_simd(msl_sim_worker *w, const msl_sim_site *site, unsigned sg);
void msl_sim_profile_barrier(msl_sim_worker *w, const msl_sim_site *site);
void msl_sim_profile_mma(msl_sim_worker *w, const msl_sim_site *site);
/* All lanes of simdgroup `sg` are at one point: pair up their accesses since the last one. */
void msl_sim_profile_flush(msl_sim_worker *w, unsigned sg);
/* Where the calling fiber's kernel code called into the runtime (for events). */
void msl_sim_profile_note_caller(msl_sim_worker *w, msl_sim_fiber *f, void *frame);
#endif
