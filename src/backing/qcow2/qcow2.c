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

int qcow2_create(const char *path, uint64_t size, const char *backing_file,
                 const char *backing_fmt)
{
  (void)path;
  (void)size;
  (void)backing_file;
  (void)backing_fmt;
  return -ENOTSUP;
}
