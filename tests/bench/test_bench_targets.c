/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_targets.c: the performance targets' verdicts on fixed figures, the
 * cells the peers profile runs, the targets table of a peers report, fio's job for the
 * targets' cells (sync call, page cache, batches, jobs) and the --diskgate rows of an A/B. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
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
#include "bench/bench_profiles.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_stats.h"
#include "bench/bench_targets.h"
#include "bench/bench_variants.h"
#include "bench/bench_workloads.h"

static struct bench_figures cell_fig(double iops, double cpu, double sys)
{
  struct bench_figures f = { .ok = true, .iops = iops, .cpu_us = cpu, .sys_us = sys };

  return f;
}

/* T1's CPU row's verdict from diskgate's and qemu-nbd's CPU per I/O and the host path's
 * kernel CPU per I/O, one I/O per submit and batched. */
static enum bench_verdict cpu_verdict(double dg, double qemu, double host, double batched)
{
  struct bench_figures d = cell_fig(0, dg, 0), q = cell_fig(0, qemu, 0);
  struct bench_figures h = cell_fig(0, 0, host), hb = cell_fig(0, 0, batched);
  struct bench_target_row row;

  bench_targets_t1_cpu("4K randread QD32 1 conn tcp", &d, &q, &h, &hb, &row);
  assert_string_equal(row.target, "T1");
  return row.verdict;
}

static enum bench_verdict iops_verdict(double dg, double qemu, double host, double batched,
                                       struct bench_target_row *row)
{
  struct bench_figures d = cell_fig(dg, 0, 0), q = cell_fig(qemu, 0, 0);
  struct bench_figures h = cell_fig(host, 0, 0), hb = cell_fig(batched, 0, 0);

  bench_targets_t1_iops("4K randread QD32 1 conn unix", &d, &q, &h, &hb, row);
  return row->verdict;
}

/* The CPU goal is a third of qemu-nbd's; only a goal below the lower of the two host
 * figures (the disk's own kernel cost, which any server pays) is out of reach. */
static void test_t1_cpu_verdicts(void **state)
{
  (void)state;
  assert_int_equal(cpu_verdict(12.7, 21.3, 7.7, 5.2), BENCH_VERDICT_FAIL); /* goal 7.1 > 5.2 */
  assert_int_equal(cpu_verdict(12.8, 13.5, 7.7, 5.0), BENCH_VERDICT_LIMIT);
  assert_int_equal(cpu_verdict(12.8, 21.3, 5.0, 7.7), BENCH_VERDICT_FAIL); /* lower one counts */
  assert_int_equal(cpu_verdict(12.8, 15.0, 7.7, 5.0), BENCH_VERDICT_FAIL); /* goal == floor */
  assert_int_equal(cpu_verdict(7.0, 21.3, 7.7, 5.0), BENCH_VERDICT_PASS);
  assert_int_equal(cpu_verdict(9.0, 27.0, 7.7, 5.0), BENCH_VERDICT_PASS); /* exactly a third */
  assert_int_equal(cpu_verdict(9.1, 27.0, 7.7, 5.0), BENCH_VERDICT_FAIL);
}

/* IOPS: at least 2x qemu-nbd; the better host figure bounds any server. */
static void test_t1_iops_verdicts(void **state)
{
  struct bench_target_row row;

  (void)state;
  assert_int_equal(iops_verdict(45000, 28000, 50000, 60000, &row), BENCH_VERDICT_FAIL);
  assert_non_null(strstr(row.detail, "host direct 60000: at most 2.14x"));
  assert_string_equal(row.value, "1.61x");
  assert_string_equal(row.limit, ">= 2x");
  assert_int_equal(iops_verdict(45000, 28000, 60000, 50000, &row), BENCH_VERDICT_FAIL);
  assert_int_equal(iops_verdict(45000, 28000, 50000, 52000, &row), BENCH_VERDICT_LIMIT);
  assert_int_equal(iops_verdict(45000, 0, 50000, 52000, &row), BENCH_VERDICT_PASS);
  assert_int_equal(iops_verdict(56000, 28000, 50000, 60000, &row), BENCH_VERDICT_PASS);
  assert_int_equal(iops_verdict(55999, 28000, 50000, 60000, &row), BENCH_VERDICT_FAIL);
  assert_string_equal(bench_targets_verdict_name(BENCH_VERDICT_LIMIT), "FAIL (limit)");
  assert_string_equal(bench_targets_verdict_name(BENCH_VERDICT_MISSING), "not measured");
}

