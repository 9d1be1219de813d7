/* Profiling counters (profile.c): events the runtime sees (barriers, SIMD-group ops,
   simdgroup_matrix ops) and, in a profiling build of a kernel, every memory access. */
#ifndef MSLSIM_PROFILE_H
#define MSLSIM_PROFILE_H
#include "sched.h"

int msl_sim_profile_begin(const msl_sim_launch *launch, msl_sim_worker **workers, unsigned n);
void msl_sim_profile_end(msl_sim_worker **workers, unsigned n);
void msl_sim_profile_group(msl_sim_worker *w);
void msl_sim_profile_matrix(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site);
void msl_sim_profile_simd(msl_sim_worker *w, const msl_sim_site *site, unsigned sg);
void msl_sim_profile_barrier(msl_sim_worker *w, const msl_sim_site *site);
#endif
