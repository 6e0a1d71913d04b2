/* SPDX-License-Identifier: MIT */
/* file.c: opening a file backing: kind, size and sector geometry, the one-server lock.
 * The data path is in file_io.c. */
#include "backing/file.h"
#include "util/file_ident.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backing/file_impl.h"
#include "util/bytes.h"
#include "util/fd_budget.h"
#include "util/log.h"

static void file_close(struct backing *b);

static const struct backing_vtable file_vtable = {
  .kind = "file",
  .submit = file_io_submit,
  .refresh_size = NULL,
  .close = file_close,
};

/* QEMU's image locks (block/file-posix.c, raw_apply_lock_bytes and raw_check_lock_bytes):
 * shared OFD locks on single bytes, 100 + bit for each permission a user holds and 200 + bit
 * for each it does not share; bits (BLK_PERM_*) 0 "consistent read", 1 "write", 3 "resize".
 * A user first locks its bytes, then checks that nobody else locks the "not shared" byte of
 * a permission it holds, nor holds a permission it does not share (the check after the
 * locks closes the race with a user starting meanwhile: of two, at least one fails). */
#define QEMU_LOCK_PERM 100
#define QEMU_LOCK_SHARED 200
#define QEMU_PERM_CONSISTENT_READ (1u << 0)
#define QEMU_PERM_WRITE (1u << 1)
#define QEMU_PERM_RESIZE (1u << 3)
#define QEMU_PERM_BITS 4

/* A shared (F_RDLCK) or exclusive (F_WRLCK) OFD lock on len bytes at `start` (len 0: to
 * the end). Returns 0, -EBUSY when another open file description's lock conflicts. */
static int lock_range(int fd, short type, off_t start, off_t len)
{
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};

  if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
    return (errno == EAGAIN || errno == EACCES) ? -EBUSY : -errno;
  }
  return 0;
}

/* True when another open file description holds any lock on the byte at `at`. */
static bool byte_locked_elsewhere(int fd, off_t at)
{
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};

  return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

/* The one-server lock, in QEMU's protocol (the bytes as /proc/locks shows them):
 *  - writable: holds "consistent read" and "write", does not share "write" or "resize"
 *    (100, 101, 201, 203): qemu-nbd's bytes (100, 101, 203) and a QEMU VM disk's (100,
 *    101, 201) together. QEMU readers that share writing (qemu-img info/map/compare/
 *    convert -U, qemu-io -r, qemu-nbd -r) open the image beside it; every writer (another
 *    diskgate, qemu-nbd, qemu-io, a VM) and every reader that does not share writing
 *    (qemu-img convert or compare without -U, a read-only diskgate) is refused, and it
 *    does not start beside any of them. qemu-nbd shares "write", so a second writer that
 *    shares it too starts beside qemu-nbd, not beside diskgate.
 *  - read-only: holds "consistent read", does not share "write" or "resize" (100, 201,
 *    203), as a read-only QEMU user that keeps the image stable.
 *  - read-only with force_share (QEMU's -U, force-share=on): holds "consistent read" and
 *    shares everything (100): it opens beside writers and they open beside it.
 * Returns 0, -EBUSY, -errno. The locks go with the descriptor's last close. */
static int lock_image(int fd, bool read_only, bool force_share)
{
  unsigned perm = QEMU_PERM_CONSISTENT_READ | (read_only ? 0 : QEMU_PERM_WRITE);
  unsigned unshared = force_share ? 0 : QEMU_PERM_WRITE | QEMU_PERM_RESIZE;
  int rc = 0;

  assert(!force_share || read_only);
  for (unsigned i = 0; i < QEMU_PERM_BITS && rc == 0; i++) {
    if (perm & (1u << i)) {
      rc = lock_range(fd, F_RDLCK, QEMU_LOCK_PERM + i, 1);
    }
    if (rc == 0 && (unshared & (1u << i))) {
      rc = lock_range(fd, F_RDLCK, QEMU_LOCK_SHARED + i, 1);
    }
  }
  for (unsigned i = 0; i < QEMU_PERM_BITS && rc == 0; i++) {
    if (((perm & (1u << i)) && byte_locked_elsewhere(fd, QEMU_LOCK_SHARED + i)) ||
        ((unshared & (1u << i)) && byte_locked_elsewhere(fd, QEMU_LOCK_PERM + i))) {
      rc = -EBUSY; /* a user holds what we do not share, or does not share what we hold */
    }
  }
  return rc;
}

static bool read_sysfs_flag(const struct stat *st, const char *attr)
{
  char path[128];
  int v = 0;
  FILE *f;

  snprintf(path, sizeof path, "/sys/dev/block/%u:%u/queue/%s", major(st->st_rdev),
           minor(st->st_rdev), attr);
  f = fopen(path, "r");
  if (f == NULL) {
    return false;
  }
  if (fscanf(f, "%d", &v) != 1) {
    v = 0;
  }
  fclose(f);
  return v != 0;
}

