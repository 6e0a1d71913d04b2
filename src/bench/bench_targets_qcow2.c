/* SPDX-License-Identifier: MIT */
/* bench_targets_qcow2.c: the qcow2 targets Q1-Q4 (see bench_targets_qcow2.h). */
#include <assert.h>
#include <string.h>

#include "bench/bench_targets_qcow2.h"
#include "bench/bench_util.h"

/* The memory bound of Q4, MiB. */
#define Q4_HWM_MAX_MIB 64.0

/* Every cell a qcow2 target reads: per configuration, its workloads, separated by spaces. */
static const struct {
  const char *config, *workloads;
} used[] = {
  { "diskgate-qcow2", "randread-4k randwrite-4k read-1m" },
  { "qemu-nbd-qcow2", "randread-4k randwrite-4k" },
  { "diskgate-qcow2-fresh", "randwrite-4k" },
  { "qemu-nbd-qcow2-fresh", "randwrite-4k" },
  { "diskgate-unix-direct-full", "read-1m" },
  { "diskgate-qcow2-1t", "randrw-4k-16x64" },
  { "qemu-nbd-qcow2-1t", "randrw-4k-16x64" },
};

bool bench_targets_qcow2_uses(const char *config, const char *workload)
{
  size_t len = strlen(workload);

  for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++) {
    if (strcmp(used[i].config, config) != 0 || len == 0) {
      continue;
    }
    for (const char *p = strstr(used[i].workloads, workload); p != NULL;
         p = strstr(p + 1, workload)) {
      bool starts = p == used[i].workloads || p[-1] == ' ';

      if (starts && (p[len] == ' ' || p[len] == '\0')) {
        return true;
      }
    }
  }
  return false;
}

/* a / b, where a reference of 0 (it completed nothing) fails no division */
static double per(double a, double b)
{
  return a / (b > 1e-9 ? b : 1e-9);
}

void bench_targets_qcow2_ratio(const char *target, const char *what, const struct bench_figures *d,
                               const struct bench_figures *ref, const char *ref_name, bool mbps,
                               double goal, struct bench_target_row *row)
{
  double dv = mbps ? d->mbps : d->iops, rv = mbps ? ref->mbps : ref->iops;

  memset(row, 0, sizeof(*row));
  row->target = target;
  bench_fmt(row->what, sizeof(row->what), "%s: %s vs %s >= %.1fx", what, mbps ? "MB/s" : "IOPS",
            ref_name, goal);
  bench_fmt(row->value, sizeof(row->value), "%.2fx", per(dv, rv));
  bench_fmt(row->limit, sizeof(row->limit), ">= %.1fx", goal);
  /* dv >= goal * rv rather than the rounded ratio: exactly the goal passes */
  row->verdict = bench_targets_verdict(dv >= goal * rv, true);
  bench_fmt(row->detail, sizeof(row->detail), "%.0f vs %.0f %s", dv, rv, mbps ? "MB/s" : "IOPS");
}

void bench_targets_qcow2_memory(const struct bench_figures *d, const struct bench_figures *q,
                                struct bench_target_row *row)
{
  memset(row, 0, sizeof(*row));
  row->target = "Q4";
  bench_fmt(row->what, sizeof(row->what),
            "peak RSS (VmHWM) serving a 1 TiB qcow2 image, 16 conns x QD64 <= %.0f MiB",
            Q4_HWM_MAX_MIB);
  bench_fmt(row->value, sizeof(row->value), "%.1f MiB", d->hwm_mib);
  bench_fmt(row->limit, sizeof(row->limit), "<= %.0f MiB", Q4_HWM_MAX_MIB);
  row->verdict = bench_targets_verdict(d->hwm_mib > 0 && d->hwm_mib <= Q4_HWM_MAX_MIB, true);
  if (q->ok) {
    bench_fmt(row->detail, sizeof(row->detail), "qemu-nbd on the same image: %.1f MiB",
              q->hwm_mib);
  } else {
    bench_fmt(row->detail, sizeof(row->detail), "qemu-nbd on the same image: not measured");
  }
}

/* The figures of cell (config, workload), which some qcow2 target must read; false when the
 * cell was not selected or has no successful run. */
static bool fig(const struct bench_results *r, const char *config, const char *workload,
                struct bench_figures *f)
{
  assert(bench_targets_qcow2_uses(config, workload));
  return bench_targets_cell_figures(r, config, workload, f);
}

/* Marks a row of `target` as not measured, naming what it would have measured. */
static void missing(struct bench_target_row *row, const char *target, const char *what)
{
  memset(row, 0, sizeof(*row));
  row->target = target;
  bench_fmt(row->what, sizeof(row->what), "%s", what);
  bench_fmt(row->value, sizeof(row->value), "-");
  bench_fmt(row->limit, sizeof(row->limit), "-");
  row->verdict = BENCH_VERDICT_MISSING;
  bench_fmt(row->detail, sizeof(row->detail), "a cell it needs was not run or failed");
}

/* One ratio line from the cells (dg, wl) and (ref, wl), or a missing line. */
static void ratio_line(const struct bench_results *r, const char *target, const char *what,
                       const char *dg, const char *ref, const char *wl, bool mbps, double goal,
                       struct bench_target_row *row)
{
  struct bench_figures d, q;

  if (fig(r, dg, wl, &d) & fig(r, ref, wl, &q)) {
    bench_targets_qcow2_ratio(target, what, &d, &q, ref, mbps, goal, row);
  } else {
    missing(row, target, what);
  }
}

size_t bench_targets_qcow2_eval(const struct bench_results *r, struct bench_target_row *rows,
                                size_t max)
{
  struct bench_figures d, q;

  assert(max >= 5);
  if (max < 5) {
    return 0;
  }
  ratio_line(r, "Q1", "4K randread QD32, full image", "diskgate-qcow2", "qemu-nbd-qcow2",
             "randread-4k", false, 1.5, &rows[0]);
  ratio_line(r, "Q1", "4K randwrite QD32, full image", "diskgate-qcow2", "qemu-nbd-qcow2",
             "randwrite-4k", false, 1.5, &rows[1]);
  ratio_line(r, "Q2", "4K randwrite QD32, fresh image (allocating)", "diskgate-qcow2-fresh",
             "qemu-nbd-qcow2-fresh", "randwrite-4k", false, 1.0, &rows[2]);
  ratio_line(r, "Q3", "1M seqread QD4, qcow2 vs the same data raw", "diskgate-qcow2",
             "diskgate-unix-direct-full", "read-1m", true, 0.9, &rows[3]);
  if (fig(r, "diskgate-qcow2-1t", "randrw-4k-16x64", &d)) {
    fig(r, "qemu-nbd-qcow2-1t", "randrw-4k-16x64", &q);
    bench_targets_qcow2_memory(&d, &q, &rows[4]);
  } else {
    missing(&rows[4], "Q4", "peak RSS serving a 1 TiB qcow2 image, 16 conns x QD64");
  }
  return 5;
}
