/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_qcow2.c: the qcow2 targets Q1-Q4 on fixed figures, the cells the
 * qcow2 profile runs, its targets table, the sizes fio addresses on each image, and the
 * VmHWM line read from /proc/PID/status. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench_test.h"
#include "bench_test_profile.h"

#include "bench/bench_configs.h"
#include "bench/bench_proc.h"
#include "bench/bench_profiles.h"
#include "bench/bench_qcow2.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_stats.h"
#include "bench/bench_targets_qcow2.h"

static struct bench_figures iops_fig(double iops)
{
  struct bench_figures f = { .ok = true, .iops = iops };

  return f;
}

/* Q1-Q3: diskgate's figure at least goal times the reference's; exactly the goal passes. */
static void test_ratio_verdicts(void **state)
{
  struct bench_figures d = iops_fig(15000), q = iops_fig(10000);
  struct bench_figures dm = { .ok = true, .mbps = 899, .iops = 1e6 };
  struct bench_figures rm = { .ok = true, .mbps = 1000, .iops = 1 };
  struct bench_target_row row;

  (void)state;
  bench_targets_qcow2_ratio("Q1", "4K randread QD32, full image", &d, &q, "qemu-nbd-qcow2",
                            false, 1.5, &row);
  assert_string_equal(row.target, "Q1");
  assert_int_equal(row.verdict, BENCH_VERDICT_PASS);
  assert_string_equal(row.value, "1.50x");
  assert_string_equal(row.limit, ">= 1.5x");
  assert_non_null(strstr(row.what, "IOPS vs qemu-nbd-qcow2 >= 1.5x"));
  assert_string_equal(row.detail, "15000 vs 10000 IOPS");
  d.iops = 14999;
  bench_targets_qcow2_ratio("Q1", "x", &d, &q, "qemu-nbd-qcow2", false, 1.5, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);
  /* Q3 reads MB/s, not IOPS */
  bench_targets_qcow2_ratio("Q3", "1M", &dm, &rm, "diskgate-unix-direct-full", true, 0.9, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(row.value, "0.90x"); /* 0.899, rounded: the verdict is on the figures */
  dm.mbps = 900;
  bench_targets_qcow2_ratio("Q3", "1M", &dm, &rm, "diskgate-unix-direct-full", true, 0.9, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_PASS);
  /* a reference that completed nothing fails no division */
  q.iops = 0;
  bench_targets_qcow2_ratio("Q2", "fresh", &d, &q, "qemu-nbd-qcow2-fresh", false, 1.0, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_PASS);
}

/* Q4: VmHWM at most 64 MiB; a peak never read (0) is no pass. */
static void test_memory_verdicts(void **state)
{
  struct bench_figures d = { .ok = true, .hwm_mib = 64.0 }, q = { .ok = true, .hwm_mib = 37.5 };
  struct bench_figures none = { .ok = false };
  struct bench_target_row row;

  (void)state;
  bench_targets_qcow2_memory(&d, &q, &row);
  assert_string_equal(row.target, "Q4");
  assert_int_equal(row.verdict, BENCH_VERDICT_PASS);
  assert_string_equal(row.value, "64.0 MiB");
  assert_string_equal(row.detail, "qemu-nbd on the same image: 37.5 MiB");
  d.hwm_mib = 64.1;
  bench_targets_qcow2_memory(&d, &none, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(row.detail, "qemu-nbd on the same image: not measured");
  d.hwm_mib = 0;
  bench_targets_qcow2_memory(&d, &q, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);
}

static struct bench_cell cells[BENCH_MAX_CONFIGS * BENCH_MAX_WORKLOADS];

/* Builds the results of a qcow2 run whose every cell a target reads measured 10000 IOPS,
 * 1000 MB/s and a peak of 30 MiB (diskgate's qcow2 cells 2x the IOPS and MB/s), the rest
 * not applicable. */
static void qcow2_results(struct bench_results *r)
{
  bench_test_profile(r, cells, sizeof(cells) / sizeof(cells[0]), "qcow2", NULL);
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);
      bool dg = strncmp(r->configs[c]->name, "diskgate-qcow2", 14) == 0;

      if (!bench_targets_qcow2_uses(cell->cfg->name, cell->wl->name)) {
        cell->state = BENCH_CELL_NA;
        continue;
      }
      cell->nruns = 1;
      cell->runs[0] = (struct bench_sample){ .ok = true, .value = 1, .iops = dg ? 20000 : 10000,
                                             .mbps = dg ? 2000 : 1000, .ios = 1e5,
                                             .hwm_kib = 30 * 1024 };
    }
  }
  bench_stats_results_finish(r);
}

/* The cell (config, workload) of r. */
static struct bench_cell *cell_of(struct bench_results *r, const char *config,
                                  const char *workload)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      if (strcmp(r->configs[c]->name, config) == 0 &&
          strcmp(r->workloads[w]->name, workload) == 0) {
        return bench_results_cell(r, c, w);
      }
    }
  }
  fail_msg("no cell %s / %s", config, workload);
  return NULL;
}

