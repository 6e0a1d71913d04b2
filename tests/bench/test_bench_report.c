/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_report.c: the Markdown report against tests/bench/expected/report.md,
 * and the shape of the JSON and SVG reports, on a fixed set of results. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench_test.h"

#include "bench/bench_configs.h"
#include "bench/bench_load.h"
#include "bench/bench_report.h"
#include "bench/bench_stats.h"
#include "bench/bench_workloads.h"

#ifndef BENCH_EXPECTED
#error "BENCH_EXPECTED must name tests/bench/expected"
#endif

/* the last row is serve's default configuration (the report flags it) */
static const char *const cfg_names[] = { "host", "qemu-nbd-unix", "nbdkit-unix",
                                          "guest-virtio-file", "guest-9p",
                                          "diskgate-unix-writeback-full" };
#define NCFG (sizeof(cfg_names) / sizeof(cfg_names[0]))
static const char *const wl_names[] = { "read-1m", "randread-4k", "randwrite-4k-qd8-fsync",
                                        "copy" };

/* value, p99 µs, fsync p99 µs, CPU per unit for (config, workload); value 0 = failed */
static const double figures[NCFG][4][4] = {
  { { 2374, 5600, 0, 0.0737 }, { 84700, 1600, 0, 0.00784 }, { 15000, 1800, 2800, 0.0452 },
    { 561, 0, 0, 1.12 } },
  { { 712.2, 11000, 0, 1.31 }, { 16093, 20000, 0, 0.0397 }, { 9450, 3900, 4000, 0.155 },
    { 188, 0, 0, 2.88 } },
  { { 1116, 38000, 0, 1.04 }, { 0, 0, 0, 0 }, { 9620, 469, 2100, 0.0929 }, { 247, 0, 0, 2.88 } },
  { { 1080, 19000, 0, 0.797 }, { 7050, 18000, 0, 0.191 }, { 1200, 21000, 25000, 0.9 },
    { 0, 0, 0, 0 } },
  { { 279, 30000, 0, 2.5 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } },
  { { 2100, 4800, 0, 0.42 }, { 30500, 2900, 0, 0.031 }, { 11200, 2200, 3100, 0.081 },
    { 301, 0, 0, 2.1 } },
};

static struct bench_cell cells[NCFG * 4];

