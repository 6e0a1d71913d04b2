/* SPDX-License-Identifier: MIT */
/* fdio.h: whole-buffer positioned reads and writes on a file descriptor, retrying short
 * transfers and EINTR. Blocking: for worker threads and tools, never an event loop.
 * Units: bytes. Threads: any (pread/pwrite do not move the file offset). */
#ifndef DISKGATE_UTIL_FDIO_H
#define DISKGATE_UTIL_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads up to len bytes at off. Returns the bytes read (less than len only at end of
 * file) or -errno. */
ssize_t fdio_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* Writes all len bytes at off. Returns 0, -ENOSPC when the file system takes nothing
 * more (pwrite returned 0), or -errno. */
int fdio_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

#endif
