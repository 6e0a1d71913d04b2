/* SPDX-License-Identifier: MIT */
/* bench_targets_asif.h: the ASIF targets A1-A2 of docs/performance.md ("ASIF"), judged on
 * the cells of a `diskgate bench --profile asif` run, like bench_targets_qcow2.h's Q1-Q4:
 *   A1  1M sequential reads QD4: diskgate-asif (a fully written ASIF image of the test
 *       file's bytes) at least 0.9x the MB/s of diskgate serving the same bytes as a raw
 *       file (diskgate-unix-direct-full)
 *   A2  4K random reads QD32: the same rows, at least 0.9x the IOPS
 * The host path's figure, when the run has it, is in each line's detail for scale.
 * Pure functions of the results; any thread, as long as the results are not being changed. */
#ifndef DISKGATE_BENCH_TARGETS_ASIF_H
#define DISKGATE_BENCH_TARGETS_ASIF_H

#include <stddef.h>

#include "bench/bench_targets.h"

/* The goal of A1 and A2: the ASIF row's figure over the raw row's, at least. */
#define BENCH_ASIF_GOAL 0.9

/* Fills rows (at most max, at least 2) with A1 and A2 from the cells of r (finished by
 * bench_stats_results_finish); a line whose cells are missing says so. Returns the number
 * of rows (2). */
size_t bench_targets_asif_eval(const struct bench_results *r, struct bench_target_row *rows,
                               size_t max);

#endif
