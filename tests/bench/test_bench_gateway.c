/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_gateway.c: the gateway profile's rows and cells (one diskgate
 * serving 100 exports beside 100 qemu-nbd; the fairness cell on the diskgate only), its fio
 * job (one section and group per export), a real fio output of three exports read back
 * per export (fixtures/nbd-gateway-3x2.json), and the targets G1-G2: exactly at the goal
 * passes, past it fails, a failed cell is "not measured". */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench_test.h"
#include "bench_test_profile.h"
#include "bench/bench_configs.h"
#include "bench/bench_fio.h"
#include "bench/bench_json.h"
#include "bench/bench_profiles.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_stats.h"
#include "bench/bench_targets_gateway.h"
#include "bench/bench_workloads.h"

#ifndef BENCH_FIXTURES
#error "BENCH_FIXTURES must name tests/bench/fixtures"
#endif

#define DG "diskgate-gateway"
#define QEMU "qemu-nbd-gateway"
#define G1 "gateway-randread-4k-1c"
#define G2 "gateway-randread-4k-5c"

static struct bench_cell cells[BENCH_MAX_CONFIGS * BENCH_MAX_WORKLOADS];

/* The figures one run of a gateway cell gives. */
struct fig {
  double iops, rss_kib, min, median, max;
};

/* Sets the one run of cell (config, workload) of r to f. */
static void set_run(struct bench_results *r, const char *config, const char *workload,
                    struct fig f)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);

      if (strcmp(r->configs[c]->name, config) == 0 &&
          strcmp(r->workloads[w]->name, workload) == 0) {
        cell->nruns = 1;
        cell->runs[0] = (struct bench_sample){ .ok = true, .value = f.iops, .iops = f.iops,
                                               .ios = f.iops * 10, .rss_max_kib = f.rss_kib,
                                               .export_min_iops = f.min,
                                               .export_median_iops = f.median,
                                               .export_max_iops = f.max };
        return;
      }
    }
  }
  fail_msg("no cell %s / %s", config, workload);
}

/* The gateway profile's results: qemu-nbd's 100 processes at 20000 IOPS and 800 MiB in all;
 * the diskgate at `ratio` times their IOPS and `rss` times their memory; its fairness run's
 * least export at `fair` times the median export's 450 IOPS. */
static void gateway_results(struct bench_results *r, double ratio, double rss, double fair)
{
  bench_test_profile(r, cells, sizeof(cells) / sizeof(cells[0]), "gateway", NULL);
  set_run(r, QEMU, G1, (struct fig){ 20000, 800 * 1024.0, 150, 200, 500 });
  set_run(r, DG, G1, (struct fig){ 20000 * ratio, 800 * 1024.0 * rss, 500, 550, 600 });
  set_run(r, DG, G2, (struct fig){ 45000, 30 * 1024.0, 450 * fair, 450, 470 });
  bench_stats_results_finish(r);
}

/* The profile: the two gateway rows, the two gateway columns, 3 rounds of 10 s on 64 MiB;
 * the fairness column on the diskgate only; gateway jobs only on gateway rows. */
static void test_profile(void **state)
{
  static struct bench_results r;
  const struct bench_workload *g1 = bench_workloads_find(G1);
  const struct bench_workload *g2 = bench_workloads_find(G2);

  (void)state;
  gateway_results(&r, 1.0, 1.0, 1.0);
  assert_int_equal(r.nconfigs, 2);
  assert_string_equal(r.configs[0]->name, DG);
  assert_string_equal(r.configs[1]->name, QEMU);
  assert_int_equal(r.nworkloads, 2);
  assert_string_equal(r.workloads[0]->name, G1);
  assert_string_equal(r.workloads[1]->name, G2);
  assert_int_equal(r.opts.runs, 3);
  assert_int_equal(r.opts.runtime_s, 10);
  assert_int_equal(r.opts.size, 64ull << 20);
  assert_int_equal(g1->exports, 100);
  assert_int_equal(g1->numjobs, 1);
  assert_int_equal(g2->exports, 100);
  assert_int_equal(g2->numjobs, 5);
  assert_int_equal(r.configs[0]->kind, BENCH_CFG_GATEWAY);
  assert_int_equal(r.configs[1]->server, BENCH_SERVER_QEMU_NBD);
  assert_true(bench_targets_gateway_uses(DG, G1));
  assert_true(bench_targets_gateway_uses(QEMU, G1));
  assert_true(bench_targets_gateway_uses(DG, G2));
  assert_false(bench_targets_gateway_uses(QEMU, G2));
  assert_false(bench_targets_gateway_uses("diskgate-unix-direct-full", "randread-4k"));
  assert_true(bench_configs_applies(r.configs[1], g2, NULL));
  assert_false(bench_configs_applies(bench_configs_find("qemu-nbd-unix"), g1, NULL));
  assert_false(bench_configs_applies(r.configs[0], bench_workloads_find("randread-4k"), NULL));
  assert_true(bench_report_targets_wanted(&r));
}

/* G1: 2x the IOPS and 0.1x the memory pass, 1.99x and 0.11x fail; G2: the least export at
 * exactly half the median passes, below fails; a failed cell makes its lines "not
 * measured". */
