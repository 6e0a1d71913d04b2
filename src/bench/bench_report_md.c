/* SPDX-License-Identifier: MIT */
/* bench_report_md.c: the Markdown report, and the number formats every report shares. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench_configs.h"
#include "bench/bench_report.h"
#include "bench/bench_stats.h"
#include "bench/bench_workloads.h"
#include "bench/bench_util.h"

void bench_report_fmt_value(double v, enum bench_unit unit, char *buf, size_t len)
{
  const char *label = bench_workloads_unit_label(unit);

  if (unit == BENCH_UNIT_IOPS) {
    if (v >= 1e6) {
      bench_fmt(buf, len, "%.2fM", v / 1e6);
    } else if (v >= 1e5) {
      bench_fmt(buf, len, "%.0fK", v / 1e3);
    } else if (v >= 1e4) {
      bench_fmt(buf, len, "%.1fK", v / 1e3);
    } else if (v >= 1e3) {
      bench_fmt(buf, len, "%.2fK", v / 1e3);
    } else {
      bench_fmt(buf, len, "%.0f", v);
    }
    return;
  }
  if (v >= 100) {
    bench_fmt(buf, len, "%.0f %s", v, label);
  } else if (v >= 10) {
    bench_fmt(buf, len, "%.1f %s", v, label);
  } else {
    bench_fmt(buf, len, "%.2f %s", v, label);
  }
}

void bench_report_fmt_latency(double us, char *buf, size_t len)
{
  if (us < 1000) {
    bench_fmt(buf, len, "%.0f µs", us);
  } else if (us < 10000) {
    bench_fmt(buf, len, "%.1f ms", us / 1000);
  } else {
    bench_fmt(buf, len, "%.0f ms", us / 1000);
  }
}

void bench_report_fmt_pct(double pct, char *buf, size_t len)
{
  if (pct >= 9.95) {
    bench_fmt(buf, len, "%.0f%%", pct);
  } else {
    bench_fmt(buf, len, "%.1f%%", pct);
  }
}

void bench_report_fmt_duration(double s, char *buf, size_t len)
{
  long t = lround(s);

  if (s > 0 && s < 0.5) {
    bench_fmt(buf, len, "under 1s"); /* a copy-only run of a small tree: not "0s" */
  } else if (t < 60) {
    bench_fmt(buf, len, "%lds", t);
  } else if (t < 3600) {
    bench_fmt(buf, len, "%ldm%02lds", t / 60, t % 60);
  } else {
    bench_fmt(buf, len, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  }
}

static void fmt_bytes(uint64_t b, char *buf, size_t len)
{
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) {
    bench_fmt(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
  } else if (b >= (1ull << 30)) {
    bench_fmt(buf, len, "%.1f GiB", (double)b / (double)(1ull << 30));
  } else {
    bench_fmt(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
  }
}

/* Which kind of table a pass renders. */
enum table_kind { TABLE_VALUE, TABLE_P99, TABLE_CPU };

/* Returns true when some row of the group can run workload w. */
static bool column_used(const struct bench_results *r, size_t w, enum bench_group group)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (bench_configs_group(r->configs[c]) == group &&
        bench_configs_applies(r->configs[c], r->workloads[w], NULL)) {
      return true;
    }
  }
  return false;
}

static bool group_has_rows(const struct bench_results *r, enum bench_group group)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (bench_configs_group(r->configs[c]) == group) {
      return true;
    }
  }
  return false;
}

/* Runs of the cell that succeeded (its medians are over these). */
static size_t runs_ok(const struct bench_cell *cell)
{
  size_t n = 0;

  for (size_t i = 0; i < cell->nruns && i < BENCH_MAX_RUNS; i++) {
    n += cell->runs[i].ok ? 1 : 0;
  }
  return n;
}