/* T4: the host figures are a reference, not a bound: under 2x is a plain FAIL. T5: the
 * host path's p50 bounds any server. */
static void test_t4_t5_verdicts(void **state)
{
  struct bench_figures k = cell_fig(15000, 0, 0), h = cell_fig(19000, 0, 0);
  struct bench_figures hd = cell_fig(24500, 0, 0), d;
  struct bench_figures q = { .ok = true, .p50_us = 100 }, hp = { .ok = true, .p50_us = 20 };
  struct bench_target_row row;

  (void)state;
  d = cell_fig(24000, 0, 0);
  bench_targets_t4(&d, &k, &h, &hd, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(row.detail, "24000 vs 15000 (host, fdatasync per write: 19000 page "
                                  "cache, 24500 direct = 1.63x nbdkit)");
  d = cell_fig(30000, 0, 0);
  bench_targets_t4(&d, &k, &h, &hd, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_PASS);
  d = cell_fig(29999, 0, 0);
  bench_targets_t4(&d, &k, &h, &hd, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);

  d = (struct bench_figures){ .ok = true, .p50_us = 60 };
  bench_targets_t5(&d, &q, &hp, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_PASS);
  assert_string_equal(row.value, "0.60x");
  d.p50_us = 61;
  bench_targets_t5(&d, &q, &hp, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_FAIL);
  hp.p50_us = 65;
  bench_targets_t5(&d, &q, &hp, &row);
  assert_int_equal(row.verdict, BENCH_VERDICT_LIMIT);
  assert_non_null(strstr(row.detail, "host direct 65 us: at best 0.65x"));
}

/* A cell's figures are the medians of its successful runs; server CPU per I/O is its CPU
 * seconds over the I/Os. */
static void test_figures_medians(void **state)
{
  struct bench_cell cell;
  struct bench_figures f;
  const double iops[] = { 100, 900, 300, 200 };

  (void)state;
  memset(&cell, 0, sizeof(cell));
  cell.nruns = 4;
  for (size_t i = 0; i < 4; i++) {
    cell.runs[i] = (struct bench_sample){ .ok = i != 1, .iops = iops[i], .ios = 1000 * (i + 1),
                                          .cpu_server_s = 0.01 * (double)(i + 1),
                                          .p50_us = 10.0 * (double)(i + 1),
                                          .rss_max_kib = 1024.0 * (double)(i + 1) };
  }
  bench_targets_figures(&cell, &f);
  assert_true(f.ok);
  assert_near(f.iops, 200, 1e-9);          /* of 100, 300, 200: run 2 failed */
  assert_near(f.cpu_us, 10, 1e-9);         /* 10 µs per I/O in every run */
  assert_near(f.p50_us, 30, 1e-9);
  assert_near(f.rss_mib, 3, 1e-9);
  cell.runs[0].ok = cell.runs[2].ok = cell.runs[3].ok = false;
  bench_targets_figures(&cell, &f);
  assert_false(f.ok);
}

/* Builds the results of a peers run whose every cell the targets read measured `iops`
 * (diskgate's cells 3x that, except where given), the rest left not applicable. */
static struct bench_cell cells[BENCH_MAX_CONFIGS * BENCH_MAX_WORKLOADS];

static void peers_results(struct bench_results *r)
{
  bench_test_profile(r, cells, sizeof(cells) / sizeof(cells[0]), "peers", NULL);
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);
      bool dg = strncmp(r->configs[c]->name, "diskgate", 8) == 0;

      if (!bench_targets_uses(cell->cfg->name, cell->wl->name)) {
        cell->state = BENCH_CELL_NA;
        continue;
      }
      cell->nruns = 1;
      cell->runs[0] = (struct bench_sample){ .ok = true, .value = 1, .iops = dg ? 30000 : 10000,
                                             .mbps = 1000, .ios = 1e5, .p50_us = dg ? 10 : 50,
                                             .cpu_server_s = dg ? 0.5 : 2.0,
                                             .client_sys_us = 1.0, .rss_max_kib = 20 * 1024,
                                             .rss_growth_kib = 512 };
    }
  }
  bench_stats_results_finish(r);
}

