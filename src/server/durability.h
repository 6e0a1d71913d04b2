/* SPDX-License-Identifier: MIT */
/* durability.h: the export's durability policy for writes, FUA and FLUSH, with group commit.
 *
 * Rules (doc/proto.md "Ordering of messages and writes"; spec rules 26-27):
 *   - FLUSH is replied to only after a sync that started after every write already replied
 *     to had completed; under --sync none it succeeds without syncing.
 *   - A FUA write (WRITE or WRITE_ZEROES with NBD_CMD_FLAG_FUA) is replied to only once its
 *     own data is durable: after a sync that started after the write completed.
 *   - A failed sync is sticky: that FLUSH and every later one on the export fail with EIO
 *     (the page cache may have dropped the dirty data), until restart. Logged once.
 *
 * Group commit (--sync full|fsync): FLUSHes and FUA writes of an export, from any
 * connection, share one sync of the backing when no write completed between them. Up to
 * geo.sync_channels syncs per export run at once (4 for a writable file backing, one per
 * open file description; 1 for RBD): a request that needs a newer sync than every running
 * one starts it at once on a free channel, instead of waiting for the running sync and then
 * its own; when every channel runs, such requests wait for the first to free and all share
 * the sync started there. The invariant, stated in terms of the export's write generation
 * G (the number of WRITE/TRIM/WRITE_ZEROES that completed in the backing):
 *
 *     a FLUSH that arrives when G = g (a FUA write whose own completion made G = g) is
 *     replied to only after a successful sync that was started when G >= g, so after every
 *     write it covers had completed in the backing.
 *
 * A write's reply is sent after its completion raised G, so every write a client saw
 * acknowledged before it sent FLUSH is covered. A FLUSH that arrives when no write completed
 * since the start of the last successful sync is replied to at once: that sync already
 * satisfies the invariant (the first FLUSH after start-up always syncs, which also covers
 * data a previous server process left in the page cache).
 *
 * FUA: the write goes to the backing without FUA and then waits for a group sync, even
 * where the backing has native FUA (geo.can_fua: RWF_DSYNC in the file backing, write +
 * flush in rbd). Concurrent FUA writes then share syncs instead of each paying for one:
 * 16 clients' 4 KiB FUA writes on this project's test VM ran at ~6000/s this way against
 * ~260/s with RWF_DSYNC under --cache writeback, and at the same rate under --cache direct
 * (docs/durability.md). A sync covers the whole file, a superset of what FUA asks for.
 *
 * Write-through (--cache writethrough|directsync, cache_mode_writes_through): every WRITE,
 * TRIM and WRITE_ZEROES is a FUA write, whatever its flags: replied to only after a sync
 * that started after it completed, shared with the FLUSHes and other writes of every
 * connection that a sync of that moment covers. Under --sync none nothing syncs, so
 * write-through adds nothing there (serve.c says so at start-up).
 *
 * Threads: any thread. `done` runs on a backing or engine thread, or on the calling thread
 * before durability_submit returns. */
#ifndef DISKGATE_SERVER_DURABILITY_H
#define DISKGATE_SERVER_DURABILITY_H

#include <stdint.h>

#include "backing/backing.h"
#include "server/export.h"

/* Submits op (READ, WRITE, TRIM, WRITE_ZEROES or FLUSH) to the export's backing with the
 * policy above. `done` is called exactly once with 0 or -errno when this returns 0;
 * on a -errno return `done` is not called. op->done, op->chain and op->opaque are used
 * internally until `done` runs. */
int durability_submit(struct export *e, struct backing_op *op,
                      void (*done)(struct backing_op *op, int result));

/* Counters of an export's group commit (for tests and logs). */
struct durability_stats {
  uint64_t write_gen;      /* writes completed in the backing */
  uint64_t syncs_started;  /* syncs submitted to the backing */
  uint64_t syncs_failed;
  uint64_t flushes;        /* FLUSH and FUA requests that needed a sync */
  uint64_t flushes_shared; /* ... of which joined a sync another request had started */
  uint64_t flushes_elided; /* FLUSHes replied to at once: nothing completed since a sync */
  uint64_t syncs_running_max; /* the most syncs that ran at once */
};
void durability_get_stats(struct export *e, struct durability_stats *out);

/* Makes the export's group-commit state (e->group_commit). Returns 0 or -ENOMEM.
 * Main thread, by export_create (server/export.c). */
int durability_export_open(struct export *e);

/* Waits until no sync of the export runs (one may run with nobody waiting for it: see
 * durability.c), then frees the state; a no-op when there is none. Call once every request
 * of the export is done, before the backing is closed (export_destroy does). May block as
 * long as the backing's sync takes. */
void durability_export_close(struct export *e);

#endif
