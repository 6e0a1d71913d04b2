/* SPDX-License-Identifier: MIT */
/* asif_submit.c: the ASIF node's dispatch. A READ whose table groups and chunk bitmaps are
 * all cached goes straight to the image file as child ops on the caller's engine, with no
 * worker and one allocation (the zero runs are filled in place); any other READ, and
 * BLOCK_STATUS, runs on an engine worker (ENGINE_CALL) with synchronous child I/O. The node
 * never writes: WRITE, TRIM and WRITE_ZEROES are refused, FLUSH and CACHE succeed. */
#include "backing/asif/asif_impl.h"
#include "backing/format_runs.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Runs planned on the stack; a more fragmented READ goes to a worker. */
#define FAST_RUNS 64
#define WHY_MAX 192u

/* Maps op through the cache into runs[]. False when a worker must serve it (a miss, a
 * malformed entry, too many runs, an unaligned child). Lock held. */
static bool fast_plan(struct asif *a, const struct backing_op *op, struct format_run *runs,
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
        !format_run_add(runs, FAST_RUNS, n, done, seg.len,
                        seg.data ? seg.host : FORMAT_RUN_ZERO)) {
      return false;
    }
    done += seg.len;
  }
  return format_runs_fit(a->file, op, runs, *n);
}

/* Serves a READ on the fast path when it can. Returns true when op was taken (done is or
 * will be called), false when it must go to a worker. */
static bool fast_path(struct asif *a, struct backing_op *op)
{
  struct format_run runs[FAST_RUNS];
  uint32_t n;

  if (!op->nonblocking) {
    pthread_mutex_lock(&a->lock);
  } else if (pthread_mutex_trylock(&a->lock) != 0) {
    return false; /* a worker is inserting: an event loop never waits on it */
  }
  bool planned = fast_plan(a, op, runs, &n);
  pthread_mutex_unlock(&a->lock);
  return planned && format_runs_submit(a->file, op, runs, n, NULL, NULL) == 0;
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

/* Queues op on a worker (inline when the node has no engine: unit tests). */
static int slow_submit(struct asif *a, struct backing_op *op)
{
  return format_call_submit(a->engine, op, slow_call);
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
