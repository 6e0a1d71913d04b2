/* durability.c: see durability.h.
 *
 * Group commit, per export (struct group_commit):
 *   write_gen     G: raised once per WRITE/TRIM/WRITE_ZEROES completion in the backing,
 *                 before that request's reply is queued or it waits for its sync
 *                 (mutate_done, fua_write_done).
 *   running       a sync is in flight; it was started when G was running_gen.
 *   current       requests waiting for the running sync (each needs a sync started at
 *                 G >= its need, and running_gen >= need held when it joined).
 *   next          requests that need a newer sync than the running one; they all share the
 *                 sync started when the running one completes (at the G of that moment,
 *                 which is >= every need in the list because G only grows).
 *   synced_gen    running_gen of the last successful sync: a FLUSH with need <= synced_gen
 *                 is already covered and is replied to at once.
 *
 * Invariant (checked by tests/durability/test_durability.c against the event log of the
 * fault-injecting backing): a request with need g completes successfully only after a
 * sync whose running_gen >= g completed successfully; running_gen is read when the sync is
 * decided, before it is submitted, so every write counted in it had completed before the
 * sync started. A failed sync fails every request waiting for it and, being sticky, every
 * request after it; no sync is started after a failure.
 *
 * Waiting requests are linked through op->ereq.next: while a request waits here it is not
 * submitted to any backing, so the backing-private fields are free. The sync itself uses
 * the export's own op (sync_op), never a client's.
 */
#include "server/durability.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

struct waitq {
  struct backing_op *head, *tail;
};

struct group_commit {
  struct export *export;
  pthread_mutex_t lock;
  _Atomic uint64_t write_gen;
  bool running;
  uint64_t running_gen;
  bool have_synced;
  uint64_t synced_gen;
  struct waitq current, next;
  struct backing_op sync_op;
  struct durability_stats stats; /* under lock, except write_gen */
};

/* The export's state (struct export's group_commit), made by durability_export_open. */
static struct group_commit *gc_of(struct export *e)
{
  assert(e->group_commit != NULL);
  return e->group_commit;
}

int durability_export_open(struct export *e)
{
  struct group_commit *gc = calloc(1, sizeof *gc);

  if (gc == NULL) {
    return -ENOMEM;
  }
  gc->export = e;
  pthread_mutex_init(&gc->lock, NULL);
  atomic_init(&gc->write_gen, 0);
  e->group_commit = gc;
  return 0;
}

void durability_export_close(struct export *e)
{
  struct group_commit *gc = e->group_commit;

  if (gc != NULL) {
    pthread_mutex_destroy(&gc->lock);
    free(gc);
    e->group_commit = NULL;
  }
}

void durability_get_stats(struct export *e, struct durability_stats *out)
{
  struct group_commit *gc = e->group_commit;

  memset(out, 0, sizeof *out);
  if (gc != NULL) {
    pthread_mutex_lock(&gc->lock);
    *out = gc->stats;
    out->write_gen = atomic_load(&gc->write_gen);
    pthread_mutex_unlock(&gc->lock);
  }
}

/* ---- wait queues ---- */

static struct backing_op *op_of_link(struct engine_req *link)
{
  return link == NULL ? NULL
                      : (struct backing_op *)((char *)link - offsetof(struct backing_op, ereq));
}

static void waitq_push(struct waitq *q, struct backing_op *op)
{
  op->ereq.next = NULL;
  if (q->tail != NULL) {
    q->tail->ereq.next = &op->ereq;
  } else {
    q->head = op;
  }
  q->tail = op;
}

static void waitq_append(struct waitq *q, struct waitq *more)
{
  if (more->head == NULL) {
    return;
  }
  if (q->tail != NULL) {
    q->tail->ereq.next = &more->head->ereq;
  } else {
    q->head = more->head;
  }
  q->tail = more->tail;
  more->head = more->tail = NULL;
}

/* Completes every request of q (taken out from under the lock) with result. */
static void waitq_complete(struct backing_op *op, int result)
{
  while (op != NULL) {
    struct backing_op *next = op_of_link(op->ereq.next);
    op->ereq.next = NULL;
    op->chain(op, result);
    op = next;
  }
}

/* ---- syncs ---- */

/* Marks the export's sync as failed (sticky); logs the first time. */
static void sync_failed_mark(struct export *e, int result)
{
  if (!atomic_exchange(&e->sync_failed, true)) {
    log_error("export '%s': sync failed (%s); this FLUSH and every later one fail with EIO "
              "until restart (the page cache may have dropped the unwritten data)",
              e->name, strerror(result < 0 ? -result : EIO));
  }
}

static void sync_finish(struct group_commit *gc, int result, bool synced);

static void sync_done(struct backing_op *sop, int result)
{
  sync_finish(sop->opaque, result, true);
}

/* Submits the export's sync. gc->running is set and running_gen read by the caller, under
 * the lock; this runs without it. */
static void sync_start(struct group_commit *gc)
{
  struct backing_op *sop = &gc->sync_op;
  int rc;

  memset(sop, 0, sizeof *sop);
  sop->type = BACKING_OP_FLUSH;
  sop->done = sync_done;
  sop->opaque = gc;
  /* This may run on an event loop's thread (server/loop.c): a sync never needs to wait in
   * submit; it goes to the backing's own engine (sop->engine NULL). */
  sop->nonblocking = true;
  rc = backing_submit(gc->export->backing, sop);
  if (rc < 0) {
    log_warn("export '%s': cannot submit a sync: %s", gc->export->name, strerror(-rc));
    sync_finish(gc, rc, false);
  }
}