/* runs: the runs the lab was asked for (a cell interrupted in a later round has fewer). */
static void cell_text(const struct bench_cell *cell, enum table_kind kind, unsigned runs,
                      char *buf, size_t len)
{
  char a[40], b[40], partial[40] = "";

  switch (cell->state) {
  case BENCH_CELL_NA:
    bench_fmt(buf, len, "-");
    return;
  case BENCH_CELL_PENDING:
    bench_fmt(buf, len, "not run");
    return;
  case BENCH_CELL_FAILED:
    /* "interrupted": the lab was stopped (Ctrl-C) during the cell's only run(s) */
    bench_fmt(buf, len, "%s", strcmp(cell->note, "interrupted") == 0 ? "interrupted" : "failed");
    return;
  case BENCH_CELL_DONE:
    break;
  }
  switch (kind) {
  case TABLE_VALUE:
    bench_report_fmt_value(cell->value, cell->wl->unit, a, sizeof(a));
    if (runs_ok(cell) < runs) { /* a median of fewer runs than the Method line says */
      bench_fmt(partial, sizeof(partial), " [%zu of %u runs]", runs_ok(cell), runs);
    }
    if (cell->have_pct) {
      bench_report_fmt_pct(cell->pct, b, sizeof(b));
      bench_fmt(buf, len, "%s (%s)%s", a, b, partial);
    } else {
      bench_fmt(buf, len, "%s%s", a, partial);
    }
    return;
  case TABLE_P99:
    if (cell->wl->kind == BENCH_WL_COPY) {
      bench_fmt(buf, len, "-");
      return;
    }
    bench_report_fmt_latency(cell->p99_us, a, sizeof(a));
    if (cell->wl->fsync) {
      bench_report_fmt_latency(cell->fsync_p99_us, b, sizeof(b));
      bench_fmt(buf, len, "%s (fsync %s)", a, b);
    } else {
      bench_fmt(buf, len, "%s", a);
    }
    return;
  case TABLE_CPU:
    bench_fmt(buf, len, "%.3g", cell->cpu_per_kio);
    return;
  }
}

/* The unit of a column in a table of `kind`: "IOPS", "MB/s", "p99", "CPU-s/1K I/Os". */
static const char *column_unit(const struct bench_workload *wl, enum table_kind kind)
{
  switch (kind) {
  case TABLE_VALUE:
    break;
  case TABLE_P99:
    return "p99";
  case TABLE_CPU:
    return wl->kind == BENCH_WL_COPY ? "CPU-s/GiB" : "CPU-s/1K I/Os";
  }
  return bench_workloads_unit_label(wl->unit);
}

/* A row's name as the tables show it: serve's default configuration flagged. */
static void row_name(const struct bench_config *cfg, char *buf, size_t len)
{
  bench_fmt(buf, len, "%s%s", cfg->name,
            bench_configs_is_serve_default(cfg) ? " **(default)**" : "");
}

static void write_table(FILE *f, const struct bench_results *r, enum bench_group group,
                        enum table_kind kind)
{
  fputs("| config |", f);
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (column_used(r, w, group)) {
      fprintf(f, " %s, %s |", r->workloads[w]->title, column_unit(r->workloads[w], kind));
    }
  }
  fputs("\n|---|", f);
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (column_used(r, w, group)) {
      fputs("---:|", f);
    }
  }
  fputc('\n', f);
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (bench_configs_group(r->configs[c]) != group) {
      continue;
    }
    char name[128];

    row_name(r->configs[c], name, sizeof(name));
    fprintf(f, "| %s |", name);
    for (size_t w = 0; w < r->nworkloads; w++) {
      char text[128];

      if (!column_used(r, w, group)) {
        continue;
      }
      /* bench_results_cell() wants a mutable pointer; the cell is only read here */
      cell_text(&r->cells[c * r->nworkloads + w], kind, r->opts.runs, text, sizeof(text));
      fprintf(f, " %s |", text);
    }
    fputc('\n', f);
  }
  fputc('\n', f);
}

/* The row of the group with the highest value in column w (among diskgate rows only when
 * dg_only), or -1 when no such cell succeeded. */
