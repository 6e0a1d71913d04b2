/* SPDX-License-Identifier: MIT */
/* bench_targets_metrics.c: the metrics target M1 (see bench_targets_metrics.h). */
#include <assert.h>
#include <string.h>

#include "bench/bench_configs.h"
#include "bench/bench_targets_metrics.h"
#include "bench/bench_targets_qcow2.h"
#include "bench/bench_util.h"

#define OFF_ROW "diskgate-unix-direct-full"
#define ON_ROW BENCH_METRICS_PREFIX "unix-direct-full"
#define WORKLOAD "randread-4k"

/* The figures of cell (config, WORKLOAD); false when the cell was not selected or has no
 * successful run. */
static bool fig(const struct bench_results *r, const char *config, struct bench_figures *f)
{
  return bench_targets_cell_figures(r, config, WORKLOAD, f);
}

size_t bench_targets_metrics_eval(const struct bench_results *r, struct bench_target_row *rows,
                                  size_t max)
{
  struct bench_figures on, off;
  const char *what = "4K randread QD32, --metrics on (scraped 1/s) vs off";

  assert(max >= 1);
  if (max < 1) {
    return 0;
  }
  if (!(fig(r, ON_ROW, &on) & fig(r, OFF_ROW, &off))) {
    memset(&rows[0], 0, sizeof(rows[0]));
    rows[0].target = "M1";
    bench_fmt(rows[0].what, sizeof(rows[0].what), "%s", what);
    bench_fmt(rows[0].value, sizeof(rows[0].value), "-");
    bench_fmt(rows[0].limit, sizeof(rows[0].limit), "-");
    rows[0].verdict = BENCH_VERDICT_MISSING;
    bench_fmt(rows[0].detail, sizeof(rows[0].detail), "a cell it needs was not run or failed");
    return 1;
  }
  bench_targets_qcow2_ratio("M1", what, &on, &off, OFF_ROW, false, BENCH_METRICS_GOAL, &rows[0]);
  /* the goal with two decimals (the shared helper prints one) */
  bench_fmt(rows[0].what, sizeof(rows[0].what), "%s: IOPS vs %s >= %.2fx", what, OFF_ROW,
            BENCH_METRICS_GOAL);
  bench_fmt(rows[0].limit, sizeof(rows[0].limit), ">= %.2fx", BENCH_METRICS_GOAL);
  return 1;
}
