/* SPDX-License-Identifier: MIT */
/* bench_targets_qcow2.h: the qcow2 targets Q1-Q4 of docs/performance.md ("qcow2"), judged
 * on the cells of a `diskgate bench --profile qcow2` run, like bench_targets.h's T1-T6:
 *   Q1  4K random reads and writes QD32 on a fully allocated image: diskgate-qcow2 at least
 *       1.5x qemu-nbd-qcow2's IOPS (a copy of the same image)
 *   Q2  4K random writes QD32 on a fresh image (allocating): diskgate-qcow2-fresh at least
 *       1.0x qemu-nbd-qcow2-fresh
 *   Q3  1M sequential reads QD4: diskgate-qcow2 at least 0.9x diskgate serving the same data
 *       as a raw file (diskgate-unix-direct-full)
 *   Q4  16 connections x QD64 random I/O on a 1 TiB image: diskgate-qcow2-1t's VmHWM at most
 *       64 MiB (qemu-nbd-qcow2-1t's for scale)
 * Pure functions of the results; any thread, as long as the results are not being changed. */
#ifndef DISKGATE_BENCH_TARGETS_QCOW2_H
#define DISKGATE_BENCH_TARGETS_QCOW2_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench_targets.h"

/* Returns true when some qcow2 target reads the cell of configuration `config` and workload
 * `workload`: the qcow2 profile runs only those. */
bool bench_targets_qcow2_uses(const char *config, const char *workload);

/* A ratio line: d's figure (IOPS, or MB/s when mbps) at least goal times the reference's
 * (ref), named ref_name in the detail. target is a static "Q1".."Q3"; what names the job. */
void bench_targets_qcow2_ratio(const char *target, const char *what, const struct bench_figures *d,
                               const struct bench_figures *ref, const char *ref_name, bool mbps,
                               double goal, struct bench_target_row *row);

/* Q4's line: diskgate's VmHWM (d) at most 64 MiB; qemu-nbd's (q, may be !ok) in the
 * detail. */
void bench_targets_qcow2_memory(const struct bench_figures *d, const struct bench_figures *q,
                                struct bench_target_row *row);

/* Fills rows (at most max, at least 5) with Q1-Q4's lines from the cells of r (finished by
 * bench_stats_results_finish); a line whose cells are missing says so. Returns the number of
 * rows (5). */
size_t bench_targets_qcow2_eval(const struct bench_results *r, struct bench_target_row *rows,
                                size_t max);

#endif
