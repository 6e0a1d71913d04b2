/* export.c: see export.h. */
#include "server/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nbd/option.h"
#include "nbd/proto.h"

int export_create(const char *name, struct backing *backing, bool read_only,
                  enum sync_mode sync, struct export **out)
{
  const struct backing_geometry *geo = &backing->geo;
  struct export *e;

  if (strlen(name) > NBD_MAX_STRING) {
    return -ENAMETOOLONG;
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) {
    return -ENOMEM;
  }
  e->name = strdup(name);
  e->description = strdup(backing->description != NULL ? backing->description : "");
  if (e->name == NULL || e->description == NULL) {
    free(e->name);
    free(e->description);
    free(e);
    return -ENOMEM;
  }
  e->backing = backing;
  e->read_only = read_only;
  e->sync = sync;
  /* The minimum is the backing's logical block size, so partition tables and file systems
   * made through the export stay valid (case C07); 1 when the size is not a multiple of
   * it, so the last bytes stay addressable. Unaligned requests are served anyway. */
  e->min_block = geo->logical_block_size;
  if (e->min_block == 0 || geo->size % e->min_block != 0) {
    e->min_block = 1;
  }
  e->preferred_block = geo->physical_block_size;
  if (e->preferred_block < 512 || e->preferred_block < e->min_block) {
    e->preferred_block = e->min_block > 512 ? e->min_block : 512;
  }
  e->max_payload = DG_MAX_PAYLOAD;
  atomic_init(&e->sync_failed, false);
  fence_init(&e->fence);
  if (!nbd_block_size_valid(e->min_block, e->preferred_block, e->max_payload)) {
    e->min_block = 1;
    e->preferred_block = 4096;
  }
  *out = e;
  return 0;
}

uint16_t export_transmission_flags(const struct export *e, bool structured_replies)
{
  const struct backing_geometry *geo = &e->backing->geo;
  uint16_t flags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH;

  if (e->read_only) {
    flags |= NBD_FLAG_READ_ONLY;
  } else {
    flags |= NBD_FLAG_SEND_FUA;
    if (geo->can_trim) {
      flags |= NBD_FLAG_SEND_TRIM;
    }
    if (geo->can_zero) {
      flags |= NBD_FLAG_SEND_WRITE_ZEROES;
      if (geo->can_fast_zero) {
        flags |= NBD_FLAG_SEND_FAST_ZERO; /* spec rule 28: only with SEND_WRITE_ZEROES */
      }
    }
  }
  flags |= NBD_FLAG_SEND_CACHE; /* a backing without prefetch treats it as a no-op */
  if (geo->rotational) {
    flags |= NBD_FLAG_ROTATIONAL;
  }
  if (geo->can_multi_conn) {
    flags |= NBD_FLAG_CAN_MULTI_CONN;
  }
  if (structured_replies) {
    flags |= NBD_FLAG_SEND_DF;
  }
  return flags;
}

void export_destroy(struct export *e)
{
  if (e == NULL) {
    return;
  }
  backing_close(e->backing);
  fence_destroy(&e->fence);
  free(e->name);
  free(e->description);
  free(e);
}
