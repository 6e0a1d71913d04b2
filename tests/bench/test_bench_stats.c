/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_stats.c: medians, percentiles and percentages of the lab. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bench_test.h"

#include "bench/bench_configs.h"
#include "bench/bench_stats.h"
#include "bench/bench_workloads.h"

static void test_median_odd_even(void **state)
{
  const double odd[] = { 5, 1, 3 };
  const double even[] = { 4, 1, 3, 2 };
  const double one[] = { 7.5 };

  (void)state;
  assert_near(bench_stats_median(odd, 3), 3.0, 1e-12);
  assert_near(bench_stats_median(even, 4), 2.5, 1e-12);
  assert_near(bench_stats_median(one, 1), 7.5, 1e-12);
  assert_near(bench_stats_median(NULL, 0), 0.0, 1e-12);
  /* the input is not reordered */
  assert_near(odd[0], 5.0, 0);
  assert_near(even[0], 4.0, 0);
}

static void test_percentile_interpolates(void **state)
{
  const double v[] = { 10, 20, 30, 40, 50 };
  double big[500];

  (void)state;
  assert_near(bench_stats_percentile(v, 5, 0), 10.0, 1e-12);
  assert_near(bench_stats_percentile(v, 5, 100), 50.0, 1e-12);
  assert_near(bench_stats_percentile(v, 5, 25), 20.0, 1e-12);
  assert_near(bench_stats_percentile(v, 5, 90), 46.0, 1e-12);
  assert_near(bench_stats_percentile(v, 5, 99), 49.6, 1e-12);
  assert_true(isnan(bench_stats_percentile(v, 5, -1)));
  assert_true(isnan(bench_stats_percentile(v, 5, 100.5)));
  /* more values than the stack buffer holds */
  for (size_t i = 0; i < 500; i++) {
    big[i] = (double)(499 - i);
  }
  assert_near(bench_stats_percentile(big, 500, 50), 249.5, 1e-9);
  assert_near(bench_stats_percentile(big, 500, 99), 494.01, 1e-9);
}

static void test_pct(void **state)
{
  bool ok = false;

  (void)state;
  assert_near(bench_stats_pct(19.0, 100.0, &ok), 19.0, 1e-12);
  assert_true(ok);
  assert_near(bench_stats_pct(341.5, 100.0, &ok), 341.5, 1e-12);
  assert_true(ok);
  assert_near(bench_stats_pct(84.7e3 * 0.19, 84.7e3, &ok), 19.0, 1e-9);
  bench_stats_pct(1.0, 0.0, &ok);
  assert_false(ok);
  bench_stats_pct(1.0, -3.0, &ok);
  assert_false(ok);
  bench_stats_pct(NAN, 3.0, &ok);
  assert_false(ok);
  bench_stats_pct(1.0, INFINITY, &ok);
  assert_false(ok);
}

static void test_cell_finish_skips_failed_runs(void **state)
{
  static struct bench_cell cell;

  (void)state;
  memset(&cell, 0, sizeof(cell));
  cell.cfg = bench_configs_find("host");
  cell.wl = bench_workloads_find("randread-4k");
  cell.state = BENCH_CELL_PENDING;
  cell.nruns = 4;
  cell.runs[0] = (struct bench_sample){ .ok = true, .value = 100, .p99_us = 10, .cpu_per_kio = 1 };
  cell.runs[1] = (struct bench_sample){ .ok = false, .value = 1e9 };
  cell.runs[2] = (struct bench_sample){ .ok = true, .value = 300, .p99_us = 30, .cpu_per_kio = 3 };
  cell.runs[3] = (struct bench_sample){ .ok = true, .value = 200, .p99_us = 50, .cpu_per_kio = 2,
                                        .fsync_p99_us = 7 };
  bench_stats_cell_finish(&cell);
  assert_int_equal(cell.state, BENCH_CELL_DONE);
  assert_near(cell.value, 200, 1e-12);
  assert_near(cell.p99_us, 30, 1e-12);
  assert_near(cell.cpu_per_kio, 2, 1e-12);
  assert_near(cell.fsync_p99_us, 0, 1e-12);

  memset(&cell.runs, 0, sizeof(cell.runs));
  cell.nruns = 2;
  bench_stats_cell_finish(&cell);
  assert_int_equal(cell.state, BENCH_CELL_FAILED);

  cell.state = BENCH_CELL_NA;
  bench_stats_cell_finish(&cell);
  assert_int_equal(cell.state, BENCH_CELL_NA);
}