/* The only run of cell (config, workload). */
static struct bench_sample *run_of(struct bench_results *r, const char *config,
                                   const char *workload)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      if (strcmp(r->configs[c]->name, config) == 0 &&
          strcmp(r->workloads[w]->name, workload) == 0) {
        return &bench_results_cell(r, c, w)->runs[0];
      }
    }
  }
  fail_msg("no cell %s / %s", config, workload);
  return NULL;
}

/* Sets the only run of cell (config, workload) to mbps and iops. */
static void set_figure(struct bench_results *r, const char *config, const char *workload,
                       double mbps, double iops)
{
  run_of(r, config, workload)->mbps = mbps;
  run_of(r, config, workload)->iops = iops;
}

/* Only the targets' cells run in the peers profile: every one of them is in the profile's
 * rows and columns, and they are fewer than the grid. */
static void test_peers_cells(void **state)
{
  static struct bench_results r;
  size_t used = 0;

  (void)state;
  peers_results(&r);
  assert_int_equal(r.nconfigs, 9);
  assert_int_equal(r.nworkloads, 9);
  for (size_t i = 0; i < r.nconfigs * r.nworkloads; i++) {
    used += r.cells[i].state != BENCH_CELL_NA;
  }
  assert_int_equal(used, 34);
  assert_true(bench_targets_uses("host-batched", "randwrite-4k"));
  assert_true(bench_targets_uses("host-buffered", "randwrite-4k-qd8-fsync-4j"));
  assert_true(bench_targets_uses("diskgate-tcp-direct-full", "randread-4k"));
  assert_false(bench_targets_uses("host-batched", "read-1m"));
  assert_false(bench_targets_uses("nbdkit-unix", "randread-4k"));
  assert_false(bench_targets_uses("diskgate-unix-direct-full", "randread-4k-4"));
}

/* The scaling profile: the host path and four servers, paired by cache mode, over 1-64
 * connections x iodepth 1-128. */
static void test_scaling_cells(void **state)
{
  static struct bench_results r;
  FILE *err = fopen("/dev/null", "w");
  unsigned conns = 0, depth = 0;

  (void)state;
  memset(&r, 0, sizeof(r));
  assert_int_equal(bench_profiles_apply("scaling", &r.opts), 0);
  assert_int_equal(r.opts.runs, 1);
  assert_int_equal(bench_profiles_select(&r.opts, &r, err), 0);
  fclose(err);
  assert_int_equal(r.nconfigs, 5);
  assert_string_equal(r.configs[0]->name, "host"); /* the 100% line of every bar */
  assert_int_equal(r.nworkloads, 16);
  for (size_t w = 0; w < r.nworkloads; w++) {
    assert_string_equal(r.workloads[w]->rw, "randread");
    conns += r.workloads[w]->numjobs;
    depth += r.workloads[w]->iodepth;
  }
  assert_int_equal(conns, 4 * (1 + 4 + 16 + 64));
  assert_int_equal(depth, 4 * (1 + 8 + 32 + 128));
  assert_int_equal(bench_workloads_find("randread-4k-64x128")->numjobs, 64);
}

static char *md_of(const struct bench_results *r)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);

  assert_int_equal(bench_report_targets_md_write(f, r), 0);
  fclose(f);
  return buf;
}

/* The table has every target's lines in order; a failed cell makes its target's lines "not
 * measured" and leaves the others. */
