/* SPDX-License-Identifier: MIT */
/* bench_report_targets.h: the targets table (bench_targets.h) in bench.md and bench.json.
 * Pure functions of a bench_results; any thread, as long as the results are not being
 * changed. */
#ifndef DISKGATE_BENCH_REPORT_TARGETS_H
#define DISKGATE_BENCH_REPORT_TARGETS_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/bench_types.h"

/* Returns true when the run's report carries the targets table: the peers, qcow2, asif,
 * collapse, metrics or gateway profile, not an A/B. */
bool bench_report_targets_wanted(const struct bench_results *r);

/* Writes the Markdown report (bench_report_md_write), then, for a run of a profile with
 * targets (bench_report_targets_wanted), the targets table: target, what, value, limit, result, detail. Returns 0 or -EIO on a write error. */
int bench_report_targets_md_write(FILE *f, const struct bench_results *r);

/* Adds the "targets" array (one object per line of the table) to the JSON report's root
 * object (a cJSON *, passed as void * so that callers need not include cJSON), for a run of
 * a profile with targets (bench_report_targets_wanted); nothing otherwise. */
void bench_report_targets_json_add(void *root, const struct bench_results *r);

#endif