/* The profile's rows and columns hold every cell a target reads, and only those run. */
static void test_profile_cells(void **state)
{
  static struct bench_results r;
  size_t used = 0;

  (void)state;
  qcow2_results(&r);
  assert_int_equal(r.nconfigs, 7);
  assert_int_equal(r.nworkloads, 4);
  for (size_t i = 0; i < r.nconfigs * r.nworkloads; i++) {
    used += r.cells[i].state != BENCH_CELL_NA;
  }
  assert_int_equal(used, 10);
  assert_int_equal(r.opts.runs, 3);
  assert_int_equal(r.opts.runtime_s, 5);
  assert_true(bench_targets_qcow2_uses("diskgate-unix-direct-full", "read-1m"));
  assert_false(bench_targets_qcow2_uses("qemu-nbd-qcow2", "read-1m"));
  assert_false(bench_targets_qcow2_uses("diskgate-qcow2", "randread-4k-4j"));
  assert_false(bench_targets_qcow2_uses("diskgate-qcow2", "read"));
  assert_int_equal(bench_configs_group(bench_configs_find("qemu-nbd-qcow2-1t")),
                   BENCH_GROUP_QCOW2);
  assert_string_equal(bench_configs_group_baseline(BENCH_GROUP_QCOW2), "qemu-nbd-qcow2");
  assert_string_equal(bench_configs_tool2(bench_configs_find("diskgate-qcow2")), "qemu-img");
}

/* Q1-Q4 in order; a failed cell makes only its own line "not measured"; the report of a
 * qcow2 run carries the table, an A/B's does not. */
static void test_eval_table(void **state)
{
  static const char *const order[] = { "Q1", "Q1", "Q2", "Q3", "Q4" };
  static struct bench_results r;
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];
  size_t n;

  (void)state;
  qcow2_results(&r);
  n = bench_targets_qcow2_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(n, 5);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(rows[i].target, order[i]);
    assert_int_equal(rows[i].verdict, BENCH_VERDICT_PASS);
  }
  assert_string_equal(rows[0].value, "2.00x");
  assert_string_equal(rows[3].detail, "2000 vs 1000 MB/s");
  assert_string_equal(rows[4].value, "30.0 MiB");
  assert_true(bench_report_targets_wanted(&r));

  cell_of(&r, "qemu-nbd-qcow2-fresh", "randwrite-4k")->runs[0].ok = false;
  cell_of(&r, "diskgate-qcow2-1t", "randrw-4k-16x64")->runs[0].hwm_kib = 65 * 1024;
  bench_stats_results_finish(&r);
  n = bench_targets_qcow2_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_PASS);
  assert_int_equal(rows[2].verdict, BENCH_VERDICT_MISSING);
  assert_string_equal(rows[2].value, "-");
  assert_int_equal(rows[4].verdict, BENCH_VERDICT_FAIL);
}

/* fio addresses the test file's size on the full image, fixed sizes on the others. */
static void test_image_sizes(void **state)
{
  (void)state;
  assert_int_equal(bench_qcow2_size(bench_configs_find("diskgate-qcow2"), 1ull << 30),
                   1ull << 30);
  assert_int_equal(bench_qcow2_size(bench_configs_find("qemu-nbd-qcow2-fresh"), 1ull << 30),
                   BENCH_QCOW2_FRESH_SIZE);
  assert_int_equal(bench_qcow2_size(bench_configs_find("diskgate-qcow2-1t"), 1ull << 30),
                   1ull << 40);
  assert_int_equal(bench_configs_find("diskgate-qcow2")->image, BENCH_IMAGE_QCOW2_FULL);
  assert_int_equal(bench_configs_find("host")->image, BENCH_IMAGE_NONE);
  /* qemu-nbd's rows take QEMU's cache default (none), diskgate's say direct */
  assert_null(bench_configs_find("qemu-nbd-qcow2")->cache_mode);
  assert_string_equal(bench_configs_find("diskgate-qcow2")->cache_mode, "direct");
}

/* The VmHWM line of /proc/PID/status, and what is not one. */
static void test_status_lines(void **state)
{
  static const char status[] = "Name:\tdiskgate\nVmPeak:\t  123456 kB\nVmHWMx:\t 1 kB\n"
                               "VmHWM:\t   40960 kB\nVmRSS:\t   30000 kB\nThreads:\t4\n";
  double kib = -1;

  (void)state;
  assert_int_equal(bench_proc_status_kib(status, "VmHWM", &kib), 0);
  assert_near(kib, 40960, 0);
  assert_int_equal(bench_proc_status_kib(status, "VmRSS", &kib), 0);
  assert_near(kib, 30000, 0);
  assert_int_equal(bench_proc_status_kib(status, "VmSwap", &kib), -ENOENT);
  assert_near(kib, 0, 0);
  assert_int_equal(bench_proc_status_kib(status, "Threads", &kib), -ENOENT); /* not kB */
  assert_int_equal(bench_proc_status_kib("VmHWM:\t12 kB", "VmHWM", &kib), 0); /* no newline */
  assert_near(kib, 12, 0);
  assert_int_equal(bench_proc_status_kib("", "VmHWM", &kib), -ENOENT);
  /* this process's own file has the line */
  assert_int_equal(bench_proc_hwm_kib(getpid(), &kib), 0);
  assert_true(kib > 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ratio_verdicts),
    cmocka_unit_test(test_memory_verdicts),
    cmocka_unit_test(test_profile_cells),
    cmocka_unit_test(test_eval_table),
    cmocka_unit_test(test_image_sizes),
    cmocka_unit_test(test_status_lines),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