static long best_row(const struct bench_results *r, enum bench_group group, size_t w,
                     bool dg_only)
{
  long best = -1;

  for (size_t c = 0; c < r->nconfigs; c++) {
    const struct bench_cell *cell = &r->cells[c * r->nworkloads + w];

    if (bench_configs_group(r->configs[c]) != group || cell->state != BENCH_CELL_DONE ||
        (dg_only && r->configs[c]->server != BENCH_SERVER_DISKGATE)) {
      continue;
    }
    if (best < 0 || cell->value > r->cells[(size_t)best * r->nworkloads + w].value) {
      best = (long)c;
    }
  }
  return best;
}

static bool group_has(const struct bench_results *r, enum bench_group group, bool dg_default)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (bench_configs_group(r->configs[c]) == group &&
        (dg_default ? bench_configs_is_serve_default(r->configs[c])
                    : r->configs[c]->server == BENCH_SERVER_DISKGATE)) {
      return true;
    }
  }
  return false;
}

static bool has_loop_rows(const struct bench_results *r)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (r->configs[c]->kind != BENCH_CFG_GUEST && bench_configs_on_loop(r->configs[c])) {
      return true;
    }
  }
  return false;
}

/* One line of the summary: a column, its best row, its best diskgate row, and the figure
 * of each of serve's default rows with its share of the best. */
static void write_summary_line(FILE *f, const struct bench_results *r, enum bench_group group,
                               size_t w, bool dg)
{
  const struct bench_workload *wl = r->workloads[w];
  long best = best_row(r, group, w, false), best_dg = best_row(r, group, w, true);
  char v[40], pct[40];

  fprintf(f, "| %s, %s |", wl->title, bench_workloads_unit_label(wl->unit));
  for (int k = 0; k < (dg ? 2 : 1); k++) {
    long b = k == 0 ? best : best_dg;

    if (b < 0) {
      fputs(" - |", f);
      continue;
    }
    bench_report_fmt_value(r->cells[(size_t)b * r->nworkloads + w].value, wl->unit, v,
                           sizeof(v));
    fprintf(f, " `%s`: %s |", r->configs[b]->name, v);
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    const struct bench_cell *cell = &r->cells[c * r->nworkloads + w];

    if (bench_configs_group(r->configs[c]) != group ||
        !bench_configs_is_serve_default(r->configs[c])) {
      continue;
    }
    if (cell->state != BENCH_CELL_DONE) {
      fprintf(f, " %s |", cell->state == BENCH_CELL_NA ? "-" : "failed");
      continue;
    }
    assert(best >= 0); /* this cell is done, so the column has a best row */
    bench_report_fmt_value(cell->value, wl->unit, v, sizeof(v));
    bench_report_fmt_pct(100.0 * cell->value / r->cells[(size_t)best * r->nworkloads + w].value,
                         pct, sizeof(pct));
    fprintf(f, " %s (%s of best) |", v, pct);
  }
  fputc('\n', f);
}

/* The opening of the report: the best row of each column, serve's default rows beside it,
 * and whether the figures are medians or single runs. */
