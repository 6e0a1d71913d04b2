/* SPDX-License-Identifier: MIT */
/* qcow2_submit.c: the qcow2 node's dispatch. A READ whose clusters are all mapped by cached
 * L2 tables to normal clusters (or to zeroes) and a WRITE whose clusters are all normal
 * with refcount 1 (COPIED) go straight to the image file as child ops, on the caller's
 * engine, with no worker and one allocation; everything else (a table to read, an
 * allocation, copy-on-write, compressed or backing data, TRIM, WRITE_ZEROES, FLUSH,
 * BLOCK_STATUS) runs on an engine worker (ENGINE_CALL) with synchronous child I/O. */
#include "backing/qcow2/qcow2_impl.h"
#include "backing/format_runs.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Runs (one per contiguous host range, or zero span) planned on the stack; a more
 * fragmented op plans into a heap array of one run per cluster or subcluster. */
#define FAST_RUNS_STACK 64

/* Releases the fast ops' count once their child ops are done. No lock here: this may run
 * on the engine thread that must also complete the I/O of a worker holding q->lock. */
static void fast_release(void *arg, uint32_t k)
{
  struct qcow2 *q = arg;

  atomic_fetch_sub(&q->fast_inflight, k);
}

enum fast_verdict { FAST_OK, FAST_SLOW, FAST_FULL };

/* Maps op through the cached tables into runs[0..cap). Returns FAST_OK, FAST_SLOW (the slow
 * path must run) or FAST_FULL (more than cap runs). Lock held. */
static enum fast_verdict fast_plan(struct qcow2 *q, const struct backing_op *op, bool write,
                                   struct format_run *runs, uint32_t cap, uint32_t *n)
{
  bool fua = (op->flags & BACKING_FLAG_FUA) != 0;
  uint64_t done = 0;

  *n = 0;
  if (write && (q->meta_corrupt || (fua && !q->file->geo.can_fua))) {
    return FAST_SLOW;
  }
  while (done < op->length) {
    struct qcow2_map m;
    uint64_t host = FORMAT_RUN_ZERO;
    if (qcow2_map_cached(q, op->offset + done, op->length - done, &m) < 0 ||
        m.cached_only_miss) {
      return FAST_SLOW;
    }
    if (m.kind == QCOW2_NORMAL && (!write || (m.copied && !(fua && m.l2_dirty)))) {
      host = m.host_offset;
    } else if (write || m.kind == QCOW2_COMPRESSED ||
               (m.kind == QCOW2_UNALLOC && q->backing_node != NULL)) {
      return FAST_SLOW;
    }
    if (!format_run_add(runs, cap, n, done, m.length, host)) {
      return FAST_FULL;
    }
    done += m.length;
  }
  return format_runs_fit(q->file, op, runs, *n) ? FAST_OK : FAST_SLOW;
}

/* Plans op into *runs: the stack array, or a heap one (*heap, to free) when op is more
 * fragmented. Returns false when the slow path must run. Lock held. */
static bool fast_plan_any(struct qcow2 *q, const struct backing_op *op, bool write,
                          struct format_run **runs, struct format_run **heap, uint32_t *n)
{
  enum fast_verdict v = fast_plan(q, op, write, *runs, FAST_RUNS_STACK, n);
  uint64_t cap = op->length / q->subcluster_size + 2;

  *heap = NULL;
  if (v != FAST_FULL) {
    return v == FAST_OK;
  }
  if (cap > UINT32_MAX || (*heap = malloc(cap * sizeof **heap)) == NULL) {
    return false;
  }
  *runs = *heap;
  return fast_plan(q, op, write, *runs, (uint32_t)cap, n) == FAST_OK;
}

/* Serves op on the fast path when it can. Returns true when op was taken (done is or will
 * be called), false when it must go to a worker. */
