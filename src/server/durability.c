/* SPDX-License-Identifier: MIT */
/* durability.c: see durability.h.
 *
 * Group commit, per export (struct group_commit):
 *   write_gen     G: raised once per WRITE/TRIM/WRITE_ZEROES completion in the backing,
 *                 before that request's reply is queued or it waits for its sync
 *                 (mutate_done, fua_write_done).
 *   slot[i]       up to geo.sync_channels syncs in flight at once, slot i on sync channel i.
 *                 A running slot's sync was started
 *                 when G was slot.gen; its `waiters` each need a sync started at G >= their
 *                 need, and slot.gen >= need held when they joined.
 *   next          requests that need a newer sync than every running one while every slot
 *                 runs; they all share the sync started in the first slot that frees (at
 *                 the G of that moment, >= every need in the list because G only grows).
 *   synced_gen    the largest gen of a successful sync: a FLUSH with need <= synced_gen is
 *                 already covered and is replied to at once; when a sync completes, the
 *                 waiters of every other running slot with gen <= synced_gen are covered
 *                 too and are completed with it (a later sync may finish first).
 *
 * Invariant (checked by tests/durability/dur_harness.c, harness_check_invariant, in the
 * durability-group-commit and durability-crash-points tests, against the event log of the
 * fault-injecting backing): a request with need g completes successfully only after a
 * sync whose gen >= g completed successfully; gen is read when the sync is decided, before
 * it is submitted, so every write counted in it had completed before the sync started.
 * Each sync makes durable what completed before it started, whatever else runs (POSIX
 * fsync), so overlapping syncs keep it. A failed sync fails every request waiting for any
 * slot and, being sticky, every request after it; no sync is started after a failure.
 *
 * Why one channel per slot (backing_op.sync_channel): Linux reports a writeback error to
 * each open file description once (errseq). Two syncs on one description at once could
 * let the first consume an error and the second return 0 for the lost data; the file
 * backing gives every channel its own description, so each sync sees every error since the
 * previous sync on its channel, and channels never sync concurrently with themselves.
 *
 * Waiting requests are linked through op->ereq.next: while a request waits here it is not
 * submitted to any backing, so the backing-private fields are free. A sync uses its
 * slot's own op (sync_op), never a client's.
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

/* One sync channel (its index in gc->slot): a sync in flight (running), started when G
 * was `gen`. */
struct gc_slot {
  struct group_commit *gc;
  bool running;
  uint64_t gen;
  struct waitq waiters;
  struct backing_op sync_op;
  uint64_t started_ns; /* metrics_now_ns when its sync was submitted */
};

struct group_commit {
  struct export *export;
  pthread_mutex_t lock;
  _Atomic uint64_t write_gen;
  pthread_cond_t idle; /* signalled when no slot runs any more */
  struct gc_slot slot[BACKING_SYNC_CHANNELS];
  bool have_synced;
  uint64_t synced_gen;
  struct waitq next;
  struct durability_stats stats; /* under lock, except write_gen */
};

/* The export's state (struct export's group_commit), made by durability_export_open. */
static struct group_commit *gc_of(struct export *e)
{
  assert(e->group_commit != NULL);
  return e->group_commit;
}

/* How many slots run a sync. Under gc->lock. */
static unsigned slots_running(const struct group_commit *gc)
{
  unsigned n = 0;

  for (unsigned i = 0; i < BACKING_SYNC_CHANNELS; i++) {
    n += gc->slot[i].running;
  }
  return n;
}

int durability_export_open(struct export *e)
{
  struct group_commit *gc = calloc(1, sizeof *gc);

  if (gc == NULL) {
    return -ENOMEM;
  }
  gc->export = e;
  pthread_mutex_init(&gc->lock, NULL);
  pthread_cond_init(&gc->idle, NULL);
  atomic_init(&gc->write_gen, 0);
  for (unsigned i = 0; i < BACKING_SYNC_CHANNELS; i++) {
    gc->slot[i].gc = gc;
  }
  e->group_commit = gc;
  return 0;
}

void durability_export_close(struct export *e)
{
  struct group_commit *gc = e->group_commit;

  if (gc != NULL) {
    /* A sync may still run with nobody waiting for it: a newer one answered its waiters,
     * or another channel failed. No connection holds it, so wait for it here, before the
     * backing and this state go (its completion touches both). */
    pthread_mutex_lock(&gc->lock);
    while (slots_running(gc) > 0) {
      pthread_cond_wait(&gc->idle, &gc->lock);
    }
    assert(gc->next.head == NULL);
    pthread_mutex_unlock(&gc->lock);
    pthread_cond_destroy(&gc->idle);
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

/* Completes every request of the list starting at op (taken out from under the lock). */
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
              e->log_name, strerror(result < 0 ? -result : EIO));
  }
}

static void sync_finish(struct gc_slot *slot, int result, bool synced);

static void sync_done(struct backing_op *sop, int result)
{
  sync_finish(sop->opaque, result, true);
}

/* How many slots the export's backing lets run at once (geo.sync_channels), 1.. */
static unsigned slots_of(const struct group_commit *gc)
{
  assert(gc->export->backing != NULL); /* requests come only after export_attach */
  uint32_t n = gc->export->backing->geo.sync_channels;

  return n < 1 ? 1 : n > BACKING_SYNC_CHANNELS ? BACKING_SYNC_CHANNELS : n;
}