static void write_summary(FILE *f, const struct bench_results *r, int ngroups)
{
  static const char *const label[BENCH_GROUP_COUNT] = { "Host and NBD rows", "RBD rows",
                                                        "Guest rows", "qcow2 rows" };

  fputs("## What this run shows\n\n", f);
  if (r->opts.runs == 1) {
    fputs("> **One run per cell (runs=1): these figures are indicative only.** Run again with "
          "`--runs 3` or more to get medians before choosing a configuration.\n\n", f);
  }
  fprintf(f, "The best row of each column (higher is better in every column: IOPS or MB/s). "
          "**(default)** marks what `diskgate serve` does with no options (`--sync full "
          "--cache writeback`, the default engine) over the transport and backing its row "
          "names%s.\n\n", has_loop_rows(r) ? "; `host-dev-*` and `diskgate-dev-*` rows run on "
          "a loop device over the test file (a block device, as a partition would be), the "
          "others on the file itself" : "");
  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    bool dg = group_has(r, (enum bench_group)g, false);

    if (!group_has_rows(r, (enum bench_group)g)) {
      continue;
    }
    if (ngroups > 1) {
      fprintf(f, "%s:\n\n", label[g]);
    }
    fprintf(f, "| column | best row |%s", dg ? " best diskgate row |" : "");
    for (size_t c = 0; c < r->nconfigs; c++) {
      if (bench_configs_group(r->configs[c]) == (enum bench_group)g &&
          bench_configs_is_serve_default(r->configs[c])) {
        fprintf(f, " `%s` (default) |", r->configs[c]->name);
      }
    }
    fputs("\n|---|---|", f);
    fputs(dg ? "---|" : "", f);
    for (size_t c = 0; c < r->nconfigs; c++) {
      if (bench_configs_group(r->configs[c]) == (enum bench_group)g &&
          bench_configs_is_serve_default(r->configs[c])) {
        fputs("---:|", f);
      }
    }
    fputc('\n', f);
    for (size_t w = 0; w < r->nworkloads; w++) {
      if (column_used(r, w, (enum bench_group)g)) {
        write_summary_line(f, r, (enum bench_group)g, w, dg);
      }
    }
    fputc('\n', f);
  }
  if (!group_has(r, BENCH_GROUP_HOST, true) && !group_has(r, BENCH_GROUP_RBD, true)) {
    fputs("No row of this run is serve's default configuration (add "
          "`diskgate-unix-writeback-full` to `--configs` to see it).\n\n", f);
  }
}

static bool has_copy(const struct bench_results *r)
{
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (r->workloads[w]->kind == BENCH_WL_COPY) {
      return true;
    }
  }
  return false;
}

static void write_header(FILE *f, const struct bench_results *r, int ngroups)
{
  const struct bench_machine *m = &r->machine;
  const struct bench_opts *o = &r->opts;
  bool file_rows = group_has_rows(r, BENCH_GROUP_HOST) || group_has_rows(r, BENCH_GROUP_GUEST);
  char size[32], took[32], copy[32];

  fmt_bytes(o->size, size, sizeof(size));
  bench_report_fmt_duration(r->elapsed_s, took, sizeof(took));
  /* --configs and --workloads replace the profile's rows and columns: say so (the values
   * are in the command line below). */
  const char *chosen = o->configs != NULL && o->workloads != NULL
                         ? ", rows and columns chosen by --configs and --workloads"
                       : o->configs != NULL   ? ", rows chosen by --configs"
                       : o->workloads != NULL ? ", columns chosen by --workloads"
                                              : "";

  fprintf(f, "# diskgate bench: profile %s%s\n\n", o->profile, chosen);
  fprintf(f, "`%s`\n\n", r->command);
  write_summary(f, r, ngroups);
  fputs("## How it was measured\n\n", f);
  fprintf(f, "- Machine: %s, %u cores, %.1f GiB RAM, %s; `--dir` on %s (%s)\n", m->cpu_model,
          m->cores, (double)m->mem_bytes / (double)(1ull << 30), m->kernel, m->dir_fs,
          m->dir_dev);
  fprintf(f, "- Tools: %s; %s; %s; %s; %s\n", m->fio_version[0] ? m->fio_version : "fio ?",
          m->qemu_version[0] ? m->qemu_version : "QEMU not installed",
          m->qemu_nbd_version[0] ? m->qemu_nbd_version : "qemu-nbd not installed",
          m->nbdkit_version[0] ? m->nbdkit_version : "nbdkit not installed",
          m->diskgate_version);
  if (o->runs == 1) {
    fprintf(f, "- Method: one run");
  } else {
    fprintf(f, "- Method: medians of %u runs", o->runs);
  }
  fprintf(f, " of %u s after a %.1f s ramp%s, fio direct=1", o->runtime_s, o->ramp_s,
          o->runs == 1 ? "" : " (runs taken in rounds over all rows)");
  if (file_rows) {
    fprintf(f, ", test file %s of random data%s", size,
            r->caches_dropped ? ", page caches dropped before each run" : "");
  }
  fprintf(f, "; started %s, took %s\n", r->started, took);
  if (r->rbd[0] != '\0') {
    fprintf(f, "- RBD rows: %s\n", r->rbd);
  }
  if (has_copy(r)) {
    fmt_bytes(r->tree_bytes, copy, sizeof(copy));
    fprintf(f, "- Copy test: a tree of %u files (512 B to 4 MiB, %s in all) copied with `cp -a` "
            "onto a fresh ext4 on the disk under test, then syncfs; NBD rows reach the export "
            "through nbdfuse and a loop device\n", r->tree_files, copy);
  }
  fprintf(f, "- Cells: IOPS for 4K jobs (read + write), MB/s (10^6 B/s) for 1M jobs%s, "
          "higher is better; (NN%%) is the share of the group's baseline row in the same "
          "column; **(default)** flags serve's default configuration\n\n",
          has_copy(r) ? ", MiB/s for the copy" : "");
}

