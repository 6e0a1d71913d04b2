/* SPDX-License-Identifier: MIT */
/* bench_run.h: the lab's main loop: every configuration, workload and run, with progress on
 * stderr. Main thread only. */
#ifndef DISKGATE_BENCH_RUN_H
#define DISKGATE_BENCH_RUN_H

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* Marks the cells whose workload does not apply to their configuration (state NA, with a
 * note); the others become PENDING. */
void bench_run_plan(struct bench_results *r);

/* Runs every pending cell opts->runs times, in rounds (round 1 of every cell, then round 2...,
 * so slow drifts of a noisy machine spread over all rows), starting and stopping each
 * configuration's server, loop device or guest around its cells. Progress goes to stderr.
 * Returns 0 when every run succeeded, -EIO when some failed (the cells say which), -EINTR when
 * SIGINT or SIGTERM stopped the lab early. */
int bench_run_all(struct bench_env *env, struct bench_results *r);

#endif
