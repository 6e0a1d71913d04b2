/* SPDX-License-Identifier: MIT */
/* file.h: the file backing: regular files (sparse-aware), block devices (sector geometry
 * from BLKSSZGET/BLKPBSZGET, BLKDISCARD, BLKZEROOUT) and character devices.
 * Main thread only. */
#ifndef DISKGATE_BACKING_FILE_H
#define DISKGATE_BACKING_FILE_H

#include "backing/backing.h"

/* Opens `path` (following a link only when `path` itself names one; otherwise O_NOFOLLOW
 * and an fstat re-check), takes QEMU-compatible OFD locks (file.c: exclusive when
 * writable, QEMU's read-only bytes when read-only, only "consistent read" with read_only
 * and force_share, as QEMU's -U) so one image is served by one diskgate at a time.
 * Returns 0 and *out, or -errno:
 * -ENOENT, -EACCES, -EISDIR, -EBUSY (locked by another process), -EINVAL (not a file or
 * device, or a device whose size is unknown), -ENOTSUP (O_DIRECT refused by the file
 * system under --cache direct). Needs opts->engine. */
int backing_file_open(const char *path, const struct backing_options *opts,
                      struct backing **out);

#endif