int bench_report_md_write(FILE *f, const struct bench_results *r)
{
  static const struct {
    enum table_kind kind;
    const char *title;
  } extra[] = {
    { TABLE_P99, "p99 completion latency, lower is better (fsync: p99 of the flushes)" },
    { TABLE_CPU, "CPU-seconds per 1K I/Os, lower is better: server process + client (fio, or "
                 "the QEMU process for guest rows); copy: CPU-seconds per GiB" },
  };
  bool groups[BENCH_GROUP_COUNT];
  const char *accel = r->machine.accel[0] != '\0' ? r->machine.accel : "not run";
  int ngroups = 0;

  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    groups[g] = group_has_rows(r, (enum bench_group)g);
    ngroups += groups[g];
  }
  write_header(f, r, ngroups);
  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    long base = bench_stats_baseline_row(r, (enum bench_group)g);

    if (!groups[g]) {
      continue;
    }
    if (g == BENCH_GROUP_HOST && base >= 0) {
      fprintf(f, "## Host and NBD rows: throughput, higher is better (%% of `%s`)\n\n",
              r->configs[base]->name);
    } else if (g == BENCH_GROUP_HOST) {
      fputs("## Host and NBD rows: throughput, higher is better (no `host` row selected, so no "
            "percentages)\n\n", f);
    } else if (g == BENCH_GROUP_RBD && base >= 0) {
      fprintf(f, "## RBD rows: throughput, higher is better (%% of `%s`: the same image, the "
              "same cluster)\n\n", r->configs[base]->name);
    } else if (g == BENCH_GROUP_RBD) {
      fprintf(f, "## RBD rows: throughput, higher is better (no `%s` row selected, so no "
              "percentages)\n\n", bench_configs_group_baseline(BENCH_GROUP_RBD));
    } else if (g == BENCH_GROUP_QCOW2) {
      fprintf(f, "## qcow2 rows: throughput, higher is better (%% of `%s`%s)\n\n",
              bench_configs_group_baseline(BENCH_GROUP_QCOW2),
              base >= 0 ? ", a copy of the same image" : ": not selected, so no percentages");
    } else {
      fprintf(f, "## Guest rows: throughput, higher is better (QEMU accel=%s; %% of `%s`, not "
              "comparable with the host line)\n\n", accel,
              base >= 0 ? r->configs[base]->name : "-");
    }
    write_table(f, r, (enum bench_group)g, TABLE_VALUE);
  }
  for (size_t k = 0; k < sizeof(extra) / sizeof(extra[0]); k++) {
    fprintf(f, "## %s\n\n", extra[k].title);
    for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
      static const char *const label[BENCH_GROUP_COUNT] = { "Host and NBD rows", "RBD rows",
                                                            "Guest rows", "qcow2 rows" };

      if (!groups[g]) {
        continue;
      }
      if (ngroups > 1) {
        fprintf(f, "%s:\n\n", label[g]);
      }
      write_table(f, r, (enum bench_group)g, extra[k].kind);
    }
  }
  fputs("## Configurations\n\n", f);
  for (size_t c = 0; c < r->nconfigs; c++) {
    fprintf(f, "- `%s`%s: %s\n", r->configs[c]->name,
            bench_configs_is_serve_default(r->configs[c]) ? " **(default)**" : "",
            r->configs[c]->title);
  }
  return ferror(f) ? -EIO : 0;
}
