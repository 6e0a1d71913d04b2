/* SPDX-License-Identifier: MIT */
/* Unit tests of the collapse profile of diskgate bench (src/bench/bench_profiles.c) and its
 * target C1 (src/bench/bench_targets_collapse.c): 4K random writes from 32 connections into
 * one file at least the IOPS of 4. The cells are the tests'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bench_test.h"
#include "bench_test_profile.h"
#include "bench/bench_configs.h"
#include "bench/bench_profiles.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_stats.h"
#include "bench/bench_targets_collapse.h"
#include "bench/bench_workloads.h"

static struct bench_cell cells[BENCH_MAX_CONFIGS * BENCH_MAX_WORKLOADS];

/* r: the collapse profile's cells, one run each: iops4, iops16 and iops32 IOPS from 4, 16
 * and 32 connections. */
static void collapse_results(struct bench_results *r, double iops4, double iops16, double iops32)
{
  bench_test_profile(r, cells, sizeof(cells) / sizeof(cells[0]), "collapse", NULL);
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);
      const char *name = r->workloads[w]->name;
      double iops = strcmp(name, "randwrite-4k-4c") == 0    ? iops4
                    : strcmp(name, "randwrite-4k-16c") == 0 ? iops16
                                                            : iops32;

      cell->nruns = 1;
      cell->runs[0] = (struct bench_sample){ .ok = true, .value = iops, .iops = iops,
                                             .ios = 1e5 };
    }
  }
  bench_stats_results_finish(r);
}

/* The profile: diskgate on the page cache by 4K random writes QD32 from 4, 16 and 32
 * connections (fio jobs), 3 x 5 s on 1 GiB, with a target table. */
static void test_profile(void **state)
{
  static struct bench_results r;
  const struct bench_workload *w32 = bench_workloads_find("randwrite-4k-32c");

  (void)state;
  collapse_results(&r, 1, 1, 1);
  assert_int_equal(r.nconfigs, 1);
  assert_string_equal(r.configs[0]->name, "diskgate-unix-writeback-full");
  assert_string_equal(r.configs[0]->cache_mode, "writeback");
  assert_int_equal(r.nworkloads, 3);
  assert_string_equal(r.workloads[0]->name, "randwrite-4k-4c");
  assert_string_equal(r.workloads[2]->name, "randwrite-4k-32c");
  assert_non_null(w32);
  assert_int_equal(w32->numjobs, 32);
  assert_int_equal(w32->iodepth, 32);
  assert_int_equal(w32->bs, 4096);
  assert_string_equal(w32->rw, "randwrite");
  assert_int_equal(r.opts.runs, 3);
  assert_int_equal(r.opts.runtime_s, 5);
  assert_true(bench_report_targets_wanted(&r));
}

/* C1: exactly the IOPS of 4 passes, one IOPS fewer fails (the collapse: 131K vs 619K on
 * 16 cores); the 16-connection figure is in the detail; a failed cell is "not measured". */
static void test_target(void **state)
{
  static struct bench_results r;
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];

  (void)state;
  collapse_results(&r, 619000, 600000, 619000);
  assert_int_equal(bench_targets_collapse_eval(&r, rows, BENCH_TARGETS_MAX_ROWS), 1);
  assert_string_equal(rows[0].target, "C1");
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[0].value, "1.00x");
  assert_string_equal(rows[0].limit, ">= 1x");
  assert_string_equal(rows[0].detail, "619000 vs 619000 IOPS; 16 connections 600000 IOPS");

  collapse_results(&r, 619000, 300000, 131000);
  bench_targets_collapse_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(rows[0].value, "0.21x");

  collapse_results(&r, 619000, 619000, 618999);
  bench_targets_collapse_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_FAIL);

  bench_results_cell(&r, 0, 0)->runs[0].ok = false; /* the 4-connection cell */
  bench_stats_results_finish(&r);
  bench_targets_collapse_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_MISSING);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_profile),
    cmocka_unit_test(test_target),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
