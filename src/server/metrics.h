/* SPDX-License-Identifier: MIT */
/* metrics.h: per-export request counters and latency histograms for --metrics (docs/metrics.md).
 * Storage: each connection counts in its own struct metrics_counts (conn.metrics), written
 * by one thread only (the thread that sends its replies: the writer thread, or its event
 * loop), with relaxed atomic loads and stores (no lock, no read-modify-write, no cache line
 * shared with another connection). A closing connection's counts are folded into its
 * export's (export.metrics) under server->lock; a scrape, under the same lock, adds the
 * export's folded counts and those of its live connections, so that totals never go
 * backwards and an export's counts live and die with it. Syncs (server/durability.c) are
 * timed per export under the group commit's lock. */
#ifndef DISKGATE_SERVER_METRICS_H
#define DISKGATE_SERVER_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct server;

/* The requests counted, as diskgate_*{op="..."} */
enum metrics_op {
  METRICS_OP_READ,
  METRICS_OP_WRITE,
  METRICS_OP_FLUSH,
  METRICS_OP_TRIM,
  METRICS_OP_ZERO,
  METRICS_OP_BLOCK_STATUS,
  METRICS_OPS
};

/* Histogram upper bounds (le): 10 us to 10 s in 1-2.5-5 steps, then +Inf */
#define METRICS_BUCKETS 19u

struct metrics_hist {
  _Atomic uint64_t bucket[METRICS_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
  _Atomic uint64_t sum_ns;
};

struct metrics_op_counts {
  _Atomic uint64_t requests, bytes, errors;
  struct metrics_hist duration;
};

/* One connection's counts (or an export's folded ones). */
struct metrics_counts {
  struct metrics_op_counts op[METRICS_OPS];
};

/* An export's share: what its closed connections counted (under server->lock) and its
 * syncs (under its group commit's lock). */
struct metrics_export {
  struct metrics_counts closed;
  struct metrics_hist sync;
};

/* CLOCK_MONOTONIC in nanoseconds. Any thread. */
uint64_t metrics_now_ns(void);

/* The op a request of NBD command `type` counts as (doc/proto.md "Request types"), or
 * METRICS_OPS for those not counted (CACHE, unknown). */
enum metrics_op metrics_op_of(uint16_t type);

/* Counts one request answered: `bytes` its length, `error` its NBD error (0: success),
 * `ns` its time from being read to its reply being sent. Only the thread that owns
 * `counts` (single writer: relaxed loads and stores, no read-modify-write). */
void metrics_count(struct metrics_counts *counts, enum metrics_op op, uint64_t bytes,
                   bool error, uint64_t ns);

/* Adds one observation of `ns` nanoseconds to h. One writer at a time (the caller's lock). */
void metrics_hist_observe(struct metrics_hist *h, uint64_t ns);

/* Adds `from` (a closed connection's counts) into `into`. Under server->lock, after the
 * thread counting in `from` is done. */
void metrics_counts_fold(struct metrics_counts *into, const struct metrics_counts *from);

/* Renders the server's metrics in the Prometheus text exposition format 0.0.4: HELP and
 * TYPE lines, the per-export families (docs/metrics.md) and the process_* ones. Returns a
 * malloc'ed NUL-terminated text (its length in *len), or NULL when out of memory.
 * Any thread but the hot path's (it takes server->lock briefly): the HTTP thread. */
char *metrics_render(struct server *s, size_t *len);

/* Fills `out` (a cJSON object) with one member per export, named by the export, holding
 * the same numbers as metrics_render: {"connections": N, "sync": {count, sum_seconds},
 * "ops": {"read": {"requests", "bytes", "errors", "duration": {"count", "sum_seconds",
 * "buckets": [[le_seconds, cumulative], ...]}}, ...}}. For `diskgate ctl stats`.
 * Returns 0, or -ENOMEM (out may then hold part of it). Any thread but the hot path's. */
int metrics_stats_json(struct server *s, struct cJSON *out);

#endif
