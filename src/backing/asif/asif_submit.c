/* SPDX-License-Identifier: MIT */
/* asif_submit.c: the ASIF node's dispatch. A READ whose table groups and chunk bitmaps are
 * all cached goes straight to the image file as child ops on the caller's engine, with no
 * worker and one allocation (the zero runs are filled in place); any other READ, and
 * BLOCK_STATUS, runs on an engine worker (ENGINE_CALL) with synchronous child I/O. The node
 * never writes: WRITE, TRIM and WRITE_ZEROES are refused, FLUSH and CACHE succeed. */
#include "backing/asif/asif_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Runs planned on the stack; a more fragmented READ goes to a worker. */
#define FAST_RUNS 64
#define WHY_MAX 192u

struct fast_run {
  uint64_t buf_off; /* bytes into op->buf */
  uint64_t len;
  uint64_t host;    /* host offset; UINT64_MAX: reads as zeroes */
};

/* One fast-path READ: its child ops on the image file and their joint result. */
struct fast_ctx {
  struct backing_op *parent;
  atomic_uint pending; /* child ops not yet done */
  atomic_int result;   /* the first error, or 0 */
  struct backing_op child[];
};

static void fast_child_done(struct backing_op *c, int result)
{
  struct fast_ctx *ctx = c->opaque;

  if (result < 0) {
    int expected = 0;
    atomic_compare_exchange_strong(&ctx->result, &expected, result);
  }
  if (atomic_fetch_sub(&ctx->pending, 1) == 1) {
    struct backing_op *op = ctx->parent;
    int rc = atomic_load(&ctx->result);
    free(ctx);
    op->done(op, rc);
  }
}

/* Appends a run, merging it with the last when the bytes continue. False when full. */
static bool fast_run_add(struct fast_run *runs, uint32_t *n, uint64_t buf_off,
                         const struct asif_seg *seg)
{
  uint64_t host = seg->data ? seg->host : UINT64_MAX;

  if (*n > 0) {
    struct fast_run *last = &runs[*n - 1];
    if ((host == UINT64_MAX && last->host == UINT64_MAX) ||
        (host != UINT64_MAX && last->host != UINT64_MAX && last->host + last->len == host)) {
      last->len += seg->len;
      return true;
    }
  }
  if (*n >= FAST_RUNS) {
    return false;
  }
  runs[(*n)++] = (struct fast_run){.buf_off = buf_off, .len = seg->len, .host = host};
  return true;
}

/* True when a child op of `len` bytes at `host` from `p` suits the file's alignment. */
static bool fast_child_fits(const struct asif *a, uint64_t host, uint64_t len, const void *p)
{
  uint64_t al = a->file->geo.direct_alignment > 1 ? a->file->geo.direct_alignment : 1;

  return host % al == 0 && len % al == 0 && (uintptr_t)p % al == 0 &&
         host <= a->file->geo.size && len <= a->file->geo.size - host;
}

/* Maps op through the cache into runs[]. False when a worker must serve it (a miss, a
 * malformed entry, too many runs, an unaligned child). Lock held. */
static bool fast_plan(struct asif *a, const struct backing_op *op, struct fast_run *runs,
                      uint32_t *n)
{
  char why[WHY_MAX];
  uint64_t done = 0;

  *n = 0;
  while (done < op->length) {
    struct asif_seg seg;
    struct asif_need need;
    if (asif_map_at(a, op->offset + done, op->length - done, &seg, &need, why, sizeof why) <
            0 ||
        !fast_run_add(runs, n, done, &seg)) {
      return false;
    }
    done += seg.len;
  }
  for (uint32_t i = 0; i < *n; i++) {
    if (runs[i].host != UINT64_MAX &&
        !fast_child_fits(a, runs[i].host, runs[i].len, (uint8_t *)op->buf + runs[i].buf_off)) {
      return false;
    }
  }
  return true;
}

/* Serves a READ on the fast path when it can. Returns true when op was taken (done is or
 * will be called), false when it must go to a worker. */
