/* SPDX-License-Identifier: MIT */
/* format_runs.h: what a format node (qcow2, asif) shares to serve an op without a worker
 * and to send one to a worker. An op mapped through the node's cached metadata becomes
 * runs: contiguous pieces of the op's buffer, each at one host offset of the node's file
 * or reading as zeroes; the runs go to the file as child ops on the caller's engine, with
 * one allocation, and the op completes when the last child does. An op that cannot be
 * mapped so runs on an engine worker (ENGINE_CALL) instead.
 * Units: bytes. Threads: the caller's (an event loop with op->nonblocking, or a worker). */
#ifndef DISKGATE_BACKING_FORMAT_RUNS_H
#define DISKGATE_BACKING_FORMAT_RUNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backing/backing.h"

/* A run's host offset when it reads as zeroes. */
#define FORMAT_RUN_ZERO UINT64_MAX

struct format_run {
  uint64_t buf_off; /* bytes into op->buf */
  uint64_t len;
  uint64_t host;    /* offset in the node's file, or FORMAT_RUN_ZERO */
};

/* Appends a run of `len` bytes at buf_off to runs[0..*n), merged with the last one when
 * the host bytes continue it (two zero runs always merge). Returns false when a new run is
 * needed and *n == cap. */
bool format_run_add(struct format_run *runs, uint32_t cap, uint32_t *n, uint64_t buf_off,
                    uint64_t len, uint64_t host);

/* True when every host run of op suits `file`: offset, length and buffer address aligned
 * to its direct_alignment, and the range inside its size. */
bool format_runs_fit(const struct backing *file, const struct backing_op *op,
                     const struct format_run *runs, uint32_t n);

/* Serves op through runs[0..n) (which cover op in order): zero runs are zero-filled (READ
 * only: a WRITE has none), host runs become child ops of op->type on `file`, submitted on
 * op->engine with op's nonblocking and FUA flags (and op's fixed_buf when there is one
 * child). When the last child is done, release(arg, k) runs (k: the host runs; release may
 * be NULL) and then op->done with the first child error or 0; with no host run, op->done
 * runs before this returns. Returns 0 (op taken) or -ENOMEM (nothing done: the caller
 * serves op another way and undoes what it counted). */
int format_runs_submit(struct backing *file, struct backing_op *op,
                       const struct format_run *runs, uint32_t n,
                       void (*release)(void *arg, uint32_t k), void *arg);

/* Runs call(op) on a worker of `engine` and completes op (op->done) with its result; with
 * `engine` NULL (unit tests), runs it here. call returns 0 or -errno. Returns 0, or
 * engine_submit's -errno (op not taken). */
int format_call_submit(struct engine *engine, struct backing_op *op, ssize_t (*call)(void *op));

#endif
