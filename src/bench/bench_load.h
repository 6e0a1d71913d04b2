/* SPDX-License-Identifier: MIT */
/* bench_load.h: reading a bench.json back, to render its reports again (`--render`).
 * Main thread only: the loaded strings live in this module's static storage until the next
 * load. */
#ifndef DISKGATE_BENCH_LOAD_H
#define DISKGATE_BENCH_LOAD_H

#include "bench/bench_types.h"

/* Reads the JSON report at `path` (written by bench_report_json_write) into *r: options,
 * machine, rows and columns (by name; unknown names are an error), and every run of every
 * cell; then recomputes the medians and percentages. r->cells is calloc'ed (free() it).
 * Returns 0, -errno when the file cannot be read, -EINVAL when it is not such a report (a
 * line on stderr says what is wrong). */
int bench_load_json(const char *path, struct bench_results *r);

#endif