/* Claims a free slot for a sync at the current G and counts it; NULL when every slot
 * runs. Under gc->lock. */
static struct gc_slot *slot_claim(struct group_commit *gc)
{
  unsigned n = slots_of(gc);

  for (unsigned i = 0; i < n; i++) {
    struct gc_slot *slot = &gc->slot[i];
    if (!slot->running) {
      unsigned running;
      assert(slot->waiters.head == NULL);
      slot->running = true;
      slot->gen = atomic_load(&gc->write_gen);
      gc->stats.syncs_started++;
      running = slots_running(gc);
      if (gc->stats.syncs_running_max < running) {
        gc->stats.syncs_running_max = running;
      }
      return slot;
    }
  }
  return NULL;
}

/* Submits the slot's sync. The slot was claimed under the lock; this runs without it. */
static void sync_start(struct gc_slot *slot)
{
  struct group_commit *gc = slot->gc;
  struct backing_op *sop = &slot->sync_op;
  int rc;

  memset(sop, 0, sizeof *sop);
  sop->type = BACKING_OP_FLUSH;
  sop->sync_channel = (uint32_t)(slot - gc->slot);
  sop->done = sync_done;
  sop->opaque = slot;
  /* This may run on an event loop's thread (io/loop.c): a sync never needs to wait in
   * submit; it goes to the backing's own engine (sop->engine NULL). */
  sop->nonblocking = true;
  slot->started_ns = metrics_now_ns();
  rc = backing_submit(gc->export->backing, sop);
  if (rc < 0) {
    log_warn("export '%s': cannot submit a sync: %s", gc->export->log_name, strerror(-rc));
    sync_finish(slot, rc, false);
  }
}

/* The slot's sync ended: `synced` says whether the backing ran it (then a failure is
 * sticky), or it could not be submitted (nothing was lost: its waiters fail, later
 * requests may sync again). Completes its waiters, and those of slots it covers, and
 * starts the waiting batch's sync in the freed slot. */
static void sync_finish(struct gc_slot *slot, int result, bool synced)
{
  struct group_commit *gc = slot->gc;
  struct export *e = gc->export;
  struct waitq finished = {NULL, NULL};
  struct gc_slot *start = NULL;
  int answer;

  if (result < 0 && synced) {
    sync_failed_mark(e, result);
  }
  pthread_mutex_lock(&gc->lock);
  assert(slot->running);
  slot->running = false;
  if (synced) { /* one writer: under gc->lock */
    metrics_hist_observe(&e->metrics.sync, metrics_now_ns() - slot->started_ns);
  }
  waitq_append(&finished, &slot->waiters);
  if (result == 0) {
    if (!gc->have_synced || slot->gen > gc->synced_gen) {
      gc->synced_gen = slot->gen;
    }
    gc->have_synced = true;
  } else {
    gc->stats.syncs_failed++;
  }
  for (unsigned i = 0; i < BACKING_SYNC_CHANNELS; i++) {
    struct gc_slot *other = &gc->slot[i];
    /* Sticky failure: everyone waiting fails now. Success: an older sync still running is
     * covered by this newer one. */
    if (other->running && (atomic_load(&e->sync_failed) ||
                           (result == 0 && other->gen <= gc->synced_gen))) {
      waitq_append(&finished, &other->waiters);
    }
  }
  if (atomic_load(&e->sync_failed)) {
    waitq_append(&finished, &gc->next); /* no sync starts after a failure */
  } else if (gc->next.head != NULL) {
    start = slot_claim(gc);
    assert(start == slot);
    start->waiters = gc->next;
    gc->next.head = gc->next.tail = NULL;
  }
  /* Only a successful sync, with no failure marked, acknowledges. */
  answer = result == 0 && !atomic_load(&e->sync_failed) ? 0 : -EIO;
  if (slots_running(gc) == 0) {
    /* durability_export_close may free gc and e once the lock is dropped: below, only the
     * waiters (requests of live connections) are touched, and a started sync. */
    pthread_cond_broadcast(&gc->idle);
  }
  pthread_mutex_unlock(&gc->lock);
  if (start != NULL) {
    sync_start(start); /* running > 0 again: the state stays */
  }
  waitq_complete(finished.head, answer);
}

/* op needs a successful sync started at write_gen >= need; joins or starts one. */
static void gc_join(struct group_commit *gc, struct backing_op *op, uint64_t need)
{
  struct export *e = gc->export;
  struct gc_slot *join = NULL, *start = NULL;

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
  /* The oldest running sync that covers op: it is likely to finish first. */
  for (unsigned i = 0; i < BACKING_SYNC_CHANNELS; i++) {
    struct gc_slot *slot = &gc->slot[i];
    if (slot->running && slot->gen >= need && (join == NULL || slot->gen < join->gen)) {
      join = slot;
    }
  }
  if (join != NULL) {
    gc->stats.flushes_shared++;
    waitq_push(&join->waiters, op);
  } else if ((start = slot_claim(gc)) != NULL) {
    waitq_push(&start->waiters, op); /* start->gen >= need: G only grows */
  } else {
    if (gc->next.head != NULL) {
      gc->stats.flushes_shared++;
    }
    waitq_push(&gc->next, op);
  }
  pthread_mutex_unlock(&gc->lock);
  if (start != NULL) {
    sync_start(start);
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
  } else if (cache_mode_writes_through(e->backing->opts.cache)) {
    op->flags |= BACKING_FLAG_FUA; /* write-through: every write is a FUA write */
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