/* host, qemu-nbd-unix, guest-nvme-file, guest-virtio-file x randread-4k */
static void test_results_pct_per_group(void **state)
{
  static struct bench_cell cells[4];
  const char *names[] = { "host", "qemu-nbd-unix", "guest-nvme-file", "guest-virtio-file" };
  const double values[] = { 80000, 20000, 9000, 6000 };
  struct bench_results r;

  (void)state;
  memset(&r, 0, sizeof(r));
  memset(cells, 0, sizeof(cells));
  r.nconfigs = 4;
  r.nworkloads = 1;
  r.workloads[0] = bench_workloads_find("randread-4k");
  r.cells = cells;
  for (size_t c = 0; c < 4; c++) {
    r.configs[c] = bench_configs_find(names[c]);
    assert_non_null(r.configs[c]);
    cells[c].cfg = r.configs[c];
    cells[c].wl = r.workloads[0];
    cells[c].nruns = 1;
    cells[c].runs[0] = (struct bench_sample){ .ok = true, .value = values[c] };
  }
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_HOST), 0);
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_GUEST), 3);
  bench_stats_results_finish(&r);
  assert_true(cells[0].have_pct);
  assert_near(cells[0].pct, 100, 1e-9);
  assert_near(cells[1].pct, 25, 1e-9);
  /* guest rows are compared with guest-virtio-file, not with the host line */
  assert_near(cells[2].pct, 150, 1e-9);
  assert_near(cells[3].pct, 100, 1e-9);

  /* without a host row, host-side rows get no percentage */
  r.configs[0] = bench_configs_find("nbdkit-unix");
  cells[0].cfg = r.configs[0];
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_HOST), -1);
  bench_stats_results_finish(&r);
  assert_false(cells[0].have_pct);
  assert_false(cells[1].have_pct);
  assert_true(cells[2].have_pct);
}

/* host, diskgate-rbd, qemu-nbd-rbd x randread-4k: the RBD rows are compared with qemu-nbd-rbd
 * (the same image), never with the host line; without qemu-nbd-rbd they get no percentage. */
static void test_results_pct_rbd_group(void **state)
{
  static struct bench_cell cells[3];
  const char *names[] = { "host", "diskgate-rbd", "qemu-nbd-rbd" };
  const double values[] = { 80000, 3000, 4000 };
  struct bench_results r;

  (void)state;
  memset(&r, 0, sizeof(r));
  memset(cells, 0, sizeof(cells));
  r.nconfigs = 3;
  r.nworkloads = 1;
  r.workloads[0] = bench_workloads_find("randread-4k");
  r.cells = cells;
  for (size_t c = 0; c < 3; c++) {
    r.configs[c] = bench_configs_find(names[c]);
    assert_non_null(r.configs[c]);
    cells[c].cfg = r.configs[c];
    cells[c].wl = r.workloads[0];
    cells[c].nruns = 1;
    cells[c].runs[0] = (struct bench_sample){ .ok = true, .value = values[c] };
  }
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_HOST), 0);
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_RBD), 2);
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_GUEST), -1);
  bench_stats_results_finish(&r);
  assert_near(cells[0].pct, 100, 1e-9);
  assert_near(cells[1].pct, 75, 1e-9);
  assert_near(cells[2].pct, 100, 1e-9);

  r.nconfigs = 2;
  assert_int_equal(bench_stats_baseline_row(&r, BENCH_GROUP_RBD), -1);
  bench_stats_results_finish(&r);
  assert_false(cells[1].have_pct);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_median_odd_even),
    cmocka_unit_test(test_percentile_interpolates),
    cmocka_unit_test(test_pct),
    cmocka_unit_test(test_cell_finish_skips_failed_runs),
    cmocka_unit_test(test_results_pct_per_group),
    cmocka_unit_test(test_results_pct_rbd_group),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
