/* SPDX-License-Identifier: MIT */
/* qcow2_refcount.c: refcounts and allocation (stub until written). */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>

int qcow2_refcount_open(struct qcow2 *q)
{
  (void)q;
  return 0;
}

int qcow2_refcount_get(struct qcow2 *q, uint64_t host_offset, uint64_t *out)
{
  (void)q; (void)host_offset; *out = 1;
  return 0;
}

int qcow2_alloc_clusters(struct qcow2 *q, uint64_t n, uint64_t *host_offset)
{
  (void)q; (void)n; (void)host_offset;
  return -ENOSPC;
}

int qcow2_refcount_update(struct qcow2 *q, uint64_t host_offset, uint64_t len, int delta)
{
  (void)q; (void)host_offset; (void)len; (void)delta;
  return -EIO;
}

int qcow2_refcount_free_deferred(struct qcow2 *q, uint64_t host_offset, uint64_t len)
{
  (void)q; (void)host_offset; (void)len;
  return 0;
}

int qcow2_refcount_run_deferred(struct qcow2 *q)
{
  (void)q;
  return 0;
}

void qcow2_refcount_close(struct qcow2 *q)
{
  (void)q;
}

