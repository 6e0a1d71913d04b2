/* SPDX-License-Identifier: MIT */
/* bench_targets_gateway.h: the gateway targets G1-G2 of docs/performance.md ("A gateway of
 * 100 exports"), judged on the cells of a `diskgate bench --profile gateway` run:
 *   G1  4K random reads QD8, one connection to each of 100 exports
 *       (gateway-randread-4k-1c): one diskgate serving them all (diskgate-gateway) at least
 *       2x the IOPS in all of 100 qemu-nbd, one per export (qemu-nbd-gateway); and the
 *       diskgate's resident set at most 1/10 of the 100 qemu-nbd's summed (each the largest
 *       VmRSS sampled while the load ran)
 *   G2  4K random reads QD4, five connections to each of the one diskgate's 100 exports
 *       (gateway-randread-4k-5c): no export starves, the least IOPS of one export at least
 *       0.5x the median export's
 * Each figure is the median over the rounds of that figure (G2: of each round's least and
 * median export). Pure functions of the results; any thread, as long as the results are
 * not being changed. */
#ifndef DISKGATE_BENCH_TARGETS_GATEWAY_H
#define DISKGATE_BENCH_TARGETS_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench_targets.h"

/* G1's goals: diskgate's IOPS over qemu-nbd's at least; its resident set over theirs at
 * most. */
#define BENCH_GATEWAY_IOPS_GOAL 2.0
#define BENCH_GATEWAY_RSS_GOAL 0.1

/* G2's goal: the least export's IOPS over the median export's, at least. */
#define BENCH_GATEWAY_FAIR_GOAL 0.5

/* Returns true when a gateway target reads the cell of configuration `config` and workload
 * `workload`: the gateway profile runs only those (G2 measures the diskgate alone). */
bool bench_targets_gateway_uses(const char *config, const char *workload);

/* Fills rows (at most max, at least 3) with G1's two lines (IOPS, memory) and G2's from the
 * cells of r (finished by bench_stats_results_finish); a line whose cells are missing says
 * so. Returns the number of rows (3). */
size_t bench_targets_gateway_eval(const struct bench_results *r, struct bench_target_row *rows,
                                  size_t max);

#endif
