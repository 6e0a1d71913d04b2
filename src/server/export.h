/* export.h: an export, what a client reaches by name: a backing plus its policy (read-only,
 * sync mode) and what the server advertises for it (transmission flags, block sizes).
 * Source: doc/proto.md, "Transmission flags" and "Block size constraints".
 * Exports are created on the main thread before the listeners start and are then read
 * concurrently by every connection; only the atomic fields change afterwards. */
#ifndef DISKGATE_SERVER_EXPORT_H
#define DISKGATE_SERVER_EXPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backing/backing.h"
#include "server/fence.h"

struct export {
  char *name;              /* NBD export name (a key, never a path: case C18) */
  char *description;       /* NBD_INFO_DESCRIPTION */
  struct backing *backing;
  bool read_only;
  enum sync_mode sync;
  uint32_t min_block;      /* bytes: NBD_INFO_BLOCK_SIZE minimum (case C07) */
  uint32_t preferred_block;/* bytes */
  uint32_t max_payload;    /* bytes: advertised and enforced for READ/WRITE */
  atomic_bool sync_failed; /* a sync failed: later FLUSHes fail (server/durability.c) */
  struct fence fence;      /* orders overlapping writes across connections (case C12) */
};

/* Makes an export over an open backing (ownership passes to the export).
 * Returns 0 and *out, or -ENOMEM / -ENAMETOOLONG (name over 4096 bytes). Main thread. */
int export_create(const char *name, struct backing *backing, bool read_only,
                  enum sync_mode sync, struct export **out);

/* The 16-bit transmission flags for a client, given whether it negotiated structured
 * replies (SEND_DF is set exactly then: spec rule 29). */
uint16_t export_transmission_flags(const struct export *e, bool structured_replies);

/* Closes the backing and frees. Main thread, after every connection is gone. */
void export_destroy(struct export *e);

#endif
