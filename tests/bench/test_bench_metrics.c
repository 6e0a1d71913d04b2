/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_metrics.c: the metrics profile's rows and cells (diskgate with
 * --metrics beside the same server without it, 4K random reads), its row's recognition
 * (bench_configs_metrics) and the target M1: exactly 0.97x passes, below fails, a failed
 * cell is "not measured". */
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
#include "bench/bench_targets_metrics.h"
#include "bench/bench_workloads.h"

static struct bench_cell cells[BENCH_MAX_CONFIGS * BENCH_MAX_WORKLOADS];

/* The metrics profile's results, each cell run once: the metrics row at `ratio` times the
 * plain row's 100000 IOPS. */
static void metrics_results(struct bench_results *r, double ratio)
{
  bench_test_profile(r, cells, sizeof(cells) / sizeof(cells[0]), "metrics", NULL);
  for (size_t c = 0; c < r->nconfigs; c++) {
    double k = bench_configs_metrics(r->configs[c]) ? ratio : 1.0;

    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);

      cell->nruns = 1;
      cell->runs[0] = (struct bench_sample){ .ok = true, .value = 100000 * k,
                                             .iops = 100000 * k, .mbps = 400 * k,
                                             .ios = 1e6 };
    }
  }
  bench_stats_results_finish(r);
}

/* The profile: the plain row and the metrics row, randread-4k only, 7 rounds of 5 s on
 * 1 GiB; only the metrics row is recognised as one. */
static void test_profile(void **state)
{
  static struct bench_results r;
  const struct bench_config *on = bench_configs_find("diskgate-metrics-unix-direct-full");
  const struct bench_config *off = bench_configs_find("diskgate-unix-direct-full");

  (void)state;
  metrics_results(&r, 1.0);
  assert_int_equal(r.nconfigs, 2);
  assert_string_equal(r.configs[0]->name, "diskgate-unix-direct-full");
  assert_string_equal(r.configs[1]->name, "diskgate-metrics-unix-direct-full");
  assert_int_equal(r.nworkloads, 1);
  assert_string_equal(r.workloads[0]->name, "randread-4k");
  assert_int_equal(r.opts.runs, 7);
  assert_int_equal(r.opts.runtime_s, 5);
  assert_int_equal(r.opts.size, 1ull << 30);
  assert_non_null(on);
  assert_non_null(off);
  assert_true(bench_configs_metrics(on));
  assert_false(bench_configs_metrics(off));
  assert_false(bench_configs_metrics(bench_configs_find("qemu-nbd-unix")));
  /* the same server otherwise: sync, cache, transport */
  assert_string_equal(on->sync_mode, off->sync_mode);
  assert_string_equal(on->cache_mode, off->cache_mode);
  assert_int_equal(on->transport, off->transport);
  assert_int_equal(on->server, BENCH_SERVER_DISKGATE);
  assert_true(bench_report_targets_wanted(&r));
}

/* M1: exactly 0.97x passes, 0.96x fails, a failed cell makes the line "not measured". */
static void test_target(void **state)
{
  static struct bench_results r;
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];

  (void)state;
  metrics_results(&r, 0.97);
  assert_int_equal(bench_targets_metrics_eval(&r, rows, BENCH_TARGETS_MAX_ROWS), 1);
  assert_string_equal(rows[0].target, "M1");
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[0].value, "0.97x");
  assert_string_equal(rows[0].detail, "97000 vs 100000 IOPS");
  assert_non_null(strstr(rows[0].what, "vs diskgate-unix-direct-full >= 0.97x"));

  metrics_results(&r, 0.96);
  bench_targets_metrics_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(rows[0].value, "0.96x");

  bench_results_cell(&r, 0, 0)->runs[0].ok = false;
  bench_stats_results_finish(&r);
  bench_targets_metrics_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
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
