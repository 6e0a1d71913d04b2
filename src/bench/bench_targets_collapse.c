/* SPDX-License-Identifier: MIT */
/* bench_targets_collapse.c: the target C1 (see bench_targets_collapse.h). */
#include <assert.h>
#include <string.h>

#include "bench/bench_targets_collapse.h"
#include "bench/bench_util.h"

#define ROW "diskgate-unix-writeback-full"

/* The figures of cell (ROW, workload); false when the cell was not selected or has no
 * successful run. */
static bool fig(const struct bench_results *r, const char *workload, struct bench_figures *f)
{
  return bench_targets_cell_figures(r, ROW, workload, f);
}

size_t bench_targets_collapse_eval(const struct bench_results *r, struct bench_target_row *rows,
                                   size_t max)
{
  struct bench_figures four, many, sixteen;
  struct bench_target_row *row = &rows[0];
  double ratio;

  assert(max >= 1);
  if (max < 1) {
    return 0;
  }
  memset(row, 0, sizeof(*row));
  row->target = "C1";
  bench_fmt(row->what, sizeof(row->what),
            "4K randwrite QD32 into one file: 32 connections vs 4 >= 1x");
  if (!(fig(r, "randwrite-4k-4c", &four) & fig(r, "randwrite-4k-32c", &many))) {
    bench_fmt(row->value, sizeof(row->value), "-");
    bench_fmt(row->limit, sizeof(row->limit), "-");
    row->verdict = BENCH_VERDICT_MISSING;
    bench_fmt(row->detail, sizeof(row->detail), "a cell it needs was not run or failed");
    return 1;
  }
  ratio = many.iops / (four.iops > 1e-9 ? four.iops : 1e-9);
  bench_fmt(row->value, sizeof(row->value), "%.2fx", ratio);
  bench_fmt(row->limit, sizeof(row->limit), ">= %.0fx", BENCH_COLLAPSE_GOAL);
  row->verdict = bench_targets_verdict(many.iops >= BENCH_COLLAPSE_GOAL * four.iops, true);
  bench_fmt(row->detail, sizeof(row->detail), "%.0f vs %.0f IOPS", many.iops, four.iops);
  if (fig(r, "randwrite-4k-16c", &sixteen)) {
    size_t used = strlen(row->detail);
    bench_fmt(row->detail + used, sizeof(row->detail) - used, "; 16 connections %.0f IOPS",
              sixteen.iops);
  }
  return 1;
}