/* The running sync ended: `synced` says whether the backing ran it (then a failure is
 * sticky), or it could not be submitted (nothing was lost: its waiters fail, later
 * requests may sync again). Completes its waiters and starts the next batch's sync. */
static void sync_finish(struct group_commit *gc, int result, bool synced)
{
  struct export *e = gc->export;
  struct backing_op *finished;
  bool start = false;

  if (result < 0 && synced) {
    sync_failed_mark(e, result);
  }
  pthread_mutex_lock(&gc->lock);
  if (result == 0) {
    gc->have_synced = true;
    if (gc->running_gen > gc->synced_gen) {
      gc->synced_gen = gc->running_gen;
    }
  } else {
    gc->stats.syncs_failed++;
  }
  if (atomic_load(&e->sync_failed)) {
    /* Sticky: the next batch fails too, without a sync. */
    waitq_append(&gc->current, &gc->next);
  }
  finished = gc->current.head;
  gc->current.head = gc->current.tail = NULL;
  if (gc->next.head != NULL) {
    gc->current = gc->next;
    gc->next.head = gc->next.tail = NULL;
    gc->running_gen = atomic_load(&gc->write_gen);
    gc->stats.syncs_started++;
    start = true;
  } else {
    gc->running = false;
  }
  pthread_mutex_unlock(&gc->lock);
  if (start) {
    sync_start(gc);
  }
  waitq_complete(finished, result == 0 ? 0 : -EIO);
}

/* op needs a successful sync started at write_gen >= need; joins or starts one. */
static void gc_join(struct group_commit *gc, struct backing_op *op, uint64_t need)
{
  struct export *e = gc->export;
  bool start = false;

  pthread_mutex_lock(&gc->lock);
  if (atomic_load(&e->sync_failed)) {
    pthread_mutex_unlock(&gc->lock);
    op->chain(op, -EIO);
    return;
  }
  if (gc->have_synced && need <= gc->synced_gen) {
    /* A sync that started after every write op covers had completed has completed. */
    gc->stats.flushes_elided++;
    pthread_mutex_unlock(&gc->lock);
    op->chain(op, 0);
    return;
  }
  gc->stats.flushes++;
  if (gc->running && gc->running_gen >= need) {
    gc->stats.flushes_shared++;
    waitq_push(&gc->current, op);
  } else if (gc->running) {
    if (gc->next.head != NULL) {
      gc->stats.flushes_shared++;
    }
    waitq_push(&gc->next, op);
  } else {
    gc->running = true;
    gc->running_gen = atomic_load(&gc->write_gen); /* >= need: G only grows */
    gc->stats.syncs_started++;
    waitq_push(&gc->current, op);
    start = true;
  }
  pthread_mutex_unlock(&gc->lock);
  if (start) {
    sync_start(gc);
  }
}

/* ---- requests ---- */

/* A WRITE/TRIM/WRITE_ZEROES without FUA completed in the backing. */
static void mutate_done(struct backing_op *op, int result)
{
  struct group_commit *gc = op->opaque;

  /* Counted even when it failed: a failed write may have landed in part. */
  atomic_fetch_add(&gc->write_gen, 1);
  op->chain(op, result);
}

/* A FUA write completed in the backing (without FUA): now it needs a sync that starts
 * after it. */
static void fua_write_done(struct backing_op *op, int result)
{
  struct group_commit *gc = op->opaque;
  uint64_t need = atomic_fetch_add(&gc->write_gen, 1) + 1;

  if (result < 0) {
    op->chain(op, result);
    return;
  }
  gc_join(gc, op, need);
}

int durability_submit(struct export *e, struct backing_op *op,
                      void (*done)(struct backing_op *op, int result))
{
  struct group_commit *gc;

  op->chain = done;
  if (op->type != BACKING_OP_WRITE && op->type != BACKING_OP_TRIM &&
      op->type != BACKING_OP_WRITE_ZEROES && op->type != BACKING_OP_FLUSH) {
    op->done = done; /* READ, BLOCK_STATUS, CACHE: nothing to make durable */
    return backing_submit(e->backing, op);
  }
  if (op->type == BACKING_OP_FLUSH && atomic_load(&e->sync_failed)) {
    done(op, -EIO);
    return 0;
  }
  if (op->type == BACKING_OP_FLUSH && e->sync == SYNC_NONE) {
    op->done = done; /* the backing acknowledges it without syncing */
    return backing_submit(e->backing, op);
  }
  gc = gc_of(e);
  op->opaque = gc;
  if (op->type == BACKING_OP_FLUSH) {
    gc_join(gc, op, atomic_load(&gc->write_gen));
    return 0;
  }
  if (e->sync == SYNC_NONE) {
    op->flags &= ~BACKING_FLAG_FUA;
  }
  if (op->flags & BACKING_FLAG_FUA) {
    /* FUA by group commit, for every backing (see durability.h: "FUA") */
    if (atomic_load(&e->sync_failed)) {
      done(op, -EIO); /* it could never be made durable */
      return 0;
    }
    op->flags &= ~BACKING_FLAG_FUA;
    op->done = fua_write_done;
    return backing_submit(e->backing, op);
  }
  op->done = mutate_done;
  return backing_submit(e->backing, op);
}
