/* SPDX-License-Identifier: MIT */
/* qcow2_write.c: writes, TRIM, WRITE_ZEROES (stub until written). */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>

int qcow2_write_slow(struct qcow2 *q, struct backing_op *op)
{
  (void)q; (void)op;
  return -EROFS;
}

int qcow2_discard(struct qcow2 *q, struct backing_op *op)
{
  (void)q; (void)op;
  return -EROFS;
}

int qcow2_write_zeroes(struct qcow2 *q, struct backing_op *op)
{
  (void)q; (void)op;
  return -EROFS;
}