static void make_results(struct bench_results *r)
{
  memset(r, 0, sizeof(*r));
  memset(cells, 0, sizeof(cells));
  r->opts.profile = "seeds";
  r->opts.runs = 3;
  r->opts.runtime_s = 10;
  r->opts.ramp_s = 2;
  r->opts.size = 1ull << 30;
  r->opts.copy_size = 512ull << 20;
  r->opts.dir = "/var/tmp";
  snprintf(r->machine.cpu_model, sizeof(r->machine.cpu_model), "AMD EPYC");
  r->machine.cores = 2;
  r->machine.mem_bytes = 24ull << 30;
  snprintf(r->machine.kernel, sizeof(r->machine.kernel), "Linux 6.1.0 x86_64");
  snprintf(r->machine.dir_fs, sizeof(r->machine.dir_fs), "ext4");
  snprintf(r->machine.dir_dev, sizeof(r->machine.dir_dev), "/dev/vda");
  snprintf(r->machine.fio_version, sizeof(r->machine.fio_version), "fio-3.33");
  snprintf(r->machine.qemu_version, sizeof(r->machine.qemu_version), "QEMU 7.2.22");
  snprintf(r->machine.qemu_nbd_version, sizeof(r->machine.qemu_nbd_version), "qemu-nbd 7.2.22");
  snprintf(r->machine.nbdkit_version, sizeof(r->machine.nbdkit_version), "nbdkit 1.32.5");
  snprintf(r->machine.diskgate_version, sizeof(r->machine.diskgate_version), "diskgate 0.1.0");
  snprintf(r->machine.accel, sizeof(r->machine.accel), "tcg");
  snprintf(r->command, sizeof(r->command), "diskgate bench --profile seeds");
  snprintf(r->started, sizeof(r->started), "2026-11-30T06:00:00Z");
  r->elapsed_s = 1865;
  r->tree_bytes = 536870912;
  r->tree_files = 1153;
  r->caches_dropped = true;
  r->nconfigs = NCFG;
  r->nworkloads = 4;
  r->cells = cells;
  for (size_t c = 0; c < NCFG; c++) {
    r->configs[c] = bench_configs_find(cfg_names[c]);
    assert_non_null(r->configs[c]);
  }
  for (size_t w = 0; w < 4; w++) {
    r->workloads[w] = bench_workloads_find(wl_names[w]);
    assert_non_null(r->workloads[w]);
  }
  for (size_t c = 0; c < NCFG; c++) {
    for (size_t w = 0; w < 4; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);
      const double *f = figures[c][w];

      cell->cfg = r->configs[c];
      cell->wl = r->workloads[w];
      if (!bench_configs_applies(cell->cfg, cell->wl, NULL)) {
        cell->state = BENCH_CELL_NA;
        continue;
      }
      cell->state = BENCH_CELL_PENDING;
      cell->nruns = 3;
      for (size_t i = 0; i < 3 && f[0] > 0; i++) {
        /* three runs around the median: 0.9x, 1x, 1.2x */
        double k = i == 0 ? 0.9 : i == 1 ? 1.0 : 1.2;

        cell->runs[i] = (struct bench_sample){ .ok = true, .value = f[0] * k, .p99_us = f[1] * k,
                                               .fsync_p99_us = f[2] * k, .cpu_per_kio = f[3] * k,
                                               .ios = 1000, .seconds = 10 };
      }
    }
  }
  bench_stats_results_finish(r);
}

static char *render(int (*write)(FILE *, const struct bench_results *),
                    const struct bench_results *r)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);

  assert_non_null(f);
  assert_int_equal(write(f, r), 0);
  assert_int_equal(fclose(f), 0);
  return buf;
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  long size;
  char *buf;

  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)size + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
  buf[size] = '\0';
  fclose(f);
  return buf;
}

/* Writes r's bench.json to a temporary file and loads it back into *loaded (which must be
 * static: the loader points it at its own storage). */
static void json_round_trip(const struct bench_results *r, struct bench_results *loaded)
{
  char path[] = "/tmp/bench-report-XXXXXX";
  char *json = render(bench_report_json_write, r);
  int fd = mkstemp(path);
  FILE *f;

  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  assert_non_null(f);
  fputs(json, f);
  assert_int_equal(fclose(f), 0);
  memset(loaded, 0, sizeof(*loaded));
  assert_int_equal(bench_load_json(path, loaded), 0);
  unlink(path);
  free(json);
}

static void test_markdown_matches_expected(void **state)
{
  struct bench_results r;
  char *md, *want;

  (void)state;
  make_results(&r);
  md = render(bench_report_md_write, &r);
  want = slurp(BENCH_EXPECTED "/report.md");
  if (strcmp(md, want) != 0) {
    FILE *f = fopen("bench-report-actual.md", "w");

    if (f != NULL) {
      fputs(md, f);
      fclose(f);
    }
    print_error("the report differs from expected/report.md (actual output written to "
                "bench-report-actual.md in the test's directory)\n");
  }
  assert_string_equal(md, want);
  free(md);
  free(want);
}

/* A cell of which only some runs succeeded, or that the lab did not reach in every round,
 * says so after its median ("[k of n runs]", n the runs asked for), and a cell whose run was
 * interrupted says "interrupted", not "failed": a one-run median never passes for a
 * three-run one, nor a Ctrl-C for a failure. */
