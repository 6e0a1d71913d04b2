/* SPDX-License-Identifier: MIT */
/* txn_counts.h: a connection's requests counted by kind, for the --verbose line that ends
 * it: an operator sees whether a client ever sends FLUSH or FUA (Apple's Virtualization
 * framework client, docs/apple.md). Pure functions, no locks: one thread counts (the
 * connection's reading thread), another reads only after that thread is done. */
#ifndef DISKGATE_SERVER_TXN_COUNTS_H
#define DISKGATE_SERVER_TXN_COUNTS_H

#include <stddef.h>
#include <stdint.h>

struct txn_counts {
  uint64_t reads, writes, flushes, fua, trims, zeroes, other;
};

/* Counts one request read from the client (not NBD_CMD_DISC): `type` and `flags` as in
 * its header (doc/proto.md "Request message"). A WRITE, TRIM or WRITE_ZEROES with
 * NBD_CMD_FLAG_FUA counts by its kind and in `fua` too; CACHE, BLOCK_STATUS and unknown
 * commands count as other.
 * Caller: the connection's reading thread. */
void txn_counts_add(struct txn_counts *counts, uint16_t type, uint16_t flags);

/* Writes "reads=N writes=N flushes=N fua=N trims=N zeroes=N other=N" (counts of
 * requests) into out, NUL-terminated, cut to fit `size` (> 0). Returns out. Any thread,
 * once the counting thread is done. */
const char *txn_counts_format(const struct txn_counts *counts, char *out, size_t size);

#endif
