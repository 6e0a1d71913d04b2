/* SPDX-License-Identifier: MIT */
/* qcow2_header.c: header parsing (stub until written). */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>

int qcow2_header_parse(const uint8_t *buf, size_t len, uint64_t file_size, struct qcow2_header *out, char *why, size_t why_len)
{
  (void)buf; (void)len; (void)file_size; (void)out; (void)why; (void)why_len;
  return -ENOTSUP;
}

