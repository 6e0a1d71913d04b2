/* SPDX-License-Identifier: MIT */
/* bench_profiles.h: the profiles (quick, seeds, sync, rbd, peers, scaling, collapse, qcow2,
 * asif, metrics, gateway, all) and the selection of rows and columns from --configs /
 * --workloads. Main thread only. */
#ifndef DISKGATE_BENCH_PROFILES_H
#define DISKGATE_BENCH_PROFILES_H

#include <stdio.h>

#include "bench/bench_types.h"

/* Sets opts->profile to the profile called `name` and fills the defaults the command line did
 * not set (runs, runtime, size). Returns 0, or -EINVAL for an unknown profile. */
int bench_profiles_apply(const char *name, struct bench_opts *opts);

/* Returns the profile's default configuration list (comma-separated patterns). */
const char *bench_profiles_configs(const char *profile);

/* Returns the profile's default workload list (comma-separated patterns). */
const char *bench_profiles_workloads(const char *profile);

/* Fills r->configs and r->workloads (in table order) from opts->configs / opts->workloads, or
 * the profile's lists when those are NULL. Configurations that need root are dropped with a
 * note on `err` when not running as root. Returns 0; -EINVAL after printing one line on
 * `err` when a name or pattern matches nothing; -ENOENT when no cell is left to run. */
int bench_profiles_select(const struct bench_opts *opts, struct bench_results *r, FILE *err);

#endif