static int block_geometry(int fd, const struct stat *st, struct backing_geometry *geo)
{
  uint64_t size = 0;
  int lbs = 0;
  unsigned int pbs = 0;

  if (ioctl(fd, BLKGETSIZE64, &size) < 0 || ioctl(fd, BLKSSZGET, &lbs) < 0) {
    return -errno;
  }
  if (ioctl(fd, BLKPBSZGET, &pbs) < 0 || pbs < (unsigned)lbs) {
    pbs = (unsigned)lbs;
  }
  geo->size = size;
  geo->logical_block_size = (uint32_t)lbs;
  geo->physical_block_size = pbs < 4096 ? 4096 : pbs;
  if (!bytes_is_power_of_two(geo->physical_block_size)) {
    geo->physical_block_size = 4096;
  }
  geo->rotational = read_sysfs_flag(st, "rotational");
  return 0;
}

/* True when the file at fd lives on tmpfs or ramfs, whose page cache has no writeback. */
static bool file_has_no_writeback(int fd)
{
  struct statfs sf;

  return fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

/* The O_DIRECT alignment of a regular file: statx's dio_offset_align where the kernel
 * reports it, else the file system's block size. */
static uint32_t regular_direct_alignment(int fd, const struct stat *st)
{
  struct statx stx;

  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align > 0) {
    uint32_t a = stx.stx_dio_offset_align;
    return a < stx.stx_dio_mem_align ? stx.stx_dio_mem_align : a;
  }
  return st->st_blksize > 0 ? (uint32_t)st->st_blksize : 4096;
}

static int probe_geometry(struct file_backing *fb, const struct stat *st)
{
  struct backing_geometry *geo = &fb->base.geo;
  bool direct = cache_mode_is_direct(fb->base.opts.cache);
  int rc = 0;

  if (fb->is_block) {
    rc = block_geometry(fb->fd, st, geo);
    geo->direct_alignment = direct ? geo->logical_block_size : 1;
  } else if (fb->is_regular) {
    geo->size = (uint64_t)st->st_size;
    geo->logical_block_size = 512;
    geo->physical_block_size = 4096;
    geo->direct_alignment = direct ? regular_direct_alignment(fb->fd, st) : 1;
  } else { /* character device: a size only if the driver reports one */
    off_t end = lseek(fb->fd, 0, SEEK_END);
    uint64_t size = 0;
    if (ioctl(fb->fd, BLKGETSIZE64, &size) == 0) {
      geo->size = size;
    } else if (end > 0) {
      geo->size = (uint64_t)end;
    } else {
      return -EINVAL;
    }
    geo->logical_block_size = 512;
    geo->physical_block_size = 4096;
    geo->direct_alignment = direct ? 512 : 1;
  }
  geo->can_trim = true;
  geo->can_zero = true;
  geo->can_fua = true;
  geo->can_multi_conn = true; /* one fd, one page cache: a sync covers all connections */
  geo->can_extents = fb->is_regular; /* SEEK_DATA/SEEK_HOLE; devices report all data */
  geo->can_cache = true;
  geo->can_fast_zero = true;
  return rc;
}

static void sync_channels_close(struct file_backing *fb);

/* A new open file description, with `flags`, of the file fb->fd_buffered refers to: through
 * /proc/self/fd (the very inode the checks saw); without /proc (a chroot or a minimal
 * container), by `path`, checked to be the same inode. Returns the fd, or -errno: -EAGAIN
 * when path now names another file (case C18), EINVAL from open for O_DIRECT unsupported. */
static int reopen_same(const struct file_backing *fb, const char *path, int flags)
{
  struct stat now, then;
  char fdpath[64];
  int fd;

  snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fb->fd_buffered);
  fd = open(fdpath, flags | O_CLOEXEC);
  if (fd >= 0) {
    return fd;
  }
  if (errno != ENOENT) {
    return -errno;
  }
  fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) {
    return -errno;
  }
  if (fstat(fd, &now) < 0 || fstat(fb->fd_buffered, &then) < 0 || now.st_dev != then.st_dev ||
      now.st_ino != then.st_ino) {
    close(fd);
    return -EAGAIN;
  }
  return fd;
}

/* Opens the sync channels (file_impl.h: sync_fd): one per BACKING_SYNC_CHANNELS when the
 * backing is writable and syncs, else only channel 0 (fd). Each extra channel is a new open
 * file description of the same file (reopen_same), read-only: fsync and fdatasync need no
 * write access. When they cannot be opened (no descriptors left, say), or opening them would
 * leave fewer than FD_BUDGET_RESERVE descriptors free (fd_budget.h), the backing has
 * channel 0 only, and base.start_note says so for the start-up log: syncs then run one at a
 * time. */