static void test_partial_and_interrupted_cells(void **state)
{
  struct bench_results r;
  struct bench_cell *cell;
  char *md;
  const char *row;

  (void)state;
  make_results(&r);
  cell = bench_results_cell(&r, 1, 1); /* qemu-nbd-unix, randread-4k */
  cell->runs[2].ok = false;
  cell->runs[0].ok = false;
  cell = bench_results_cell(&r, 2, 1); /* nbdkit-unix, randread-4k */
  for (size_t i = 0; i < 3; i++) {
    cell->runs[i].ok = false;
  }
  snprintf(cell->note, sizeof(cell->note), "interrupted");
  cell = bench_results_cell(&r, 1, 0); /* qemu-nbd-unix, read-1m: the lab stopped in round 3 */
  cell->nruns = 2;
  bench_stats_results_finish(&r);
  md = render(bench_report_md_write, &r);
  assert_non_null(strstr(md, " [1 of 3 runs] |"));
  assert_null(strstr(strstr(md, " [1 of 3 runs] |") + 16, "of 3 runs]")); /* values only */
  row = strstr(md, "| qemu-nbd-unix | ");
  assert_non_null(row);
  assert_non_null(strstr(row, "[2 of 3 runs] |"));
  assert_true(strstr(row, "[2 of 3 runs] |") < strchr(row, '\n')); /* in its read-1m cell */
  assert_true(strstr(row, "[2 of 3 runs] |") < strstr(row, "[1 of 3 runs] |"));
  assert_non_null(strstr(md, "| nbdkit-unix | "));
  assert_non_null(strstr(md, " interrupted |"));
  free(md);
}

static void test_formats(void **state)
{
  char buf[64];

  (void)state;
  bench_report_fmt_value(84712, BENCH_UNIT_IOPS, buf, sizeof(buf));
  assert_string_equal(buf, "84.7K");
  bench_report_fmt_value(123456, BENCH_UNIT_IOPS, buf, sizeof(buf));
  assert_string_equal(buf, "123K");
  bench_report_fmt_value(6543, BENCH_UNIT_IOPS, buf, sizeof(buf));
  assert_string_equal(buf, "6.54K");
  bench_report_fmt_value(950.4, BENCH_UNIT_IOPS, buf, sizeof(buf));
  assert_string_equal(buf, "950");
  bench_report_fmt_value(1.5e6, BENCH_UNIT_IOPS, buf, sizeof(buf));
  assert_string_equal(buf, "1.50M");
  bench_report_fmt_value(2374.4, BENCH_UNIT_MBPS, buf, sizeof(buf));
  assert_string_equal(buf, "2374 MB/s");
  bench_report_fmt_value(12.34, BENCH_UNIT_MIBPS, buf, sizeof(buf));
  assert_string_equal(buf, "12.3 MiB/s");
  bench_report_fmt_latency(58.2, buf, sizeof(buf));
  assert_string_equal(buf, "58 µs");
  bench_report_fmt_latency(1600, buf, sizeof(buf));
  assert_string_equal(buf, "1.6 ms");
  bench_report_fmt_latency(20400, buf, sizeof(buf));
  assert_string_equal(buf, "20 ms");
  bench_report_fmt_pct(19.2, buf, sizeof(buf));
  assert_string_equal(buf, "19%");
  bench_report_fmt_pct(6.54, buf, sizeof(buf));
  assert_string_equal(buf, "6.5%");
  bench_report_fmt_duration(42, buf, sizeof(buf));
  assert_string_equal(buf, "42s");
  bench_report_fmt_duration(185, buf, sizeof(buf));
  assert_string_equal(buf, "3m05s");
  bench_report_fmt_duration(3725, buf, sizeof(buf));
  assert_string_equal(buf, "1h02m");
}

/* A run shorter than half a second (a copy-only run of a small tree) took "under 1s", not
 * "0s". */
static void test_short_run_took_under_a_second(void **state)
{
  struct bench_results r;
  char *md;

  (void)state;
  make_results(&r);
  r.elapsed_s = 0.34;
  md = render(bench_report_md_write, &r);
  assert_non_null(strstr(md, ", took under 1s\n"));
  free(md);
  r.elapsed_s = 0.6;
  md = render(bench_report_md_write, &r);
  assert_non_null(strstr(md, ", took 1s\n"));
  free(md);
}

