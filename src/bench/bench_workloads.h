/* SPDX-License-Identifier: MIT */
/* bench_workloads.h: the workload table (the table's columns). Static data, any thread. */
#ifndef DISKGATE_BENCH_WORKLOADS_H
#define DISKGATE_BENCH_WORKLOADS_H

#include <stddef.h>

#include "bench/bench_types.h"

/* Returns the number of known workloads and sets *out to the static table. */
size_t bench_workloads_all(const struct bench_workload **out);

/* Returns the workload called `name`, or NULL. */
const struct bench_workload *bench_workloads_find(const char *name);

/* Returns the unit's label as printed after a value ("IOPS", "MB/s", "MiB/s"). */
const char *bench_workloads_unit_label(enum bench_unit unit);

#endif