static void sync_channels_open(struct file_backing *fb, const char *path)
{
  unsigned n = fb->base.opts.read_only || fb->base.opts.sync == SYNC_NONE
                   ? 1
                   : BACKING_SYNC_CHANNELS;

  fb->sync_fd[0] = fb->fd;
  fb->base.geo.sync_channels = 1;
  if (n > 1 && !fd_budget_allows(n - 1)) {
    /* the listeners and the first connections come first (fd_budget.h) */
    char why[128];
    snprintf(fb->base.start_note, sizeof fb->base.start_note,
             "file: %s: syncs run one at a time, not concurrently",
             fd_budget_describe(why, sizeof why));
    return;
  }
  for (unsigned i = 1; i < n; i++) {
    int fd = reopen_same(fb, path, O_RDONLY);
    if (fd < 0) {
      snprintf(fb->base.start_note, sizeof fb->base.start_note,
               "file: cannot open the image again for concurrent syncs (%s); syncs run one "
               "at a time", strerror(-fd));
      sync_channels_close(fb);
      return;
    }
    fb->sync_fd[i] = fd;
  }
  fb->base.geo.sync_channels = n;
}

/* True when the kernel marks the block device at fd read-only (BLKROGET: a read-only loop
 * device, a write-protected disk, `blockdev --setro`). Errors count as writable. */
static bool block_device_is_read_only(int fd)
{
  int ro = 0;

  return ioctl(fd, BLKROGET, &ro) == 0 && ro != 0;
}

/* Claims the writable block device fb->fd_buffered refers to, as mount and mkfs do: it is
 * reopened with O_EXCL (the same inode, whatever the path is now), which the kernel refuses
 * with EBUSY while the device is mounted, part of a RAID, device-mapper or swap, or open
 * with O_EXCL by another process (for a whole disk: also while one of its partitions is).
 * The claim lasts as long as the descriptor, so none of them can take the device while it
 * is served. Returns 0 (fb->fd_buffered replaced), -ETXTBSY when the device is in use, or
 * another -errno. */
static int block_device_claim(struct file_backing *fb, const char *path)
{
  int fd = reopen_same(fb, path, O_RDWR | O_EXCL);

  if (fd < 0) {
    return fd == -EBUSY ? -ETXTBSY : fd;
  }
  close(fb->fd_buffered);
  fb->fd_buffered = fd;
  return 0;
}

/* Closes the channels sync_channels_open opened (not fd itself). */
static void sync_channels_close(struct file_backing *fb)
{
  for (unsigned i = 1; i < BACKING_SYNC_CHANNELS; i++) {
    if (fb->sync_fd[i] >= 0) {
      close(fb->sync_fd[i]);
      fb->sync_fd[i] = -1;
    }
  }
}

/* Opens fb->fd_buffered on path with *flags (O_RDONLY or O_RDWR). A write-protected disk
 * (sd, sr) or a file on a read-only mount refuses O_RDWR itself: it is served read-only, as
 * nbdkit's file plugin does, with a log line, and *flags becomes O_RDONLY. Returns 0 or
 * -errno (fb->fd_buffered then holds it too). */
static int file_open_buffered(struct file_backing *fb, const char *path, int *flags)
{
  fb->fd_buffered = file_open_checked(path, *flags);
  if (fb->fd_buffered == -EROFS && !fb->base.opts.read_only) {
    *flags = O_RDONLY;
    fb->fd_buffered = file_open_checked(path, *flags);
    if (fb->fd_buffered >= 0) {
      char shown[LOG_SHOWN_MAX];
      log_info("%s is on read-only storage: serving it read-only",
               log_escape_str(shown, sizeof shown, path));
      fb->base.opts.read_only = true;
    }
  }
  return fb->fd_buffered < 0 ? fb->fd_buffered : 0;
}

/* Sets fb->is_block and fb->is_regular from fstat of fb->fd_buffered (into *st). A block
 * device the kernel refuses every write to (EPERM), although opening it for writing works,
 * is reopened read-only and served so (*flags O_RDONLY), so clients see
 * NBD_FLAG_READ_ONLY instead of a writable disk whose every write fails (as nbdkit's file
 * plugin falls back to read-only). A writable block device is claimed (block_device_claim)
 * unless opts.allow_busy. Returns 0, or -EISDIR, -EINVAL (not a regular file, block or
 * character device), -ETXTBSY (a block device in use) or another -errno. */
