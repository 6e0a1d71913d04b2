/* SPDX-License-Identifier: MIT */
/* bench_stats.c: medians, percentiles, percentages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_configs.h"
#include "bench/bench_stats.h"

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a;
  double y = *(const double *)b;

  if (x < y) {
    return -1;
  }
  if (x > y) {
    return 1;
  }
  return 0;
}

double bench_stats_percentile(const double *v, size_t n, double p)
{
  double sorted[BENCH_MAX_RUNS * 4];
  double *buf = sorted;
  double rank, frac, out;
  size_t lo;

  if (!(p >= 0.0 && p <= 100.0)) {
    return NAN;
  }
  if (n == 0) {
    return 0.0;
  }
  if (n > sizeof(sorted) / sizeof(sorted[0])) {
    buf = malloc(n * sizeof(*buf));
    if (buf == NULL) {
      return NAN;
    }
  }
  memcpy(buf, v, n * sizeof(*buf));
  qsort(buf, n, sizeof(*buf), cmp_double);
  rank = p / 100.0 * (double)(n - 1);
  lo = (size_t)floor(rank);
  frac = rank - (double)lo;
  if (lo + 1 < n) {
    out = buf[lo] + frac * (buf[lo + 1] - buf[lo]);
  } else {
    out = buf[n - 1];
  }
  if (buf != sorted) {
    free(buf);
  }
  return out;
}

double bench_stats_median(const double *v, size_t n)
{
  return bench_stats_percentile(v, n, 50.0);
}

double bench_stats_pct(double value, double base, bool *ok)
{
  if (!(base > 0.0) || !isfinite(base) || !isfinite(value)) {
    *ok = false;
    return 0.0;
  }
  *ok = true;
  return 100.0 * value / base;
}

void bench_stats_cell_finish(struct bench_cell *cell)
{
  double value[BENCH_MAX_RUNS] = { 0 }, p99[BENCH_MAX_RUNS] = { 0 };
  double fp99[BENCH_MAX_RUNS] = { 0 }, cpu[BENCH_MAX_RUNS] = { 0 };
  size_t n = 0;

  if (cell->state == BENCH_CELL_NA) {
    return;
  }
  for (size_t i = 0; i < cell->nruns && i < BENCH_MAX_RUNS; i++) {
    const struct bench_sample *s = &cell->runs[i];

    if (!s->ok) {
      continue;
    }
    value[n] = s->value;
    p99[n] = s->p99_us;
    fp99[n] = s->fsync_p99_us;
    cpu[n] = s->cpu_per_kio;
    n++;
  }
  cell->value = bench_stats_median(value, n);
  cell->p99_us = bench_stats_median(p99, n);
  cell->fsync_p99_us = bench_stats_median(fp99, n);
  cell->cpu_per_kio = bench_stats_median(cpu, n);
  cell->have_pct = false;
  cell->pct = 0.0;
  if (n > 0) {
    cell->state = BENCH_CELL_DONE;
  } else if (cell->nruns > 0) {
    cell->state = BENCH_CELL_FAILED;
  }
}

long bench_stats_baseline_row(const struct bench_results *r, enum bench_group group)
{
  const char *want = bench_configs_group_baseline(group);
  long first = -1;

  for (size_t c = 0; c < r->nconfigs; c++) {
    if (bench_configs_group(r->configs[c]) != group) {
      continue;
    }
    if (strcmp(r->configs[c]->name, want) == 0) {
      return (long)c;
    }
    if (first < 0) {
      first = (long)c;
    }
  }
  return group == BENCH_GROUP_GUEST ? first : -1;
}

void bench_stats_results_finish(struct bench_results *r)
{
  long base[BENCH_GROUP_COUNT];

  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    base[g] = bench_stats_baseline_row(r, (enum bench_group)g);
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      bench_stats_cell_finish(bench_results_cell(r, c, w));
    }
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    long b = base[bench_configs_group(r->configs[c])];

    if (b < 0) {
      continue;
    }
    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);
      const struct bench_cell *bc = bench_results_cell(r, (size_t)b, w);

      if (cell->state != BENCH_CELL_DONE || bc->state != BENCH_CELL_DONE) {
        continue;
      }
      cell->pct = bench_stats_pct(cell->value, bc->value, &cell->have_pct);
    }
  }
}
