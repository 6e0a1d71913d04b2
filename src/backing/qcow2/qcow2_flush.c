/* SPDX-License-Identifier: MIT */
/* qcow2_flush.c: metadata write-back and FLUSH (stub until written). */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>

int qcow2_meta_writeback(struct qcow2 *q)
{
  (void)q;
  return 0;
}

int qcow2_flush(struct qcow2 *q)
{
  (void)q;
  return 0;
}

