/* SPDX-License-Identifier: MIT */
/* bench_targets_metrics.h: the metrics target M1 of docs/performance.md ("Metrics"), judged
 * on the cells of a `diskgate bench --profile metrics` run, like bench_targets_asif.h:
 *   M1  4K random reads QD32: diskgate-metrics-unix-direct-full (--metrics on, scraped once
 *       a second) at least 0.97x the IOPS of diskgate-unix-direct-full (metrics off), the
 *       medians of interleaved rounds
 * Pure functions of the results; any thread, as long as the results are not being changed. */
#ifndef DISKGATE_BENCH_TARGETS_METRICS_H
#define DISKGATE_BENCH_TARGETS_METRICS_H

#include <stddef.h>

#include "bench/bench_targets.h"

/* The goal of M1: the metrics row's IOPS over the plain row's, at least (within 3%). */
#define BENCH_METRICS_GOAL 0.97

/* Fills rows (at most max, at least 1) with M1 from the cells of r (finished by
 * bench_stats_results_finish); a line whose cells are missing says so. Returns the number
 * of rows (1). */
size_t bench_targets_metrics_eval(const struct bench_results *r, struct bench_target_row *rows,
                                  size_t max);

#endif