static bool fast_path(struct qcow2 *q, struct backing_op *op, bool write)
{
  struct format_run stack_runs[FAST_RUNS_STACK], *runs = stack_runs, *heap;
  uint32_t n, k = 0;
  int rc;

  if (!op->nonblocking) {
    qcow2_lock(q); /* maybe an engine worker (a chain's read): it lets the pool grow */
  } else if (pthread_mutex_trylock(&q->lock) != 0) {
    return false; /* a worker holds the lock for I/O: an event loop never waits on it */
  }
  if (!fast_plan_any(q, op, write, &runs, &heap, &n)) {
    pthread_mutex_unlock(&q->lock);
    free(heap);
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    k += runs[i].host != FORMAT_RUN_ZERO;
  }
  atomic_fetch_add(&q->fast_inflight, k);
  pthread_mutex_unlock(&q->lock);
  rc = format_runs_submit(q->file, op, runs, n, fast_release, q);
  free(heap);
  if (rc < 0) {
    atomic_fetch_sub(&q->fast_inflight, k);
    return false;
  }
  return true;
}

/* Runs op to completion on a worker. Returns its result. */
static int slow_run(struct qcow2 *q, struct backing_op *op)
{
  bool fua = (op->flags & BACKING_FLAG_FUA) != 0;
  bool refused = false;
  int rc;

  if (op->type == BACKING_OP_WRITE || op->type == BACKING_OP_TRIM ||
      op->type == BACKING_OP_WRITE_ZEROES) {
    qcow2_lock(q);
    refused = q->meta_corrupt;
    pthread_mutex_unlock(&q->lock);
  }
  if (refused) {
    return -EIO;
  }
  switch (op->type) {
  case BACKING_OP_READ:
    return qcow2_read_slow(q, op);
  case BACKING_OP_WRITE:
    rc = qcow2_write_slow(q, op);
    return rc == 0 && fua ? qcow2_flush(q) : rc;
  case BACKING_OP_TRIM:
    return qcow2_discard(q, op);
  case BACKING_OP_WRITE_ZEROES:
    rc = qcow2_write_zeroes(q, op);
    return rc == 0 && fua ? qcow2_flush(q) : rc;
  case BACKING_OP_FLUSH:
    return qcow2_flush(q);
  case BACKING_OP_BLOCK_STATUS:
    return qcow2_block_status(q, op);
  default:
    return -EINVAL;
  }
}

static ssize_t slow_call(void *arg)
{
  struct backing_op *op = arg;

  return slow_run((struct qcow2 *)op->owner, op);
}

/* Queues op on a worker (inline when the node has no engine: unit tests). */
static int slow_submit(struct qcow2 *q, struct backing_op *op)
{
  return format_call_submit(q->engine, op, slow_call);
}

int qcow2_submit(struct backing *b, struct backing_op *op)
{
  struct qcow2 *q = (struct qcow2 *)b;
  bool write = op->type == BACKING_OP_WRITE || op->type == BACKING_OP_TRIM ||
               op->type == BACKING_OP_WRITE_ZEROES;

  op->owner = b;
  if (write && !q->writable) {
    return -EPERM;
  }
  switch (op->type) {
  case BACKING_OP_READ:
  case BACKING_OP_WRITE:
  case BACKING_OP_TRIM:
  case BACKING_OP_WRITE_ZEROES:
  case BACKING_OP_CACHE:
    if (op->length == 0 || op->type == BACKING_OP_CACHE) {
      op->done(op, 0);
      return 0;
    }
    if ((op->type == BACKING_OP_READ || op->type == BACKING_OP_WRITE) &&
        fast_path(q, op, op->type == BACKING_OP_WRITE)) {
      return 0;
    }
    break;
  case BACKING_OP_FLUSH:
    if (!q->writable) {
      op->done(op, 0);
      return 0;
    }
    break;
  case BACKING_OP_BLOCK_STATUS:
    if (op->length == 0 || op->extent_max == 0 || op->buf == NULL) {
      return -EINVAL;
    }
    break;
  default:
    return -EINVAL;
  }
  return slow_submit(q, op);
}