static void test_json_keeps_every_run(void **state)
{
  struct bench_results r;
  char *text;
  cJSON *root, *cells_j, *cell, *machine;
  int ncells = 0;

  (void)state;
  make_results(&r);
  text = render(bench_report_json_write, &r);
  root = cJSON_Parse(text);
  assert_non_null(root);
  machine = cJSON_GetObjectItem(root, "machine");
  assert_string_equal(cJSON_GetObjectItem(machine, "cpu_model")->valuestring, "AMD EPYC");
  assert_string_equal(cJSON_GetObjectItem(machine, "guest_accel")->valuestring, "tcg");
  assert_string_equal(
    cJSON_GetObjectItem(cJSON_GetObjectItem(machine, "versions"), "fio")->valuestring,
    "fio-3.33");
  cells_j = cJSON_GetObjectItem(root, "cells");
  assert_int_equal(cJSON_GetArraySize(cells_j), NCFG * 4);
  cJSON_ArrayForEach(cell, cells_j) {
    const char *cfg = cJSON_GetObjectItem(cell, "config")->valuestring;
    const char *wl = cJSON_GetObjectItem(cell, "workload")->valuestring;
    const char *st = cJSON_GetObjectItem(cell, "state")->valuestring;

    if (strcmp(cfg, "qemu-nbd-unix") == 0 && strcmp(wl, "randread-4k") == 0) {
      cJSON *median = cJSON_GetObjectItem(cell, "median");

      assert_string_equal(st, "done");
      assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cell, "runs")), 3);
      assert_near(cJSON_GetObjectItem(median, "value")->valuedouble, 16093, 1e-9);
      assert_near(cJSON_GetObjectItem(median, "pct")->valuedouble,
                          100.0 * 16093 / 84700, 1e-9);
      assert_string_equal(cJSON_GetObjectItem(median, "pct_of")->valuestring, "host");
    }
    if (strcmp(cfg, "nbdkit-unix") == 0 && strcmp(wl, "randread-4k") == 0) {
      assert_string_equal(st, "failed");
      assert_null(cJSON_GetObjectItem(cell, "median"));
    }
    if (strcmp(cfg, "guest-9p") == 0 && strcmp(wl, "randread-4k") == 0) {
      assert_string_equal(st, "n/a");
    }
    ncells++;
  }
  assert_int_equal(ncells, NCFG * 4);
  cJSON_Delete(root);
  free(text);
}

static void test_svg_has_a_bar_per_cell(void **state)
{
  struct bench_results r;
  char *svg;
  int bars = 0, labels = 0;

  (void)state;
  make_results(&r);
  svg = render(bench_report_svg_write, &r);
  assert_int_equal(strncmp(svg, "<svg ", 5), 0);
  assert_non_null(strstr(svg, "</svg>\n"));
  for (const char *p = svg; (p = strstr(p, "<rect x=")) != NULL; p++) {
    if (strstr(p, "<title>") != NULL && strstr(p, "<title>") < strstr(p, "/>")) {
      bars++;
    }
  }
  /* done cells with a percentage: host 4, qemu-nbd 4, nbdkit 3, guest-virtio-file 3, 9p 1,
   * diskgate 4 */
  assert_int_equal(bars, 19);
  assert_non_null(strstr(svg, "Guest rows (accel=tcg)"));
  /* each bar labelled with its measured value, each column with its unit; the header names
   * the profile, the date and the machine; serve's default row flagged in the legend */
  for (const char *p = svg; (p = strstr(p, "<text class=\"value\"")) != NULL; p++) {
    labels++;
  }
  assert_int_equal(labels, 19);
  assert_non_null(strstr(svg, ")\">2374 MB/s</text>"));
  assert_non_null(strstr(svg, ")\">84.7K</text>"));
  assert_non_null(strstr(svg, ">read-1m (MB/s)</text>"));
  assert_non_null(strstr(svg, ">randread-4k (IOPS)</text>"));
  assert_non_null(strstr(svg, "higher is better"));
  assert_non_null(strstr(svg, ">diskgate bench: profile seeds, 2026-11-30</text>"));
  assert_non_null(strstr(svg, ">AMD EPYC (2 cores), Linux 6.1.0 x86_64</text>"));
  assert_non_null(strstr(svg, ">medians of 3 runs of 10 s per cell"));
  assert_non_null(strstr(svg, ">diskgate-unix-writeback-full (default: diskgate serve with no "
                              "options)</text>"));
  free(svg);
  r.opts.runs = 1;
  svg = render(bench_report_svg_write, &r);
  assert_non_null(strstr(svg, ">one run per cell (runs=1): indicative only"));
  free(svg);
}

