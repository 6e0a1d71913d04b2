/* SPDX-License-Identifier: MIT */
/* file_impl.h: the file backing's state, shared by file.c (open, geometry, lock) and
 * file_io.c (the data path). Internal to src/backing. */
#ifndef DISKGATE_BACKING_FILE_IMPL_H
#define DISKGATE_BACKING_FILE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backing/backing.h"
#include "backing/stall_budget.h"

struct file_backing {
  struct backing base;
  int fd;          /* the data fd: O_DIRECT under --cache direct */
  int fd_buffered; /* page-cache fd for what O_DIRECT cannot address (a file's tail) */
  /* FLUSH on channel i syncs sync_fd[i]: [0] is fd, the others are open file descriptions
   * of their own (read-only; -1 when unused), so each channel sees every writeback error
   * (geo.sync_channels, backing.h). */
  int sync_fd[BACKING_SYNC_CHANNELS];
  bool is_block;   /* block device: BLKDISCARD / BLKZEROOUT / fallocate on the device */
  bool is_regular;
  /* Read-modify-write gate: unaligned writes (and zeroing of partial blocks) run
   * exclusively; other writes run shared. Waits happen in backing_submit's caller. */
  pthread_mutex_t gate_lock;
  pthread_cond_t gate_cond;
  unsigned gate_shared;
  bool gate_exclusive;
  /* Inline page-cache writes (file_io.c, write_inline): how long they have blocked the
   * event loops, and whether they are off for it. */
  struct stall_budget inline_stalls;
  /* The file is on tmpfs or ramfs: its page cache has no writeback, no journal and no
   * dirty-page throttling, the blocking io-wq would spare the loops, so inline writes stay
   * on whatever the budget would say (a loop preempted mid-write looks blocked to it). */
  bool no_writeback;
};

/* The data path (file_io.c): vtable.submit. Contract as backing_submit(). */
int file_io_submit(struct backing *b, struct backing_op *op);

#endif
