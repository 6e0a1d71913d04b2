/* durability.c: see durability.h. */
#include "server/durability.h"

#include <errno.h>

#include "util/log.h"

/* op->opaque holds the export from durability_submit until op->chain runs. */

static void flush_done(struct backing_op *op, int result)
{
  struct export *e = op->opaque;

  if (result < 0) {
    if (!atomic_exchange(&e->sync_failed, true)) {
      log_error("export '%s': sync failed (%d); every later FLUSH fails with EIO until restart",
                e->name, result);
    }
    result = -EIO;
  }
  op->chain(op, result);
}

/* A backing without native FUA: the write is done; now flush, then finish. */
static void write_then_flush_done(struct backing_op *op, int result)
{
  struct export *e = op->opaque;
  struct backing_op saved = *op;
  int rc;

  if (result < 0) {
    op->chain(op, result);
    return;
  }
  if (atomic_load(&e->sync_failed)) {
    op->chain(op, -EIO);
    return;
  }
  op->type = BACKING_OP_FLUSH;
  op->done = flush_done;
  rc = backing_submit(e->backing, op);
  if (rc < 0) {
    saved.chain(op, rc);
  }
}

int durability_submit(struct export *e, struct backing_op *op,
                      void (*done)(struct backing_op *op, int result))
{
  op->chain = done;
  op->opaque = e;
  if (op->type == BACKING_OP_FLUSH) {
    if (atomic_load(&e->sync_failed)) {
      done(op, -EIO);
      return 0;
    }
    op->done = flush_done;
    return backing_submit(e->backing, op);
  }
  if (e->sync == SYNC_NONE) {
    op->flags &= ~BACKING_FLAG_FUA;
  }
  if ((op->flags & BACKING_FLAG_FUA) && !e->backing->geo.can_fua) {
    op->flags &= ~BACKING_FLAG_FUA;
    op->done = write_then_flush_done;
    return backing_submit(e->backing, op);
  }
  op->done = done;
  return backing_submit(e->backing, op);
}