/* --render: the JSON report read back renders the same Markdown */
static void test_json_round_trip(void **state)
{
  static struct bench_results loaded;
  struct bench_results r;
  char *md, *want;

  (void)state;
  make_results(&r);
  json_round_trip(&r, &loaded);
  md = render(bench_report_md_write, &loaded);
  want = slurp(BENCH_EXPECTED "/report.md");
  assert_string_equal(md, want);
  assert_int_equal(loaded.cells[1].nruns, 3);
  assert_true(loaded.cells[1].runs[2].ok);
  free(loaded.cells);
  free(md);
  free(want);
  assert_int_equal(bench_load_json("/nonexistent/bench.json", &loaded), -ENOENT);
}

/* --render of a FIFO blocked for ever (in open, with no writer); a directory or a device is
 * no report either: each is refused at once with -EINVAL. */
static void test_load_refuses_what_is_not_a_file(void **state)
{
  static struct bench_results loaded;
  char dir[] = "/tmp/dg-bench-load-XXXXXX";
  char fifo[sizeof dir + 8];

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(bench_load_json(fifo, &loaded), -EINVAL);
  assert_int_equal(bench_load_json(dir, &loaded), -EINVAL);
  assert_int_equal(bench_load_json("/dev/zero", &loaded), -EINVAL);
  assert_null(loaded.cells);
  unlink(fifo);
  rmdir(dir);
}

/* Rows 1 and 2 become diskgate-rbd and qemu-nbd-rbd: a third group, compared with
 * qemu-nbd-rbd, in the Markdown, the SVG and back from the JSON. */
static void test_rbd_group(void **state)
{
  static struct bench_results loaded;
  struct bench_results r;
  char *md, *md2, *svg;

  (void)state;
  make_results(&r);
  r.configs[1] = bench_configs_find("diskgate-rbd");
  r.configs[2] = bench_configs_find("qemu-nbd-rbd");
  for (size_t c = 1; c <= 2; c++) {
    for (size_t w = 0; w < r.nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(&r, c, w);

      cell->cfg = r.configs[c];
      if (!bench_configs_applies(cell->cfg, cell->wl, NULL)) {
        cell->state = BENCH_CELL_NA;
      }
    }
  }
  snprintf(r.rbd, sizeof(r.rbd), "image rbd/diskgate-bench (1024 MiB) on a test cluster");
  bench_stats_results_finish(&r);
  md = render(bench_report_md_write, &r);
  assert_non_null(strstr(md, "- RBD rows: image rbd/diskgate-bench (1024 MiB) on a test "
                             "cluster\n"));
  assert_non_null(strstr(md, "## RBD rows: throughput, higher is better (% of `qemu-nbd-rbd`: "
                             "the same image, the same cluster)\n\n| config | 1M seqread QD4, "
                             "MB/s | 4K randread QD32, IOPS | 4K randwrite QD8 fsync=1, IOPS "
                             "|\n"));
  /* 712.2 / 1116 MB/s; qemu-nbd-rbd's randread failed, so no percentage there */
  assert_non_null(strstr(md, "| diskgate-rbd | 712 MB/s (64%) | 16.1K | 9.45K (98%) |\n"));
  assert_non_null(strstr(md, "| qemu-nbd-rbd | 1116 MB/s (100%) | failed | 9.62K (100%) |\n"));
  assert_non_null(strstr(md, "RBD rows:\n\n| config |"));
  assert_non_null(strstr(md, "## Host and NBD rows: throughput, higher is better (% of `host`)"
                             "\n\n| config | 1M seqread QD4, MB/s | 4K randread QD32, IOPS | "
                             "4K randwrite QD8 fsync=1, IOPS | copy tree + sync, MiB/s |\n"
                             "|---|---:|---:|---:|---:|\n| host |"));
  svg = render(bench_report_svg_write, &r);
  assert_non_null(strstr(svg, "RBD rows: % of qemu-nbd-rbd"));
  json_round_trip(&r, &loaded);
  md2 = render(bench_report_md_write, &loaded);
  assert_string_equal(md2, md);
  free(loaded.cells);
  free(md2);
  free(svg);
  free(md);
}

