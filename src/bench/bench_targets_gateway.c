/* SPDX-License-Identifier: MIT */
/* bench_targets_gateway.c: the gateway targets G1-G2 (see bench_targets_gateway.h). */
#include <assert.h>
#include <string.h>

#include "bench/bench_targets_gateway.h"
#include "bench/bench_util.h"

#define DG_ROW "diskgate-gateway"
#define QEMU_ROW "qemu-nbd-gateway"
#define G1_WL "gateway-randread-4k-1c"
#define G2_WL "gateway-randread-4k-5c"

bool bench_targets_gateway_uses(const char *config, const char *workload)
{
  if (strcmp(workload, G1_WL) == 0) {
    return strcmp(config, DG_ROW) == 0 || strcmp(config, QEMU_ROW) == 0;
  }
  return strcmp(workload, G2_WL) == 0 && strcmp(config, DG_ROW) == 0;
}

/* a / b, where a reference of 0 (it completed nothing) fails no division */
static double per(double a, double b)
{
  return a / (b > 1e-9 ? b : 1e-9);
}

/* Starts *row as target `target` on job `what`; a line whose cells are missing says so and
 * returns false. */
static bool row_begin(struct bench_target_row *row, const char *target, const char *what,
                      bool measured)
{
  memset(row, 0, sizeof(*row));
  row->target = target;
  bench_fmt(row->what, sizeof(row->what), "%s", what);
  if (!measured) {
    bench_fmt(row->value, sizeof(row->value), "-");
    bench_fmt(row->limit, sizeof(row->limit), "-");
    row->verdict = BENCH_VERDICT_MISSING;
    bench_fmt(row->detail, sizeof(row->detail), "a cell it needs was not run or failed");
  }
  return measured;
}

/* G1's two lines from diskgate's (d) and the qemu-nbd set's (q) figures. */
static void g1_rows(const struct bench_figures *d, const struct bench_figures *q, bool measured,
                    struct bench_target_row *rows)
{
  double ratio;

  if (row_begin(&rows[0], "G1",
                "4K randread QD8, 100 exports x 1 conn: IOPS in all, one diskgate vs 100 "
                "qemu-nbd >= 2x",
                measured)) {
    ratio = per(d->iops, q->iops);
    bench_fmt(rows[0].value, sizeof(rows[0].value), "%.2fx", ratio);
    bench_fmt(rows[0].limit, sizeof(rows[0].limit), ">= %.0fx", BENCH_GATEWAY_IOPS_GOAL);
    rows[0].verdict = bench_targets_verdict(ratio >= BENCH_GATEWAY_IOPS_GOAL, true);
    bench_fmt(rows[0].detail, sizeof(rows[0].detail), "%.0f vs %.0f IOPS", d->iops, q->iops);
  }
  if (row_begin(&rows[1], "G1",
                "the same: resident memory (VmRSS summed over the processes, the largest "
                "sample) <= 0.1x",
                measured)) {
    ratio = per(d->rss_mib, q->rss_mib);
    bench_fmt(rows[1].value, sizeof(rows[1].value), "%.3fx", ratio);
    bench_fmt(rows[1].limit, sizeof(rows[1].limit), "<= %.1fx", BENCH_GATEWAY_RSS_GOAL);
    rows[1].verdict = bench_targets_verdict(d->rss_mib <= BENCH_GATEWAY_RSS_GOAL * q->rss_mib &&
                                              q->rss_mib > 0,
                                            true);
    bench_fmt(rows[1].detail, sizeof(rows[1].detail), "%.1f vs %.1f MiB", d->rss_mib,
              q->rss_mib);
  }
}

size_t bench_targets_gateway_eval(const struct bench_results *r, struct bench_target_row *rows,
                                  size_t max)
{
  struct bench_figures d, q, fair;
  bool g1, g2;
  double ratio;

  assert(max >= 3);
  if (max < 3) {
    return 0;
  }
  g1 = bench_targets_cell_figures(r, DG_ROW, G1_WL, &d) &
       bench_targets_cell_figures(r, QEMU_ROW, G1_WL, &q);
  g1_rows(&d, &q, g1, rows);
  g2 = bench_targets_cell_figures(r, DG_ROW, G2_WL, &fair) && fair.export_median > 0;
  if (row_begin(&rows[2], "G2",
                "4K randread QD4, 100 exports x 5 conns, one diskgate: the least export's "
                "IOPS vs the median's >= 0.5x",
                g2)) {
    ratio = per(fair.export_min, fair.export_median);
    bench_fmt(rows[2].value, sizeof(rows[2].value), "%.2fx", ratio);
    bench_fmt(rows[2].limit, sizeof(rows[2].limit), ">= %.1fx", BENCH_GATEWAY_FAIR_GOAL);
    rows[2].verdict = bench_targets_verdict(
      fair.export_min >= BENCH_GATEWAY_FAIR_GOAL * fair.export_median, true);
    bench_fmt(rows[2].detail, sizeof(rows[2].detail),
              "per export: least %.0f, median %.0f, most %.0f IOPS; %.0f in all", fair.export_min,
              fair.export_median, fair.export_max, fair.iops);
  }
  return 3;
}
