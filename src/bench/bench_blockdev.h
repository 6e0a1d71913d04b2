/* SPDX-License-Identifier: MIT */
/* bench_blockdev.h: block devices and file systems for the lab: loop devices over the test
 * file, nbdfuse (the host kernel has no NBD client, so an export becomes a file through FUSE
 * and then a loop device), mkfs and mount. All need root. Main thread only. */
#ifndef DISKGATE_BENCH_BLOCKDEV_H
#define DISKGATE_BENCH_BLOCKDEV_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Attaches a loop device over `file` with the given logical sector size (512 or 4096) and
 * direct I/O on or off; writes its path ("/dev/loopN") into dev. Tool output goes to `log`.
 * Returns 0 or -errno (-EIO when losetup failed). */
int bench_blockdev_loop_attach(const char *file, unsigned sector, bool direct, const char *log,
                               char *dev, size_t len);

/* Detaches loop device `dev`. Returns 0 or -EIO. */
int bench_blockdev_loop_detach(const char *dev, const char *log);

/* A running nbdfuse. */
struct bench_fuse {
  pid_t pid;              /* 0 when not running */
  char mnt[PATH_MAX];     /* its mount point */
  char file[PATH_MAX];    /* the export as a file: <mnt>/nbd */
};

/* Mounts the export at `uri` as the file <mnt>/nbd with nbdfuse, `mnt` being created if
 * needed, and waits (at most 15 s) until the file is there. Returns 0 or -errno. */
int bench_blockdev_fuse_start(const char *uri, const char *mnt, const char *log,
                              struct bench_fuse *fuse);

/* Unmounts an nbdfuse mount and waits for nbdfuse to exit. Returns 0 or -EIO. */
int bench_blockdev_fuse_stop(struct bench_fuse *fuse, const char *log);

/* Makes an ext4 file system on `dev` without discards (a discard would punch holes into the
 * test file) and with its inode tables and journal initialised now, not in the background.
 * Returns 0 or -EIO. */
int bench_blockdev_mkfs(const char *dev, const char *log);

/* Mounts ext4 `dev` on `mnt` (created if needed). Returns 0 or -EIO. */
int bench_blockdev_mount(const char *dev, const char *mnt, const char *log);

/* Unmounts `mnt`, retrying for a few seconds while it is busy. Returns 0 or -EIO. */
int bench_blockdev_umount(const char *mnt, const char *log);

#endif
