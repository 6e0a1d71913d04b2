/* SPDX-License-Identifier: MIT */
/* txn_counts.c: see txn_counts.h. */
#include "server/txn_counts.h"

#include <assert.h>
#include <stdio.h>

#include "nbd/proto.h"

void txn_counts_add(struct txn_counts *counts, uint16_t type, uint16_t flags)
{
  switch (type) {
  case NBD_CMD_READ:
    counts->reads++;
    break;
  case NBD_CMD_WRITE:
    counts->writes++;
    break;
  case NBD_CMD_FLUSH:
    counts->flushes++;
    break;
  case NBD_CMD_TRIM:
    counts->trims++;
    break;
  case NBD_CMD_WRITE_ZEROES:
    counts->zeroes++;
    break;
  default:
    counts->other++;
    return;
  }
  if ((flags & NBD_CMD_FLAG_FUA) && type != NBD_CMD_READ && type != NBD_CMD_FLUSH) {
    counts->fua++;
  }
}

const char *txn_counts_format(const struct txn_counts *counts, char *out, size_t size)
{
  assert(size > 0);
  snprintf(out, size,
           "reads=%llu writes=%llu flushes=%llu fua=%llu trims=%llu zeroes=%llu other=%llu",
           (unsigned long long)counts->reads, (unsigned long long)counts->writes,
           (unsigned long long)counts->flushes, (unsigned long long)counts->fua,
           (unsigned long long)counts->trims, (unsigned long long)counts->zeroes,
           (unsigned long long)counts->other);
  return out;
}
