/* SPDX-License-Identifier: MIT */
/* bench_targets_asif.c: the ASIF targets A1-A2 (see bench_targets_asif.h). */
#include <assert.h>
#include <string.h>

#include "bench/bench_targets_asif.h"
#include "bench/bench_targets_qcow2.h"
#include "bench/bench_util.h"

#define ASIF_ROW "diskgate-asif"
#define RAW_ROW "diskgate-unix-direct-full"

/* The figures of cell (config, workload); false when the cell was not selected or has no
 * successful run. */
static bool fig(const struct bench_results *r, const char *config, const char *workload,
                struct bench_figures *f)
{
  return bench_targets_cell_figures(r, config, workload, f);
}

/* One line: ASIF_ROW against RAW_ROW on workload wl (MB/s when mbps, else IOPS), the host
 * path's figure added to the detail when measured; or a missing line. */
static void line(const struct bench_results *r, const char *target, const char *what,
                 const char *wl, bool mbps, struct bench_target_row *row)
{
  struct bench_figures a, raw, host;

  if (!(fig(r, ASIF_ROW, wl, &a) & fig(r, RAW_ROW, wl, &raw))) {
    memset(row, 0, sizeof(*row));
    row->target = target;
    bench_fmt(row->what, sizeof(row->what), "%s", what);
    bench_fmt(row->value, sizeof(row->value), "-");
    bench_fmt(row->limit, sizeof(row->limit), "-");
    row->verdict = BENCH_VERDICT_MISSING;
    bench_fmt(row->detail, sizeof(row->detail), "a cell it needs was not run or failed");
    return;
  }
  bench_targets_qcow2_ratio(target, what, &a, &raw, RAW_ROW, mbps, BENCH_ASIF_GOAL, row);
  if (fig(r, "host", wl, &host)) {
    size_t used = strlen(row->detail);

    bench_fmt(row->detail + used, sizeof(row->detail) - used, "; host path %.0f %s",
              mbps ? host.mbps : host.iops, mbps ? "MB/s" : "IOPS");
  }
}

size_t bench_targets_asif_eval(const struct bench_results *r, struct bench_target_row *rows,
                               size_t max)
{
  assert(max >= 2);
  if (max < 2) {
    return 0;
  }
  line(r, "A1", "1M seqread QD4, ASIF vs the same bytes raw", "read-1m", true, &rows[0]);
  line(r, "A2", "4K randread QD32, ASIF vs the same bytes raw", "randread-4k", false, &rows[1]);
  return 2;
}