static void test_eval_table(void **state)
{
  static struct bench_results r;
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];
  static const char *const order[] = { "T1", "T1", "T1", "T1", "T1", "T1", "T1", "T1", "T2",
                                       "T2", "T2", "T2", "T3", "T3", "T4", "T5", "T6", "T6" };
  size_t n;
  char *md;

  (void)state;
  peers_results(&r);
  n = bench_targets_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(n, 18);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(rows[i].target, order[i]);
  }
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_PASS);  /* 3x qemu-nbd's IOPS */
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_PASS);  /* 5 against 20 µs */
  assert_int_equal(rows[8].verdict, BENCH_VERDICT_PASS);  /* T2 3x */
  assert_int_equal(rows[12].verdict, BENCH_VERDICT_PASS); /* T3 100% */
  assert_string_equal(rows[12].value, "100.0%");
  assert_int_equal(rows[14].verdict, BENCH_VERDICT_PASS); /* T4 3x nbdkit */
  assert_int_equal(rows[15].verdict, BENCH_VERDICT_PASS); /* T5 0.2x */
  assert_string_equal(rows[16].value, "20 MiB");
  assert_string_equal(rows[17].value, "+0.5 MiB");
  md = md_of(&r);
  assert_non_null(strstr(md, "## Targets"));
  assert_non_null(strstr(md, "| T3 | 1M sequential read QD4: MB/s vs host direct >= 95% | "
                             "100.0% | >= 95% | PASS | 1000 vs 1000 MB/s |"));
  free(md);

  /* qemu-nbd over TCP failed: T1's TCP lines are not measured, T1's Unix lines still are */
  for (size_t c = 0; c < r.nconfigs; c++) {
    if (strcmp(r.configs[c]->name, "qemu-nbd-tcp") == 0) {
      for (size_t w = 0; w < r.nworkloads; w++) {
        bench_results_cell(&r, c, w)->runs[0].ok = false;
      }
    }
  }
  n = bench_targets_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(n, 18);
  assert_int_equal(rows[3].verdict, BENCH_VERDICT_PASS);
  for (size_t i = 4; i < 8; i++) {
    assert_int_equal(rows[i].verdict, BENCH_VERDICT_MISSING);
  }
  assert_string_equal(rows[4].what, "4K randread QD32 1 conn tcp");
  assert_int_equal(rows[8].verdict, BENCH_VERDICT_PASS);

  /* T3 at exactly 95% of the host path passes, under it fails; T2's page-cache line at
   * exactly 1.5x nbdkit passes */
  set_figure(&r, "diskgate-unix-direct-full", "read-1m", 950, 0);
  set_figure(&r, "diskgate-unix-direct-full", "write-1m", 949, 0);
  set_figure(&r, "diskgate-unix-writeback-full", "randread-4k-4j", 0, 15000);
  n = bench_targets_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[12].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[12].value, "95.0%");
  assert_int_equal(rows[13].verdict, BENCH_VERDICT_FAIL);
  assert_int_equal(rows[9].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[9].value, "1.50x");
  set_figure(&r, "diskgate-unix-writeback-full", "randread-4k-4j", 0, 14999);
  n = bench_targets_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[9].verdict, BENCH_VERDICT_FAIL);

  /* T6: 64 MiB and +2 MiB are within the goal, a KiB more is not */
  run_of(&r, "diskgate-unix-direct-full", "randrw-4k-16x64")->rss_max_kib = 64 * 1024;
  run_of(&r, "diskgate-unix-direct-full", "randrw-4k-16x64")->rss_growth_kib = 2048;
  n = bench_targets_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[16].verdict, BENCH_VERDICT_PASS);
  assert_int_equal(rows[17].verdict, BENCH_VERDICT_PASS);
  run_of(&r, "diskgate-unix-direct-full", "randrw-4k-16x64")->rss_max_kib = 64 * 1024 + 1;
  run_of(&r, "diskgate-unix-direct-full", "randrw-4k-16x64")->rss_growth_kib = 2049;
  n = bench_targets_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[16].verdict, BENCH_VERDICT_FAIL);
  assert_int_equal(rows[17].verdict, BENCH_VERDICT_FAIL);
  assert_int_equal(n, 18);

  /* other profiles carry no targets table */
  r.opts.profile = "seeds";
  md = md_of(&r);
  assert_null(strstr(md, "## Targets"));
  free(md);
}

/* Whether the fio job of workload `wl`, written for target t, holds `text`. */
static bool job_holds(const char *wl, struct bench_fio_target t, const char *text)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  bool found;

  assert_non_null(bench_workloads_find(wl));
  assert_int_equal(bench_fio_write_job(f, bench_workloads_find(wl), &t, 5, 1.0), 0);
  fclose(f);
  found = strstr(buf, text) != NULL;
  free(buf);
  return found;
}

/* A server answers fio's FLUSH with fdatasync: on the file the host path asks for the same
 * call; a buffered host row goes through the page cache; a batched one submits the queue at
 * once; jobs become fio's numjobs. */