static void test_targets(void **state)
{
  static struct bench_results r;
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];

  (void)state;
  gateway_results(&r, 2.0, 0.1, 0.5);
  assert_int_equal(bench_targets_gateway_eval(&r, rows, BENCH_TARGETS_MAX_ROWS), 3);
  assert_string_equal(rows[0].target, "G1");
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[0].value, "2.00x");
  assert_string_equal(rows[0].limit, ">= 2x");
  assert_string_equal(rows[0].detail, "40000 vs 20000 IOPS");
  assert_string_equal(rows[1].target, "G1");
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[1].value, "0.100x");
  assert_string_equal(rows[1].limit, "<= 0.1x");
  assert_string_equal(rows[1].detail, "80.0 vs 800.0 MiB");
  assert_string_equal(rows[2].target, "G2");
  assert_int_equal(rows[2].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[2].value, "0.50x");
  assert_string_equal(rows[2].limit, ">= 0.5x");
  assert_string_equal(rows[2].detail,
                      "per export: least 225, median 450, most 470 IOPS; 45000 in all");

  gateway_results(&r, 1.99, 0.11, 0.49);
  bench_targets_gateway_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(rows[0].value, "1.99x");
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(rows[1].value, "0.110x");
  assert_int_equal(rows[2].verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(rows[2].value, "0.49x");

  /* qemu-nbd's cell failed: G1's two lines are not measured, G2 still is */
  bench_results_cell(&r, 1, 0)->runs[0].ok = false;
  bench_stats_results_finish(&r);
  bench_targets_gateway_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_MISSING);
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_MISSING);
  assert_int_equal(rows[2].verdict, BENCH_VERDICT_FAIL);
  bench_results_cell(&r, 0, 1)->runs[0].ok = false;
  bench_stats_results_finish(&r);
  bench_targets_gateway_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[2].verdict, BENCH_VERDICT_MISSING);
  assert_string_equal(rows[2].value, "-");
}

/* The job of a gateway target: the shape in [global], no uri there, one section per
 * export, each its own group of wl->numjobs connections to its URI. */
static void test_job(void **state)
{
  const char *uris[] = { "nbd+unix:///gw000?socket=/s", "nbd+unix:///gw001?socket=/s",
                         "nbd+unix:///gw002?socket=/t" };
  struct bench_fio_target t = { .ioengine = "nbd", .size = 64 << 20, .uris = uris,
                                .nuris = 3 };
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  const char *global_end;

  (void)state;
  assert_int_equal(bench_fio_write_job(f, bench_workloads_find(G2), &t, 10, 2.0), 0);
  fclose(f);
  global_end = strstr(buf, "\n\n[");
  assert_non_null(global_end);
  assert_null(strstr(buf, "\nuri=nbd+unix:///gw000?socket=/s\nuri"));
  assert_true(strstr(buf, "\nrw=randread\nbs=4096\niodepth=4\n") < global_end);
  assert_non_null(strstr(buf, "\n[" G2 "-000]\nnew_group=1\nuri=nbd+unix:///gw000?socket=/s\n"
                              "numjobs=5\n"));
  assert_non_null(strstr(buf, "\n[" G2 "-002]\nnew_group=1\nuri=nbd+unix:///gw002?socket=/t\n"
                              "numjobs=5\n"));
  assert_null(strstr(buf, "-003]"));
  assert_true(strstr(buf, "uri=") > global_end); /* no URI in [global] */
  free(buf);
}

/* A real fio run of three exports x two connections, read back per export: the sums, the
 * worst export's latencies, and the least, median and most export. */
static void test_parse_exports(void **state)
{
  struct bench_fio_result jobs[4];
  struct bench_sample s;
  size_t n;

  (void)state;
  assert_int_equal(bench_json_parse_fio_jobs_file(BENCH_FIXTURES "/nbd-gateway-3x2.json", jobs,
                                                  4, &n),
                   0);
  assert_int_equal(n, 3);
  assert_string_equal(jobs[0].jobname, G2 "-000");
  assert_string_equal(jobs[2].jobname, G2 "-002");
  memset(&s, 0, sizeof(s));
  bench_json_fill_sample_exports(jobs, n, bench_workloads_find(G2), &s);
  assert_near(s.iops, 11329.67033 + 11262.737263 + 10003.996004, 1e-6);
  assert_near(s.value, s.iops, 1e-9);
  assert_near(s.ios, 11341 + 11274 + 10014, 1e-9);
  assert_near(s.export_min_iops, 10003.996004, 1e-6);
  assert_near(s.export_median_iops, 11262.737263, 1e-6);
  assert_near(s.export_max_iops, 11329.67033, 1e-6);
  assert_near(s.p50_us, 509.952, 1e-6);
  assert_near(s.p99_us, 6520.832, 1e-6);
  /* room for two jobs: the first two, and E2BIG */
  assert_int_equal(bench_json_parse_fio_jobs_file(BENCH_FIXTURES "/nbd-gateway-3x2.json", jobs,
                                                  2, &n),
                   -E2BIG);
  assert_int_equal(n, 2);
  assert_int_equal(bench_json_parse_fio_jobs("no json here\n", 13, jobs, 4, &n), -EINVAL);
  assert_int_equal(n, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_profile),
    cmocka_unit_test(test_targets),
    cmocka_unit_test(test_job),
    cmocka_unit_test(test_parse_exports),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
