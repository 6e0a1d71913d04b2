/* SPDX-License-Identifier: MIT */
/* tests/bench/bench_test_profile.h: a profile's selection as empty results, for the lab's
 * cmocka tests of target tables (include after cmocka.h; link bench_profiles.c). */
#ifndef DISKGATE_BENCH_TEST_PROFILE_H
#define DISKGATE_BENCH_TEST_PROFILE_H

#include <stdio.h>
#include <string.h>

#include "bench/bench_profiles.h"
#include "bench/bench_types.h"

/* Sets *r to what `diskgate bench --profile PROFILE` (and --configs CONFIGS, unless NULL)
 * selects, over cells[0..ncells) zeroed, each cell's config and workload set and no run
 * yet: the caller fills the runs, then calls bench_stats_results_finish. */
static inline void bench_test_profile(struct bench_results *r, struct bench_cell *cells,
                                      size_t ncells, const char *profile, const char *configs)
{
  FILE *err = fopen("/dev/null", "w");

  memset(r, 0, sizeof(*r));
  memset(cells, 0, ncells * sizeof(*cells));
  assert_int_equal(bench_profiles_apply(profile, &r->opts), 0);
  r->opts.configs = configs;
  assert_int_equal(bench_profiles_select(&r->opts, r, err), 0);
  fclose(err);
  assert_true(r->nconfigs * r->nworkloads <= ncells);
  r->cells = cells;
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      bench_results_cell(r, c, w)->cfg = r->configs[c];
      bench_results_cell(r, c, w)->wl = r->workloads[w];
    }
  }
}

#endif
