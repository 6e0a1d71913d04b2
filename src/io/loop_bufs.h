/* SPDX-License-Identifier: MIT */
/* loop_bufs.h: the table of registered buffers of one event loop's ring.
 *
 * An O_DIRECT read or write through io_uring pins its user pages for every request
 * (get_user_pages: `gup_fast_fallback` and `bio_iov_iter_get_pages`, about 3% of the
 * server's CPU per 4K read in a profile). A buffer registered with the ring is pinned once,
 * and READ_FIXED / WRITE_FIXED then use it as it is (io_uring_register(2),
 * IORING_REGISTER_BUFFERS2 with IORING_RSRC_REGISTER_SPARSE, and
 * IORING_REGISTER_BUFFERS_UPDATE; Linux 5.19). The request pool (txn_pool.h) keeps buffers
 * for reuse, so each buffer is registered once for many requests.
 *
 * Slots are numbered 0..LOOP_BUFS_MAX-1; callers hold `slot + 1` (0 meaning none), so a
 * zeroed structure means "not registered".
 * Units: bytes. Threads: the ring's issuer thread only (with IORING_SETUP_SINGLE_ISSUER the
 * kernel refuses io_uring_register from any other thread). */
#ifndef DISKGATE_IO_LOOP_BUFS_H
#define DISKGATE_IO_LOOP_BUFS_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>

/* Slots per ring: 16 connections x 128 requests in flight plus 16 pools of 128 idle
 * buffers just fit; beyond that buffers are used unregistered. The kernel allows 16384. */
#define LOOP_BUFS_MAX 4096u

struct loop_bufs {
  struct io_uring *ring;
  unsigned cap;       /* slots registered with the ring (0: registration unavailable) */
  unsigned next;      /* slots [next, cap) were never used */
  unsigned nfree;     /* free_slots[0, nfree) were used and are free again */
  unsigned used;      /* slots holding a buffer */
  bool refused;       /* the kernel refused a buffer (RLIMIT_MEMLOCK): no more tries */
  unsigned free_slots[LOOP_BUFS_MAX];
};

/* Registers a sparse table of LOOP_BUFS_MAX empty slots with `ring`. When the kernel cannot
 * (before Linux 5.19, or no memory), the table stays empty and loop_bufs_add returns 0:
 * requests then use their buffers unregistered. Returns 0 or the -errno of the kernel's
 * refusal (informational; the table is usable either way). */
int loop_bufs_init(struct loop_bufs *t, struct io_uring *ring);

/* Registers `len` bytes at `buf` in a free slot. Returns slot + 1, or 0 when no slot is
 * free, the table is unavailable, or the kernel refused (-ENOMEM past RLIMIT_MEMLOCK for
 * an unprivileged user: then no further buffer is tried until every slot is empty
 * again). */
unsigned loop_bufs_add(struct loop_bufs *t, void *buf, size_t len);

/* Empties slot `fixed - 1` (a value loop_bufs_add returned) so the buffer may be freed:
 * the kernel drops its pin once no request in flight uses it. fixed = 0 does nothing. */
void loop_bufs_remove(struct loop_bufs *t, unsigned fixed);

#endif