/* The title of a run whose rows or columns came from --configs or --workloads names them
 * instead of passing for the profile's own, and says the same after a round trip through
 * bench.json. */
static void test_title_names_the_selection(void **state)
{
  static const struct {
    const char *configs, *workloads, *title;
  } cases[] = {
    { NULL, NULL, "# diskgate bench: profile seeds\n" },
    { "host,nbdkit-unix", NULL, "# diskgate bench: profile seeds, rows chosen by --configs\n" },
    { NULL, "read-1m", "# diskgate bench: profile seeds, columns chosen by --workloads\n" },
    { "host", "read-1m",
      "# diskgate bench: profile seeds, rows and columns chosen by --configs and --workloads\n" },
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    static struct bench_results loaded;
    struct bench_results r;
    char *md, *md2;
    size_t n = strlen(cases[i].title);

    make_results(&r);
    r.opts.configs = cases[i].configs;
    r.opts.workloads = cases[i].workloads;
    md = render(bench_report_md_write, &r);
    assert_memory_equal(md, cases[i].title, n);
    json_round_trip(&r, &loaded);
    if (cases[i].configs != NULL) {
      assert_string_equal(loaded.opts.configs, cases[i].configs);
    } else {
      assert_null(loaded.opts.configs);
    }
    md2 = render(bench_report_md_write, &loaded);
    assert_string_equal(md2, md);
    free(loaded.cells);
    free(md2);
    free(md);
  }
  { /* a --configs value longer than any fixed buffer comes back whole */
    static struct bench_results loaded;
    static char longer[5 * 800 + 1];
    struct bench_results r;

    for (size_t k = 0; k < 800; k++) {
      memcpy(longer + 5 * k, "host,", 5);
    }
    longer[sizeof(longer) - 2] = '\0'; /* no trailing comma */
    make_results(&r);
    r.opts.configs = longer;
    json_round_trip(&r, &loaded);
    assert_string_equal(loaded.opts.configs, longer);
    assert_null(loaded.opts.workloads);
    free(loaded.cells);
  }
}

/* bench.md opens with what the run shows: the best row of each column, the best diskgate
 * row and serve's default row with its share of the best, before the method and the full
 * tables; the default row is flagged wherever it is named. */
