/* SPDX-License-Identifier: MIT */
/* qcow2.c: the qcow2 format node (placeholder until the engine lands: refuses). */
#include "backing/qcow2/qcow2.h"

#include <errno.h>

int backing_qcow2_open(const struct qcow2_open_args *args, struct backing **out)
{
  (void)args;
  *out = NULL;
  return -ENOTSUP;
}
