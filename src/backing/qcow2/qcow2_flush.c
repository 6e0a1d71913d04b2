/* SPDX-License-Identifier: MIT */
/* qcow2_flush.c: metadata write-back in the order crash consistency needs, and FLUSH
 * (the order is QEMU's; qcow2_impl.h states it). Under the export's sync mode "none" the
 * syncs are left out: the operator chose no durability. */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "backing/format.h"
#include "util/bytes.h"

static int flush_sync(struct qcow2 *q)
{
  if (q->base.opts.sync == SYNC_NONE) {
    return 0;
  }
  return format_flush(q->file);
}

/* Writes the whole L1 table, big-endian, at its place in the file. */
static int flush_l1_write(struct qcow2 *q)
{
  uint64_t bytes = (uint64_t)q->h.l1_size * 8;
  uint8_t *buf;
  int rc;

  if (bytes == 0) {
    return 0;
  }
  buf = malloc(bytes);
  if (buf == NULL) {
    return -ENOMEM;
  }
  for (uint64_t i = 0; i < q->h.l1_size; i++) {
    bytes_put_be64(buf + i * 8, q->l1[i]);
  }
  rc = format_pwrite(q->file, buf, bytes, q->h.l1_table_offset);
  free(buf);
  return rc;
}

int qcow2_meta_writeback(struct qcow2 *q)
{
  bool wrote = false;
  int rc;

  if (q->cache.dirty == 0 && !q->l1_dirty && q->deferred_len == 0 && !qcow2_refcount_dirty(q)) {
    return 0;
  }
  /* Data clusters and refcount increments first: every dirty L2 entry relies on them. */
  rc = qcow2_refcount_write_dirty(q);
  if (rc == 0) {
    rc = flush_sync(q);
  }
  if (rc == 0 && q->cache.dirty > 0) {
    rc = qcow2_cache_write_dirty(q);
    wrote = true;
  }
  if (rc == 0 && q->l1_dirty) {
    /* The L2 tables a changed L1 entry points to are durable before the entry. */
    rc = flush_sync(q);
    if (rc == 0) {
      rc = flush_l1_write(q);
    }
    if (rc == 0) {
      q->l1_dirty = false;
    }
    wrote = true;
  }
  if (rc == 0 && q->deferred_len > 0) {
    /* The L2 and L1 changes that dropped these references are durable before the frees. */
    rc = wrote ? flush_sync(q) : 0;
    if (rc == 0) {
      rc = qcow2_refcount_run_deferred(q);
    }
    if (rc == 0) {
      rc = qcow2_refcount_write_dirty(q); /* the decrements: synced by the caller's FLUSH */
    }
  }
  return rc;
}

void qcow2_lock(struct qcow2 *q)
{
  if (pthread_mutex_trylock(&q->lock) == 0) {
    return;
  }
  engine_wait_begin();
  pthread_mutex_lock(&q->lock);
  engine_wait_end();
}

int qcow2_flush(struct qcow2 *q)
{
  int rc;

  qcow2_lock(q);
  rc = qcow2_meta_writeback(q);
  pthread_mutex_unlock(&q->lock);
  if (rc == 0) {
    rc = flush_sync(q);
  }
  return rc;
}
