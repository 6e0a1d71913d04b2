/* SPDX-License-Identifier: MIT */
/* bench_stats.h: medians, percentiles and percentages of the lab's figures. Pure functions;
 * any thread. */
#ifndef DISKGATE_BENCH_STATS_H
#define DISKGATE_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench_types.h"

/* Returns the p-th percentile (0 <= p <= 100) of the n values in v, by linear interpolation
 * between the closest ranks (the method of numpy's default and of Excel's PERCENTILE.INC).
 * v is not modified. Returns 0 when n == 0 and NaN when p is out of range. */
double bench_stats_percentile(const double *v, size_t n, double p);

/* Returns the median of the n values in v (the mean of the two middle ones when n is even),
 * 0 when n == 0. v is not modified. */
double bench_stats_median(const double *v, size_t n);

/* Returns value as a percentage of base (100 * value / base). Sets *ok to false and returns 0
 * when base is not positive or either value is not finite. */
double bench_stats_pct(double value, double base, bool *ok);

/* Sets the cell's medians (value, p99, fsync p99, CPU per 1K I/Os) from its successful runs
 * and its state: DONE if any run succeeded, FAILED if runs were attempted and none did. Cells
 * in state NA are left alone. */
void bench_stats_cell_finish(struct bench_cell *cell);

/* Returns the index of the row every other row of the same group is compared with: "host" for
 * host-side rows, "qemu-nbd-rbd" for RBD rows, "guest-virtio-file" for guest rows (or the first
 * guest row when that one was not selected). Returns -1 when the group has no baseline. */
long bench_stats_baseline_row(const struct bench_results *r, enum bench_group group);

/* Finishes every cell, then sets each cell's percentage of its group's baseline row in the
 * same column. */
void bench_stats_results_finish(struct bench_results *r);

#endif