static bool fast_path(struct asif *a, struct backing_op *op)
{
  struct fast_run runs[FAST_RUNS];
  uint32_t n, k = 0;

  if (!op->nonblocking) {
    pthread_mutex_lock(&a->lock);
  } else if (pthread_mutex_trylock(&a->lock) != 0) {
    return false; /* a worker is inserting: an event loop never waits on it */
  }
  bool planned = fast_plan(a, op, runs, &n);
  pthread_mutex_unlock(&a->lock);
  if (!planned) {
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    k += runs[i].host != UINT64_MAX;
  }
  struct fast_ctx *ctx = k > 0 ? malloc(sizeof *ctx + k * sizeof ctx->child[0]) : NULL;
  if (k > 0 && ctx == NULL) {
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (runs[i].host == UINT64_MAX) {
      memset((uint8_t *)op->buf + runs[i].buf_off, 0, runs[i].len);
    }
  }
  if (k == 0) {
    op->done(op, 0);
    return true;
  }
  ctx->parent = op;
  atomic_init(&ctx->pending, k);
  atomic_init(&ctx->result, 0);
  for (uint32_t i = 0, c = 0; i < n; i++) {
    if (runs[i].host != UINT64_MAX) {
      struct backing_op *child = &ctx->child[c++];
      memset(child, 0, sizeof *child);
      child->type = BACKING_OP_READ;
      child->offset = runs[i].host;
      child->length = runs[i].len;
      child->buf = (uint8_t *)op->buf + runs[i].buf_off;
      child->done = fast_child_done;
      child->opaque = ctx;
      child->engine = op->engine;
      child->nonblocking = op->nonblocking;
      child->fixed_buf = n == 1 ? op->fixed_buf : 0;
    }
  }
  for (uint32_t c = 0; c < k; c++) {
    /* After the last submit ctx may be gone: only k, a local, is read. */
    int rc = backing_submit(a->file, &ctx->child[c]);
    if (rc < 0) {
      fast_child_done(&ctx->child[c], rc);
    }
  }
  return true;
}

/* Runs op to completion on a worker. Returns its result. */
static int slow_run(struct asif *a, struct backing_op *op)
{
  char why[WHY_MAX] = "";
  int rc;

  switch (op->type) {
  case BACKING_OP_READ:
    rc = asif_read_logical(a, op->buf, op->offset, op->length, why, sizeof why);
    return rc == -EIO && why[0] != '\0' ? asif_report(a, why) : rc;
  case BACKING_OP_BLOCK_STATUS:
    return asif_block_status(a, op);
  default:
    return -EINVAL;
  }
}

static ssize_t slow_call(void *arg)
{
  struct backing_op *op = arg;

  return slow_run((struct asif *)op->owner, op);
}

static void slow_complete(struct engine_req *req, ssize_t result)
{
  struct backing_op *op = req->arg;

  op->done(op, (int)result);
}

/* Queues op on a worker (inline when the node has no engine: unit tests). */
static int slow_submit(struct asif *a, struct backing_op *op)
{
  if (a->engine == NULL) {
    op->done(op, slow_run(a, op));
    return 0;
  }
  memset(&op->ereq, 0, sizeof op->ereq);
  op->ereq.opcode = ENGINE_CALL;
  op->ereq.call = slow_call;
  op->ereq.arg = op;
  op->ereq.complete = slow_complete;
  return engine_submit(a->engine, &op->ereq);
}

int asif_submit(struct backing *b, struct backing_op *op)
{
  struct asif *a = (struct asif *)b;

  op->owner = b;
  switch (op->type) {
  case BACKING_OP_READ:
    assert(op->offset <= a->h.size && op->length <= a->h.size - op->offset);
    if (op->length == 0) {
      op->done(op, 0);
      return 0;
    }
    if (fast_path(a, op)) {
      return 0;
    }
    return slow_submit(a, op);
  case BACKING_OP_BLOCK_STATUS:
    if (op->length == 0 || op->extent_max == 0 || op->buf == NULL) {
      return -EINVAL;
    }
    assert(op->offset <= a->h.size && op->length <= a->h.size - op->offset);
    return slow_submit(a, op);
  case BACKING_OP_FLUSH:
  case BACKING_OP_CACHE:
    op->done(op, 0);
    return 0;
  case BACKING_OP_WRITE:
  case BACKING_OP_TRIM:
  case BACKING_OP_WRITE_ZEROES:
    return -EROFS;
  default:
    return -EINVAL;
  }
}