static void test_summary_opens_the_report(void **state)
{
  struct bench_results r;
  char *md;
  const char *summary, *method, *table;

  (void)state;
  make_results(&r);
  md = render(bench_report_md_write, &r);
  summary = strstr(md, "\n## What this run shows\n");
  method = strstr(md, "\n## How it was measured\n");
  table = strstr(md, "\n## Host and NBD rows: throughput, higher is better (% of `host`)\n");
  assert_non_null(summary);
  assert_non_null(method);
  assert_non_null(table);
  assert_true(summary < method && method < table);
  assert_memory_equal(md, "# diskgate bench: profile seeds\n\n`diskgate bench --profile seeds`"
                          "\n\n## What this run shows\n", 74);
  assert_non_null(strstr(summary, "| column | best row | best diskgate row | "
                                  "`diskgate-unix-writeback-full` (default) |\n"));
  assert_non_null(strstr(summary, "| 4K randread QD32, IOPS | `host`: 84.7K | "
                                  "`diskgate-unix-writeback-full`: 30.5K | 30.5K (36% of best) "
                                  "|\n"));
  assert_true(strstr(summary, "(36% of best)") < method);
  assert_non_null(strstr(table, "\n| diskgate-unix-writeback-full **(default)** | 2100 MB/s "
                                "(88%) |"));
  assert_non_null(strstr(md, "\n- `diskgate-unix-writeback-full` **(default)**: "));
  assert_null(strstr(md, "| qemu-nbd-unix **(default)**"));
  assert_null(strstr(md, "runs=1")); /* three runs: medians, no one-run note */
  free(md);

  /* the best row of a column is the highest value, whichever row it is */
  for (size_t i = 0; i < 3; i++) {
    bench_results_cell(&r, 5, 0)->runs[i].value = 3000;
  }
  bench_stats_results_finish(&r);
  md = render(bench_report_md_write, &r);
  assert_non_null(strstr(md, "| 1M seqread QD4, MB/s | `diskgate-unix-writeback-full`: 3000 "
                             "MB/s | `diskgate-unix-writeback-full`: 3000 MB/s | 3000 MB/s "
                             "(100% of best) |\n"));
  free(md);
}

/* A run of one round says, before anything else, that its figures are indicative. */
static void test_one_run_is_indicative(void **state)
{
  struct bench_results r;
  char *md, *note;

  (void)state;
  make_results(&r);
  r.opts.runs = 1;
  md = render(bench_report_md_write, &r);
  note = strstr(md, "> **One run per cell (runs=1): these figures are indicative only.**");
  assert_non_null(note);
  assert_true(note < strstr(md, "| column | best row |"));
  free(md);
}

/* Every table's columns name their unit, and every heading says which way is better. */
static void test_columns_name_their_unit(void **state)
{
  struct bench_results r;
  char *md;

  (void)state;
  make_results(&r);
  md = render(bench_report_md_write, &r);
  assert_non_null(strstr(md, "| config | 1M seqread QD4, MB/s | 4K randread QD32, IOPS | 4K "
                             "randwrite QD8 fsync=1, IOPS | copy tree + sync, MiB/s |\n"));
  assert_non_null(strstr(md, "## p99 completion latency, lower is better"));
  assert_non_null(strstr(md, "| config | 1M seqread QD4, p99 | 4K randread QD32, p99 |"));
  assert_non_null(strstr(md, "## CPU-seconds per 1K I/Os, lower is better"));
  assert_non_null(strstr(md, "| 4K randwrite QD8 fsync=1, CPU-s/1K I/Os | copy tree + sync, "
                             "CPU-s/GiB |\n"));
  assert_non_null(strstr(md, "## Guest rows: throughput, higher is better (QEMU accel=tcg"));
  free(md);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_markdown_matches_expected),
    cmocka_unit_test(test_formats),
    cmocka_unit_test(test_partial_and_interrupted_cells),
    cmocka_unit_test(test_json_keeps_every_run),
    cmocka_unit_test(test_short_run_took_under_a_second),
    cmocka_unit_test(test_svg_has_a_bar_per_cell),
    cmocka_unit_test(test_json_round_trip),
    cmocka_unit_test(test_rbd_group),
    cmocka_unit_test(test_load_refuses_what_is_not_a_file),
    cmocka_unit_test(test_title_names_the_selection),
    cmocka_unit_test(test_summary_opens_the_report),
    cmocka_unit_test(test_one_run_is_indicative),
    cmocka_unit_test(test_columns_name_their_unit),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
