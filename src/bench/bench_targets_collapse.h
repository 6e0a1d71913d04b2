/* SPDX-License-Identifier: MIT */
/* bench_targets_collapse.h: the target C1 of docs/performance.md ("Many connections into one
 * file"), judged on the cells of a `diskgate bench --profile collapse` run:
 *   C1  4K random writes QD32 into one file on the page cache (diskgate-unix-writeback-full):
 *       from 32 connections (randwrite-4k-32c) at least the IOPS of 4 (randwrite-4k-4c)
 * The 16-connection figure, when the run has it, is in the line's detail.
 * Pure functions of the results; any thread, as long as the results are not being changed. */
#ifndef DISKGATE_BENCH_TARGETS_COLLAPSE_H
#define DISKGATE_BENCH_TARGETS_COLLAPSE_H

#include <stddef.h>

#include "bench/bench_targets.h"

/* The goal of C1: the 32-connection IOPS over the 4-connection IOPS, at least. */
#define BENCH_COLLAPSE_GOAL 1.0

/* Fills rows (at most max, at least 1) with C1 from the cells of r (finished by
 * bench_stats_results_finish); a line whose cells are missing says so. Returns the number
 * of rows (1). */
size_t bench_targets_collapse_eval(const struct bench_results *r, struct bench_target_row *rows,
                                   size_t max);

#endif
