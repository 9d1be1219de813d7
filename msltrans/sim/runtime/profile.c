#include <stddef.h>

#include "profile.h"

int msl_sim_profile_begin(const msl_sim_launch *launch, msl_sim_worker **workers, unsigned n) {
    for (unsigned i = 0; i < n; i++) workers[i]->profile = NULL;
    (void)launch;
    return 0;
}
void msl_sim_profile_end(msl_sim_worker **workers, unsigned n) { (void)workers; (void)n; }
void msl_sim_profile_group(msl_sim_worker *w) { (void)w; }
void msl_sim_profile_matrix(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site) {
    (void)w; (void)f; (void)site;
}
void msl_sim_profile_simd(msl_sim_worker *w, const msl_sim_site *site, unsigned sg) {
    (void)w; (void)site; (void)sg;
}
void msl_sim_profile_barrier(msl_sim_worker *w, const msl_sim_site *site) { (void)w; (void)site; }
