/* SPDX-License-Identifier: MIT */
/* bench_blockdev.c: loop devices, nbdfuse, mkfs.ext4, mount. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_blockdev.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"

int bench_blockdev_loop_attach(const char *file, unsigned sector, bool direct, const char *log,
                               char *dev, size_t len)
{
  char sector_s[16];
  char *argv[] = { "losetup", "--find", "--show", "--sector-size", sector_s,
                   direct ? "--direct-io=on" : "--direct-io=off", (char *)file, NULL };
  int rc;

  bench_fmt(sector_s, sizeof(sector_s), "%u", sector);
  rc = bench_proc_capture(argv, dev, len, 30.0);
  if (rc < 0) {
    return rc;
  }
  if (rc != 0 || strncmp(dev, "/dev/", 5) != 0) {
    FILE *f = fopen(log, "a");

    if (f != NULL) {
      fprintf(f, "losetup %s (sector %u, direct %d) failed: status %d\n", file, sector, direct,
              rc);
      fclose(f);
    }
    dev[0] = '\0';
    return -EIO;
  }
  return 0;
}

int bench_blockdev_loop_detach(const char *dev, const char *log)
{
  char *argv[] = { "losetup", "--detach", (char *)dev, NULL };

  for (int i = 0; i < 50; i++) {
    if (bench_proc_run(argv, log, 30.0, NULL) == 0) {
      return 0;
    }
    usleep(100000);
  }
  return -EIO;
}

int bench_blockdev_fuse_start(const char *uri, const char *mnt, const char *log,
                              struct bench_fuse *fuse)
{
  char pidfile[PATH_MAX + 8];
  char *argv[] = { "nbdfuse", "-P", pidfile, (char *)mnt, (char *)uri, NULL };
  double deadline;
  int rc;

  memset(fuse, 0, sizeof(*fuse));
  if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
    return -errno;
  }
  bench_fmt(fuse->mnt, sizeof(fuse->mnt), "%s", mnt);
  bench_fmt(fuse->file, sizeof(fuse->file), "%s/nbd", mnt);
  bench_fmt(pidfile, sizeof(pidfile), "%s.pid", mnt);
  unlink(pidfile);
  rc = bench_proc_spawn(argv, log, -1, &fuse->pid);
  if (rc < 0) {
    fuse->pid = 0;
    return rc;
  }
  deadline = bench_proc_now() + 15.0;
  for (;;) {
    struct stat sb;

    if (stat(pidfile, &sb) == 0 && sb.st_size > 0 && stat(fuse->file, &sb) == 0 &&
        sb.st_size > 0) {
      return 0;
    }
    if (bench_proc_exited(fuse->pid) || bench_proc_now() > deadline) {
      bench_blockdev_fuse_stop(fuse, log);
      return -EIO;
    }
    usleep(20000);
  }
}

int bench_blockdev_fuse_stop(struct bench_fuse *fuse, const char *log)
{
  int rc = 0;

  if (fuse->pid <= 0) {
    return 0;
  }
  if (bench_blockdev_umount(fuse->mnt, log) < 0) {
    rc = -EIO;
  }
  if (bench_proc_wait(fuse->pid, 10.0, NULL, NULL) < 0) {
    rc = -EIO;
  }
  fuse->pid = 0;
  rmdir(fuse->mnt);
  return rc;
}

int bench_blockdev_mkfs(const char *dev, const char *log)
{
  char *argv[] = { "mkfs.ext4", "-q", "-F", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0",
                   (char *)dev, NULL };

  return bench_proc_run(argv, log, 300.0, NULL) == 0 ? 0 : -EIO;
}

int bench_blockdev_mount(const char *dev, const char *mnt, const char *log)
{
  char *argv[] = { "mount", "-t", "ext4", "-o", "nodiscard", (char *)dev, (char *)mnt, NULL };

  if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
    return -errno;
  }
  return bench_proc_run(argv, log, 60.0, NULL) == 0 ? 0 : -EIO;
}

int bench_blockdev_umount(const char *mnt, const char *log)
{
  char *argv[] = { "umount", (char *)mnt, NULL };

  for (int i = 0; i < 50; i++) {
    if (bench_proc_run(argv, log, 60.0, NULL) == 0) {
      return 0;
    }
    usleep(100000);
  }
  return -EIO;
}