static void test_fio_jobs(void **state)
{
  const char *fsynced = "randwrite-4k-qd8-fsync-4j";
  struct bench_fio_target file = { .ioengine = "io_uring", .filename = "/var/tmp/nbd-x.img",
                                   .size = 1 << 30 };
  struct bench_fio_target nbd = { .ioengine = "nbd", .uri = "nbd+unix:///bench?socket=/s",
                                  .size = 1 << 30 };
  struct bench_fio_target buffered = file, batched = file;

  (void)state;
  buffered.buffered = true;
  batched.batched = true;
  assert_true(job_holds(fsynced, file, "\nfdatasync=1\n"));
  assert_false(job_holds(fsynced, file, "\nfsync=1\n"));
  assert_true(job_holds(fsynced, file, "\nnumjobs=4\n"));
  assert_true(job_holds(fsynced, file, "\ndirect=1\n"));
  assert_true(job_holds(fsynced, nbd, "\nfsync=1\n"));
  assert_false(job_holds(fsynced, nbd, "fdatasync"));
  assert_true(job_holds(fsynced, buffered, "\ndirect=0\n"));
  assert_true(job_holds("randread-4k", batched, "\niodepth_batch_submit=32\n"));
  assert_true(job_holds("randread-4k", batched, "\niodepth_batch_complete_min=16\n"));
  assert_true(job_holds("randread-4k", batched, "\niodepth_batch_complete_max=32\n"));
  assert_false(job_holds("randread-4k", batched, "numjobs"));
  assert_true(job_holds("randread-4k-qd1", batched, "\niodepth_batch_complete_min=1\n"));
  assert_false(job_holds("randread-4k", file, "iodepth_batch"));
  assert_true(bench_configs_host_mode(bench_configs_find("host-batched"), "batched"));
  assert_true(bench_configs_host_mode(bench_configs_find("host-buffered"), "writeback"));
  assert_false(bench_configs_host_mode(bench_configs_find("host"), "batched"));
  assert_false(bench_configs_host_mode(bench_configs_find("diskgate-unix-writeback-full"),
                                       "writeback"));
}

/* Applies --diskgate values to the rows `configs`; returns the result and stderr. */
static int apply(struct bench_results *r, const char *configs, const char *const *variants,
                 unsigned n, char *err, size_t errlen)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *e = open_memstream(&buf, &len);
  int rc;

  memset(r, 0, sizeof(*r));
  assert_int_equal(bench_profiles_apply("quick", &r->opts), 0);
  r->opts.configs = configs;
  for (unsigned i = 0; i < n; i++) {
    r->opts.variants[i] = variants[i];
  }
  r->opts.nvariants = n;
  assert_int_equal(bench_profiles_select(&r->opts, r, e), 0);
  rc = bench_variants_apply(&r->opts, r, e);
  fclose(e);
  snprintf(err, errlen, "%s", buf != NULL ? buf : "");
  free(buf);
  return rc;
}

