/* SPDX-License-Identifier: MIT */
/* loop_bufs.c: see loop_bufs.h. */
#include "io/loop_bufs.h"

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "util/log.h"

int loop_bufs_init(struct loop_bufs *t, struct io_uring *ring)
{
  int rc;

  memset(t, 0, offsetof(struct loop_bufs, free_slots));
  t->ring = ring;
  rc = io_uring_register_buffers_sparse(ring, LOOP_BUFS_MAX);
  if (rc == 0) {
    t->cap = LOOP_BUFS_MAX;
  }
  return rc;
}

unsigned loop_bufs_add(struct loop_bufs *t, void *buf, size_t len)
{
  struct iovec iov = {.iov_base = buf, .iov_len = len};
  __u64 tag = 0;
  unsigned slot;
  int rc;

  assert(buf != NULL && len > 0);
  if (t->refused) {
    return 0;
  }
  if (t->nfree > 0) {
    slot = t->free_slots[--t->nfree];
  } else if (t->next < t->cap) {
    slot = t->next++;
  } else {
    return 0;
  }
  rc = io_uring_register_buffers_update_tag(t->ring, slot, &iov, &tag, 1);
  if (rc != 1) {
    t->free_slots[t->nfree++] = slot;
    if (rc == -ENOMEM || rc == -EPERM || rc == -EOPNOTSUPP || rc == -EINVAL) {
      t->refused = true; /* the same answer for every buffer: stop asking */
      log_info("event loop: buffers are not registered with io_uring (%s); O_DIRECT "
               "requests pin their pages each time", strerror(rc < 0 ? -rc : EIO));
    }
    return 0;
  }
  t->used++;
  return slot + 1;
}

void loop_bufs_remove(struct loop_bufs *t, unsigned fixed)
{
  struct iovec iov = {.iov_base = NULL, .iov_len = 0}; /* an empty slot */
  __u64 tag = 0;
  unsigned slot;

  if (fixed == 0) {
    return;
  }
  slot = fixed - 1;
  assert(slot < t->cap && t->used > 0);
  if (io_uring_register_buffers_update_tag(t->ring, slot, &iov, &tag, 1) != 1) {
    /* The slot keeps the old buffer pinned; never hand it out again. */
    log_warn("event loop: cannot empty registered buffer slot %u", slot);
    t->used--;
    return;
  }
  t->used--;
  assert(t->nfree < LOOP_BUFS_MAX);
  t->free_slots[t->nfree++] = slot;
  if (t->used == 0) {
    t->refused = false; /* a limit reached under load may leave room now: ask again */
  }
}