static int file_check_kind(struct file_backing *fb, const char *path, struct stat *st,
                           int *flags)
{
  if (fstat(fb->fd_buffered, st) < 0) {
    return -errno;
  }
  if (S_ISDIR(st->st_mode)) {
    return -EISDIR;
  }
  fb->is_block = S_ISBLK(st->st_mode);
  fb->is_regular = S_ISREG(st->st_mode);
  if (fb->is_block && !fb->base.opts.read_only && block_device_is_read_only(fb->fd_buffered)) {
    int ro = reopen_same(fb, path, O_RDONLY); /* the same inode, whatever the path is now */
    if (ro < 0) {
      return ro;
    }
    char shown[LOG_SHOWN_MAX];
    log_info("%s is a read-only block device: serving it read-only",
             log_escape_str(shown, sizeof shown, path));
    close(fb->fd_buffered);
    fb->fd_buffered = ro;
    fb->base.opts.read_only = true;
    *flags = O_RDONLY;
  }
  if (!fb->is_block && !fb->is_regular && !S_ISCHR(st->st_mode)) {
    return -EINVAL;
  }
  if (fb->is_block && !fb->base.opts.read_only && !fb->base.opts.allow_busy) {
    return block_device_claim(fb, path);
  }
  return 0;
}

int backing_file_open(const char *path, const struct backing_options *opts,
                      struct backing **out)
{
  struct file_backing *fb;
  struct stat st;
  int flags = opts->read_only ? O_RDONLY : O_RDWR;
  int rc;

  if (opts->engine == NULL) {
    return -EINVAL;
  }
  fb = calloc(1, sizeof *fb);
  if (fb == NULL) {
    return -ENOMEM;
  }
  fb->base.vt = &file_vtable;
  fb->base.opts = *opts;
  fb->fd = -1;
  for (unsigned i = 0; i < BACKING_SYNC_CHANNELS; i++) {
    fb->sync_fd[i] = -1;
  }
  rc = file_open_buffered(fb, path, &flags);
  if (rc == 0) {
    rc = file_check_kind(fb, path, &st, &flags);
  }
  if (rc < 0) {
    goto fail;
  }
  rc = lock_image(fb->fd_buffered, fb->base.opts.read_only, fb->base.opts.force_share);
  if (rc < 0) {
    goto fail;
  }
  if (fb->base.opts.force_share && fb->base.opts.read_only) {
    char shown[LOG_SHOWN_MAX];
    log_info("%s: shared with writers (--force-share): another process may change it while "
             "it is served", log_escape_str(shown, sizeof shown, path));
  }
  if (cache_mode_is_direct(opts->cache)) {
    fb->fd = reopen_same(fb, path, flags | O_DIRECT);
    if (fb->fd < 0) {
      rc = fb->fd == -EINVAL ? -ENOTSUP : fb->fd;
      fb->fd = -1;
      goto fail;
    }
  } else {
    fb->fd = fb->fd_buffered;
  }
  rc = probe_geometry(fb, &st);
  if (rc < 0) {
    goto fail;
  }
  sync_channels_open(fb, path);
  pthread_mutex_init(&fb->gate_lock, NULL);
  stall_budget_init(&fb->inline_stalls);
  fb->no_writeback = fb->is_regular && file_has_no_writeback(fb->fd_buffered);
  pthread_cond_init(&fb->gate_cond, NULL);
  /* A description for clients, which never reveals the host's paths. */
  fb->base.description = strdup(fb->is_block ? "block device" : fb->is_regular ? "raw file"
                                                                               : "character device");
  if (fb->base.description == NULL) {
    file_close(&fb->base);
    return -ENOMEM;
  }
  *out = &fb->base;
  return 0;

fail:
  sync_channels_close(fb);
  if (fb->fd >= 0 && fb->fd != fb->fd_buffered) {
    close(fb->fd);
  }
  if (fb->fd_buffered >= 0) {
    close(fb->fd_buffered);
  }
  free(fb);
  return rc;
}

static void file_close(struct backing *b)
{
  struct file_backing *fb = (struct file_backing *)b;

  /* A last sync at shutdown, so that nothing is left only in the cache. If it fails, writes
   * that no client flushed may be lost: the operator is told. */
  if (!fb->base.opts.read_only && fb->base.opts.sync != SYNC_NONE &&
      fdatasync(fb->fd_buffered) < 0) {
    log_error("file: the last sync at shutdown failed: %s (writes that no client flushed may "
              "not be on the disk)",
              strerror(errno));
  }
  sync_channels_close(fb);
  if (fb->fd != fb->fd_buffered) {
    close(fb->fd);
  }
  close(fb->fd_buffered); /* drops the OFD lock */
  pthread_mutex_destroy(&fb->gate_lock);
  pthread_cond_destroy(&fb->gate_cond);
  free(fb->base.description);
  free(fb);
}