static void test_variants(void **state)
{
  static struct bench_results r;
  char err[512], want[PATH_MAX];
  char *argv[4 + BENCH_VARIANT_MAX_ARGS];
  int argc = 0;
  const char *one[] = { "/bin/true:--engine threads --cache 'write back'" };
  const char *two[] = { "/bin/true", "/bin/false:--threads 2" };
  const char *bad[] = { "/nonexistent/diskgate" };
  const char *quote[] = { "/bin/true:--cache 'x" };

  (void)state;
  assert_non_null(realpath("/bin/true", want));
  /* once: the rows keep their names; diskgate's run the binary with ARGS added */
  assert_int_equal(apply(&r, "host,diskgate-unix-direct-full", one, 1, err, sizeof err), 0);
  assert_int_equal(r.nconfigs, 2);
  assert_string_equal(r.configs[1]->name, "diskgate-unix-direct-full");
  assert_ptr_equal(bench_variants_base(r.configs[1]), bench_configs_find(r.configs[1]->name));
  assert_non_null(strstr(r.configs[1]->title, "; binary: "));
  assert_non_null(strstr(r.configs[1]->title, " --engine threads --cache write back"));
  assert_ptr_equal(r.configs[0], bench_configs_find("host"));
  assert_string_equal(bench_variants_binary(r.configs[1], "self"), want);
  assert_string_equal(bench_variants_binary(r.configs[0], "self"), "self");
  bench_variants_add_args(r.configs[1], argv, &argc);
  assert_int_equal(argc, 4);
  assert_string_equal(argv[0], "--engine");
  assert_string_equal(argv[3], "write back");
  argc = 0;
  bench_variants_add_args(r.configs[0], argv, &argc);
  assert_int_equal(argc, 0);

  /* twice: each diskgate row becomes NAME@1, NAME@2, in place; the others stay */
  assert_int_equal(apply(&r, "host,diskgate-unix-*back-full,diskgate-unix-direct-full,nbdkit-unix",
                         two, 2, err, sizeof err), 0);
  assert_int_equal(r.nconfigs, 6);
  assert_string_equal(r.configs[0]->name, "host");
  assert_string_equal(r.configs[1]->name, "diskgate-unix-direct-full@1");
  assert_string_equal(r.configs[2]->name, "diskgate-unix-direct-full@2");
  assert_string_equal(r.configs[3]->name, "diskgate-unix-writeback-full@1");
  assert_string_equal(r.configs[5]->name, "nbdkit-unix");
  assert_ptr_equal(bench_variants_base(r.configs[2]),
                   bench_configs_find("diskgate-unix-direct-full"));
  assert_ptr_equal(bench_variants_base(r.configs[5]), bench_configs_find("nbdkit-unix"));
  assert_string_equal(r.configs[3]->cache_mode, "writeback");
  assert_non_null(strstr(r.configs[2]->title, "binary 2: "));
  assert_non_null(strstr(r.configs[2]->title, " --threads 2"));
  assert_non_null(realpath("/bin/false", want));
  assert_string_equal(bench_variants_binary(r.configs[2], "self"), want);

  /* a report read back names its rows: NAME@K of a diskgate row only */
  assert_ptr_equal(bench_variants_named("diskgate-unix-direct-full@2", NULL), r.configs[2]);
  r.configs[0] = bench_variants_named("diskgate-tcp-direct-full@8", "the title");
  assert_non_null(r.configs[0]);
  assert_string_equal(r.configs[0]->name, "diskgate-tcp-direct-full@8");
  assert_string_equal(r.configs[0]->title, "the title");
  assert_ptr_equal(bench_variants_base(r.configs[0]),
                   bench_configs_find("diskgate-tcp-direct-full"));
  assert_string_equal(bench_variants_binary(r.configs[0], "self"), "self");
  assert_ptr_equal(bench_variants_named("diskgate-tcp-direct-full@8", NULL), r.configs[0]);
  assert_null(bench_variants_named("diskgate-tcp-direct-full@9", NULL));
  assert_null(bench_variants_named("diskgate-tcp-direct-full@0", NULL));
  assert_null(bench_variants_named("diskgate-tcp-direct-full@1x", NULL));
  assert_null(bench_variants_named("nbdkit-unix@1", NULL));
  assert_null(bench_variants_named("nbdkit-unix", NULL));
  assert_string_equal(bench_variants_named("diskgate-unix-direct-full", "t1")->title, "t1");
  assert_string_equal(bench_variants_named("diskgate-unix-direct-full", "t2")->title, "t1");
  assert_null(bench_variants_named("@1", NULL));

  /* an unusable PATH or ARGS: one line naming it */
  assert_int_equal(apply(&r, "diskgate-unix-direct-full", bad, 1, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "/nonexistent/diskgate is not an executable file"));
  assert_int_equal(strchr(err, '\n') - err, (long)strlen(err) - 1);
  assert_int_equal(apply(&r, "diskgate-unix-direct-full", quote, 1, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "ARGS"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_t1_cpu_verdicts),
    cmocka_unit_test(test_t1_iops_verdicts),
    cmocka_unit_test(test_t4_t5_verdicts),
    cmocka_unit_test(test_figures_medians),
    cmocka_unit_test(test_peers_cells),
    cmocka_unit_test(test_scaling_cells),
    cmocka_unit_test(test_eval_table),
    cmocka_unit_test(test_fio_jobs),
    cmocka_unit_test(test_variants),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
