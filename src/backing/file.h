/* SPDX-License-Identifier: MIT */
/* file.h: the file backing: regular files (sparse-aware), block devices (sector geometry
 * from BLKSSZGET/BLKPBSZGET, BLKDISCARD, BLKZEROOUT) and character devices.
 * Main thread only. */
#ifndef DISKGATE_BACKING_FILE_H
#define DISKGATE_BACKING_FILE_H

#include "backing/backing.h"

/* Opens `path` (following a link only when `path` itself names one; otherwise O_NOFOLLOW
 * and an fstat re-check), takes QEMU's image locks (file.c, lock_image: the bytes of a
 * QEMU writer when writable, of a read-only QEMU user when read-only, only "consistent
 * read" with read_only and force_share, as QEMU's -U) so one image has one writer at a
 * time, and claims a writable block device with O_EXCL (unless opts->allow_busy) so that
 * nobody mounts it while it is served. Returns 0 and *out, or -errno:
 * -ENOENT, -EACCES, -EISDIR, -EBUSY (locked by another process), -ETXTBSY (a writable block
 * device the kernel reports in use: mounted, or open with O_EXCL elsewhere), -EINVAL (not
 * a file or device, or a device whose size is unknown), -ENOTSUP (O_DIRECT refused by the
 * file system under --cache direct). Needs opts->engine. */
int backing_file_open(const char *path, const struct backing_options *opts,
                      struct backing **out);

#endif
