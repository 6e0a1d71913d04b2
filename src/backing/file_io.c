/* SPDX-License-Identifier: MIT */
/* file_io.c: the file backing's data path. Aligned READ/WRITE/FLUSH go to the engine as
 * they are; what O_DIRECT cannot take (unaligned requests, a file's unaligned tail) runs
 * as a read-modify-write through aligned bounce buffers on an engine worker, under the
 * exclusive side of the backing's gate; TRIM and WRITE_ZEROES run on a worker as
 * fallocate/ioctl calls with fallbacks (a call with nothing to do is success: case C09).
 *
 * Gate invariant: while an exclusive op (RMW) runs, no other write, trim or zero runs on
 * the backing, so an RMW never writes back stale bytes of a neighbour's write (case C06).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "backing/file_impl.h"
#include "util/bytes.h"
#include "util/fdio.h"
#include "util/log.h"

enum { GATE_NONE, GATE_SHARED, GATE_EXCLUSIVE };

#define ZERO_CHUNK (1024u * 1024u)

/* True when a `kind` entry must wait. Caller holds gate_lock. */
static bool gate_busy(const struct file_backing *fb, uint32_t kind)
{
  return fb->gate_exclusive || (kind == GATE_EXCLUSIVE && fb->gate_shared > 0);
}

static void gate_enter(struct file_backing *fb, uint32_t kind)
{
  bool busy;

  if (kind == GATE_NONE) {
    return;
  }
  pthread_mutex_lock(&fb->gate_lock);
  busy = gate_busy(fb, kind);
  if (busy) {
    /* The holder may be a request still queued for an engine worker (--engine threads:
     * an aligned write holds the shared side in the queue): on a worker, this wait must
     * not take the last one (engine_wait_begin adds a worker then). */
    pthread_mutex_unlock(&fb->gate_lock);
    engine_wait_begin();
    pthread_mutex_lock(&fb->gate_lock);
  }
  while (gate_busy(fb, kind)) {
    pthread_cond_wait(&fb->gate_cond, &fb->gate_lock);
  }
  if (kind == GATE_EXCLUSIVE) {
    fb->gate_exclusive = true;
  } else {
    fb->gate_shared++;
  }
  pthread_mutex_unlock(&fb->gate_lock);
  if (busy) {
    engine_wait_end();
  }
}

static void gate_leave(struct file_backing *fb, uint32_t kind)
{
  if (kind == GATE_NONE) {
    return;
  }
  pthread_mutex_lock(&fb->gate_lock);
  if (kind == GATE_EXCLUSIVE) {
    assert(fb->gate_exclusive);
    fb->gate_exclusive = false;
    pthread_cond_broadcast(&fb->gate_cond);
  } else {
    assert(fb->gate_shared > 0);
    if (--fb->gate_shared == 0) {
      pthread_cond_broadcast(&fb->gate_cond);
    }
  }
  pthread_mutex_unlock(&fb->gate_lock);
}

static void op_finish(struct backing_op *op, int result)
{
  gate_leave((struct file_backing *)op->owner, op->gate);
  op->done(op, result);
}

/* ---- blocking helpers, run on engine workers ---- */

static int sync_for_fua(struct file_backing *fb, const struct backing_op *op)
{
  if (!(op->flags & BACKING_FLAG_FUA) || fb->base.opts.sync == SYNC_NONE) {
    return 0;
  }
  int rc = fb->base.opts.sync == SYNC_FSYNC ? fsync(fb->fd) : fdatasync(fb->fd);
  return rc < 0 ? -errno : 0;
}

/* The file's size now: below the export's size when the file was truncated while served
 * (reads past it fail with EIO). Anything but a regular file (a block device's st_size is
 * 0) and a failed fstat give UINT64_MAX (no end). */
static uint64_t file_end_now(const struct file_backing *fb)
{
  struct stat st;

  if (!fb->is_regular || fstat(fb->fd_buffered, &st) < 0) {
    return UINT64_MAX;
  }
  return (uint64_t)st.st_size;
}

/* An unaligned READ or WRITE through the page-cache fd, where O_DIRECT cannot address the
 * file's tail: the last partial block of a file whose size is not a multiple of the
 * alignment, or of one truncated while served. */
static int rmw_buffered(struct file_backing *fb, struct backing_op *op)
{
  ssize_t n;
  int rc;

  if (op->type == BACKING_OP_READ) {
    n = fdio_pread_full(fb->fd_buffered, op->buf, op->length, op->offset);
    rc = n < 0 ? (int)n : ((uint64_t)n < op->length ? -EIO : 0);
  } else {
    rc = fdio_pwrite_full(fb->fd_buffered, op->buf, op->length, op->offset);
  }
  return rc < 0 ? rc : sync_for_fua(fb, op);
}

/* An aligned O_DIRECT read for read-modify-write: 0, -errno, or -ENODATA when the file
 * ends inside [off, off+len) (it was truncated while served). */
static int rmw_read_aligned(struct file_backing *fb, void *buf, size_t len, uint64_t off)
{
  ssize_t n = fdio_pread_full(fb->fd, buf, len, off);
  return n < 0 ? (int)n : ((size_t)n < len ? -ENODATA : 0);
}

/* Read-modify-write of an unaligned READ or WRITE (bytes [off, off+len)). */
static ssize_t rmw_call(void *arg)
{
  struct backing_op *op = arg;
  struct file_backing *fb = (struct file_backing *)op->owner;
  uint64_t align = fb->base.geo.direct_alignment;
  uint64_t start = bytes_align_down(op->offset, align);
  uint64_t end = bytes_align_up(op->offset + op->length, align);
  size_t span = (size_t)(end - start);
  void *bounce = NULL;
  int rc = 0;

  if (fb->is_regular && end > fb->base.geo.size) {
    return rmw_buffered(fb, op);
  }
  if (posix_memalign(&bounce, align < 4096 ? 4096 : align, span) != 0) {
    return -ENOMEM;
  }
  if (op->type == BACKING_OP_READ) {
    rc = rmw_read_aligned(fb, bounce, span, start);
    if (rc == 0) {
      memcpy(op->buf, (char *)bounce + (op->offset - start), op->length);
    }
  } else {
    /* Read the partly covered first and last blocks, patch, write the span back. */
    if (op->offset != start) {
      rc = rmw_read_aligned(fb, bounce, align, start);
    }
    if (rc == 0 && op->offset + op->length != end && (end - align > start || op->offset == start)) {
      rc = rmw_read_aligned(fb, (char *)bounce + span - align, align, end - align);
    }
    if (rc == 0) {
      memcpy((char *)bounce + (op->offset - start), op->buf, op->length);
      rc = fdio_pwrite_full(fb->fd, bounce, span, start);
    }
    if (rc == 0) {
      rc = sync_for_fua(fb, op);
    }
  }
  free(bounce);
  if (rc == -ENODATA) { /* the file ends inside the span: its tail is the page cache's */
    return fb->is_regular ? rmw_buffered(fb, op) : -EIO;
  }
  return rc;
}

/* Writes zeroes over [off, off+len) with plain writes through the page-cache fd. */
static int write_zeroes_plain(struct file_backing *fb, uint64_t off, uint64_t len)
{
  void *zero = calloc(1, ZERO_CHUNK);
  int rc = 0;

  if (zero == NULL) {
    return -ENOMEM;
  }
  while (len > 0 && rc == 0) {
    size_t n = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;
    rc = fdio_pwrite_full(fb->fd_buffered, zero, n, off);
    off += n;
    len -= n;
  }
  free(zero);
  return rc;
}

static bool not_supported(int err)
{
  return err == EOPNOTSUPP || err == ENOTTY || err == ENOSYS || err == EINVAL;
}

/* Whether the block device has a write-zeroes command now: its request queue's
 * write_zeroes_max_bytes (sysfs; bytes per command; a partition has its disk's queue) is
 * above 0. Read at each call: the kernel sets it to 0 when the device refuses the command
 * (a loop device whose file refuses FALLOC_FL_ZERO_RANGE, a SCSI disk that rejects it). */
static bool block_has_write_zeroes(const struct file_backing *fb)
{
  static const char *const queue[] = {"queue", "../queue"}; /* a disk's, a partition's */
  unsigned long long max = 0;
  struct stat st;
  char path[96];
  bool found = false;

  if (fstat(fb->fd_buffered, &st) < 0) {
    return false;
  }
  for (size_t i = 0; i < sizeof queue / sizeof queue[0] && !found; i++) {
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/%s/write_zeroes_max_bytes",
             major(st.st_rdev), minor(st.st_rdev), queue[i]);
    FILE *f = fopen(path, "re");
    if (f != NULL) {
      found = fscanf(f, "%llu", &max) == 1;
      fclose(f);
    }
  }
  return found && max > 0;
}

/* Zeroes or discards the block-aligned middle of a block device's range. `fast` (spec
 * "NBD_CMD_FLAG_FAST_ZERO"): only what the device does without writing zeroes, else
 * -ENOTSUP with nothing changed. On a block device, fallocate PUNCH_HOLE|KEEP_SIZE is
 * blkdev_issue_zeroout with BLKDEV_ZERO_NOFALLBACK (Linux block/fops.c): the device's
 * write-zeroes command, which may unmap but reads back as zeroes, or EOPNOTSUPP. ZERO_RANGE
 * (and BLKZEROOUT) keep the blocks mapped but fall back to writing zero pages when the device
 * has no write-zeroes command (block/blk-lib.c). Both drop the range's cached pages, dirty
 * ones too, and zero its part of the partial ones before the device is asked, refusal or
 * not: so neither is called unless the device reports the command. When a device that
 * reports it refuses it, the range is zeroed by writing, as the kernel does for ZERO_RANGE:
 * its cache is gone by then, and only zeroes leave data that a reply can account for (most
 * drivers then report no command, so this happens once). */
static int block_range_call(struct file_backing *fb, uint64_t off, uint64_t len, bool discard,
                            bool no_hole, bool fast)
{
  uint64_t range[2] = {off, len};

  if (len == 0) {
    return 0;
  }
  if (fast) {
    int mode = no_hole ? FALLOC_FL_ZERO_RANGE : FALLOC_FL_PUNCH_HOLE;
    if (!block_has_write_zeroes(fb)) {
      return -ENOTSUP;
    }
    if (fallocate(fb->fd_buffered, mode | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0) {
      return 0;
    }
    if (errno != EOPNOTSUPP) {
      return not_supported(errno) ? -ENOTSUP : -errno;
    }
    /* refused after the cache was dropped: zeroed below, as without FAST_ZERO */
  }
  if (discard) {
    if (ioctl(fb->fd_buffered, BLKDISCARD, range) < 0 && !not_supported(errno)) {
      return -errno;
    }
    return 0; /* TRIM is advisory: a device that cannot discard did nothing, correctly */
  }
  if (!no_hole &&
      fallocate(fb->fd_buffered, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
                (off_t)len) == 0) {
    return 0;
  }
  if (ioctl(fb->fd_buffered, BLKZEROOUT, range) == 0) {
    return 0;
  }
  return not_supported(errno) ? write_zeroes_plain(fb, off, len) : -errno;
}

/* Zeroes the partial blocks at the edges of [off, off+len) on a block device by RMW. */
static int block_edge_zero(struct file_backing *fb, uint64_t off, uint64_t len)
{
  uint64_t lbs = fb->base.geo.logical_block_size;
  uint64_t start = bytes_align_down(off, lbs);
  void *bounce = NULL;
  int rc;

  assert(off + len <= start + lbs);
  if (posix_memalign(&bounce, 4096, lbs) != 0) {
    return -ENOMEM;
  }
  ssize_t n = fdio_pread_full(fb->fd, bounce, lbs, start);
  rc = n < 0 ? (int)n : ((uint64_t)n < lbs ? -EIO : 0);
  if (rc == 0) {
    memset((char *)bounce + (off - start), 0, len);
    rc = fdio_pwrite_full(fb->fd, bounce, lbs, start);
  }
  free(bounce);
  return rc;
}

/* TRIM or WRITE_ZEROES on a block device: [off, a) and [b, end) are partial blocks (either
 * may be empty), [a, b) whole blocks (maybe empty). Partial blocks are zeroed by RMW (a
 * TRIM leaves them: it is advisory); whole blocks go to the device. When no boundary lies
 * inside the range (a > b), it is one partial block. */
static int block_trim_zero(struct file_backing *fb, uint64_t off, uint64_t len, bool discard,
                           bool no_hole, bool fast)
{
  uint64_t lbs = fb->base.geo.logical_block_size;
  uint64_t end = off + len;
  uint64_t a = bytes_align_up(off, lbs), b = bytes_align_down(end, lbs);
  int rc = 0;

  if (a > b) {
    return discard ? 0 : block_edge_zero(fb, off, len);
  }
  if (fast && !discard && a < b) {
    /* Check the fast path first, so a refusal changes nothing. */
    rc = block_range_call(fb, a, b - a, false, no_hole, true);
  }
  if (rc == 0 && !discard && a > off) {
    rc = block_edge_zero(fb, off, a - off);
  }
  if (rc == 0 && a < b && !(fast && !discard)) {
    rc = block_range_call(fb, a, b - a, discard, no_hole, false);
  }
  if (rc == 0 && !discard && end > b) {
    rc = block_edge_zero(fb, b, end - b);
  }
  return rc;
}

/* After WRITE_ZEROES of a file up to `end` (bytes): fallocate with KEEP_SIZE leaves a file
 * truncated shorter while served as it is, and reads of the zeroed range past its end
 * would fail although the request succeeded (spec: "Write zeroes": reads return zeroes).
 * Grows the file to `end`, as a WRITE ending there does, without ever shrinking it (a size
 * fallocate, else one zero byte at end - 1, inside the zeroed range, which the fence
 * keeps other writes away from). Returns 0 or -errno. */
static int zeroes_reach_end(struct file_backing *fb, uint64_t end)
{
  if (file_end_now(fb) >= end) {
    return 0;
  }
  if (fallocate(fb->fd_buffered, 0, (off_t)(end - 1), 1) == 0) {
    return 0;
  }
  if (!not_supported(errno)) {
    return -errno;
  }
  return fdio_pwrite_full(fb->fd_buffered, "", 1, end - 1);
}

static ssize_t trim_zero_call(void *arg)
{
  struct backing_op *op = arg;
  struct file_backing *fb = (struct file_backing *)op->owner;
  bool discard = op->type == BACKING_OP_TRIM;
  bool no_hole = (op->flags & BACKING_FLAG_NO_HOLE) != 0;
  bool fast = (op->flags & BACKING_FLAG_FAST_ZERO) != 0;
  uint64_t off = op->offset, len = op->length;
  int rc = 0;

  if (fb->is_block) {
    rc = block_trim_zero(fb, off, len, discard, no_hole, fast);
  } else if (discard) {
    if (fallocate(fb->fd_buffered, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
                  (off_t)len) < 0 && !not_supported(errno)) {
      rc = -errno;
    }
  } else {
    int mode = no_hole ? FALLOC_FL_ZERO_RANGE : FALLOC_FL_PUNCH_HOLE;
    if (fallocate(fb->fd_buffered, mode | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0) {
      if (!not_supported(errno)) {
        rc = -errno;
      } else if (mode == FALLOC_FL_PUNCH_HOLE &&
                 fallocate(fb->fd_buffered, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                           (off_t)off, (off_t)len) == 0) {
        rc = 0;
      } else if (fast) {
        rc = -ENOTSUP; /* only plain writes are left: not fast, and nothing was changed */
      } else {
        rc = write_zeroes_plain(fb, off, len);
      }
    }
    if (rc == 0) {
      rc = zeroes_reach_end(fb, off + len);
    }
  }
  return rc < 0 ? rc : sync_for_fua(fb, op);
}

/* Where the map may report holes that read as zeroes: the file's size rounded down to the
 * logical block size when the file was truncated shorter than the export while served
 * (reads past its end fail with EIO, and extent lengths must stay multiples of the minimum
 * block size: spec "BLOCK_STATUS" extents), else no limit (UINT64_MAX). */
static uint64_t zero_limit(const struct file_backing *fb)
{
  uint64_t eof = file_end_now(fb), lbs = fb->base.geo.logical_block_size;

  if (eof >= fb->base.geo.size) {
    return UINT64_MAX;
  }
  return lbs > 1 ? bytes_align_down(eof, lbs) : eof;
}

/* The allocation map of [offset, offset+length) from SEEK_DATA/SEEK_HOLE: holes read as
 * zeroes (HOLE|ZERO), data is reported as allocated with unknown contents, and so is
 * everything from zero_limit on (a file truncated while served). */
static ssize_t extents_call(void *arg)
{
  struct backing_op *op = arg;
  struct file_backing *fb = (struct file_backing *)op->owner;
  struct backing_extent *ex = op->buf;
  uint64_t off = op->offset, end = op->offset + op->length;
  uint64_t zlimit = zero_limit(fb);
  uint32_t n = 0;

  while (off < end && n < op->extent_max) {
    uint64_t stop;
    if (off >= zlimit) { /* past the end of a shrunk file: data (reads fail there) */
      ex[n++] = (struct backing_extent){.length = end - off, .flags = 0};
      break;
    }
    off_t data = lseek(fb->fd_buffered, (off_t)off, SEEK_DATA);
    if (data < 0 && errno != ENXIO) {
      break; /* no map here: what is reported so far stands, the rest is data */
    }
    if (data < 0 || (uint64_t)data > off) { /* a hole, up to the data or the end */
      stop = data < 0 || (uint64_t)data > end ? end : (uint64_t)data;
      stop = stop > zlimit ? zlimit : stop;
      ex[n++] = (struct backing_extent){.length = stop - off,
                                        .flags = BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO};
      off = stop;
      continue;
    }
    off_t hole = lseek(fb->fd_buffered, (off_t)off, SEEK_HOLE);
    stop = hole < 0 || (uint64_t)hole > end || (uint64_t)hole <= off ? end : (uint64_t)hole;
    stop = stop >= zlimit ? end : stop; /* data up to the shrunk end runs on past it */
    ex[n++] = (struct backing_extent){.length = stop - off, .flags = 0};
    off = stop;
  }
  if (n == 0) {
    ex[n++] = (struct backing_extent){.length = end - op->offset, .flags = 0};
  }
  op->extent_count = n;
  return 0;
}

static ssize_t cache_call(void *arg)
{
  struct backing_op *op = arg;
  struct file_backing *fb = (struct file_backing *)op->owner;

  if (!cache_mode_is_direct(fb->base.opts.cache)) {
    int rc = posix_fadvise(fb->fd_buffered, (off_t)op->offset, (off_t)op->length,
                           POSIX_FADV_WILLNEED);
    (void)rc; /* a hint: failing to prefetch is not an error (spec: NBD_CMD_CACHE) */
  }
  return 0;
}

/* ---- completions ---- */

static struct engine *op_engine(struct file_backing *fb, const struct backing_op *op)
{
  return op->engine != NULL ? op->engine : fb->base.opts.engine;
}

/* For work that runs on an engine worker (RMW, TRIM, WRITE_ZEROES): the worker takes the
 * gate (either side) just before it runs it, so the caller's thread does not wait for it
 * (an event loop still waits at the shared side for an aligned write while an RMW runs),
 * and no request waits in the worker queue holding the gate: a worker at the gate waits
 * for work that is running or in the kernel. (With --engine threads an aligned write is
 * queued holding the shared side; engine_wait_begin in gate_enter covers that case.) */
static ssize_t gated_call(void *arg)
{
  struct backing_op *op = arg;
  struct file_backing *fb = (struct file_backing *)op->owner;

  gate_enter(fb, op->gate);
  return op->type == BACKING_OP_READ || op->type == BACKING_OP_WRITE ? rmw_call(op)
                                                                     : trim_zero_call(op);
}

static void rw_complete(struct engine_req *req, ssize_t result)
{
  struct backing_op *op = (struct backing_op *)((char *)req - offsetof(struct backing_op, ereq));
  struct file_backing *fb = (struct file_backing *)op->owner;

  if (result < 0) {
    op_finish(op, (int)result);
    return;
  }
  if (result == 0) {
    op_finish(op, op->type == BACKING_OP_WRITE ? -ENOSPC : -EIO);
    return;
  }
  op->progress += (uint64_t)result;
  if (op->progress < op->length) { /* short transfer: submit the rest */
    req->buf = (char *)op->buf + op->progress;
    req->offset = op->offset + op->progress;
    req->len = (size_t)(op->length - op->progress);
    int rc = engine_submit(op_engine(fb, op), req);
    if (rc < 0) {
      op_finish(op, rc);
    }
    return;
  }
  op_finish(op, 0);
}

static void call_complete(struct engine_req *req, ssize_t result)
{
  struct backing_op *op = (struct backing_op *)((char *)req - offsetof(struct backing_op, ereq));
  op_finish(op, result < 0 ? (int)result : 0);
}

/* Inline page-cache writes. io_uring cannot write to ext4's page cache without blocking
 * (ext4 has no IOCB_NOWAIT buffered writes), so it hands every such write to an io-wq
 * worker: two context switches per 4K write. A pwrite from the event loop itself is a copy
 * into the page cache: at 4 connections x QD32 of 4K random writes it took the loop from
 * 70K to 127K IOPS and from 12.8 to 6.2 us of server CPU per write (docs/performance.md).
 * Its risk is a pwrite that blocks (the journal, dirty-page throttling) and stalls the
 * loop's other connections: fb->inline_stalls (stall_budget.h) turns inline writes off
 * for STALL_BACKOFF_NS once writes slower than STALL_COUNT_NS have blocked the loops for
 * more than STALL_BUDGET_NS in a STALL_WINDOW_NS window; on tmpfs and ramfs, which have
 * none of those, they stay on (file_impl.h, no_writeback).
 * Only for event loops (op->nonblocking), the page cache (--cache writeback or
 * writethrough: a write-through write's sync is the group commit's, after this returns),
 * plain writes (not RWF_DSYNC: those wait for the disk) of at most WRITE_INLINE_MAX bytes. */
#define WRITE_INLINE_MAX (256u * 1024u)

static long long monotonic_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Writes req (an ENGINE_WRITE of op, the gate held) with pwrite on the calling thread
 * when the rules above allow; then completes op (rw_complete) and returns true. Returns
 * false when req must go to the engine instead. */
static bool write_inline(struct file_backing *fb, struct backing_op *op, struct engine_req *req)
{
  long long start, took;
  ssize_t n;

  if (req->opcode != ENGINE_WRITE || req->rw_flags != 0 || !op->nonblocking ||
      cache_mode_is_direct(fb->base.opts.cache) || op->length > WRITE_INLINE_MAX) {
    return false;
  }
  start = monotonic_ns();
  if (!fb->no_writeback && !stall_budget_allows(&fb->inline_stalls, start)) {
    return false;
  }
  n = pwrite(req->fd, req->buf, req->len, (off_t)req->offset);
  took = monotonic_ns() - start;
  if (!fb->no_writeback && stall_budget_charge(&fb->inline_stalls, start, took)) {
    log_debug("file: page-cache writes blocked the event loops for more than %lld ms in "
              "%lld ms (the last took %lld us); writes go through io_uring for %lld s",
              STALL_BUDGET_NS / 1000000, STALL_WINDOW_NS / 1000000, took / 1000,
              STALL_BACKOFF_NS / 1000000000);
  }
  rw_complete(req, n < 0 ? -errno : n); /* a short write resubmits the rest to the engine */
  return true;
}

static bool needs_rmw(const struct file_backing *fb, const struct backing_op *op)
{
  uint64_t align = fb->base.geo.direct_alignment;

  if (align <= 1) {
    return false;
  }
  return (op->offset % align) != 0 || (op->length % align) != 0 ||
         ((uintptr_t)op->buf % align) != 0;
}

/* True when zeroing must patch partial blocks by RMW (block devices only). */
static bool zero_needs_exclusive(const struct file_backing *fb, const struct backing_op *op)
{
  uint64_t lbs = fb->base.geo.logical_block_size;
  return fb->is_block && op->type == BACKING_OP_WRITE_ZEROES &&
         ((op->offset % lbs) != 0 || (op->length % lbs) != 0);
}

int file_io_submit(struct backing *b, struct backing_op *op)
{
  struct file_backing *fb = (struct file_backing *)b;
  struct engine_req *req = &op->ereq;
  bool write = op->type == BACKING_OP_WRITE || op->type == BACKING_OP_TRIM ||
               op->type == BACKING_OP_WRITE_ZEROES;
  int rc;

  if (write && fb->base.opts.read_only) {
    return -EPERM;
  }
  memset(req, 0, sizeof *req);
  op->owner = b;
  op->progress = 0;
  op->gate = GATE_NONE;
  req->fd = fb->fd;
  switch (op->type) {
  case BACKING_OP_READ:
  case BACKING_OP_WRITE:
    if (op->length == 0) {
      op->done(op, 0);
      return 0;
    }
    if (needs_rmw(fb, op)) {
      op->gate = write ? GATE_EXCLUSIVE : GATE_NONE;
      req->opcode = ENGINE_CALL;
      req->call = rmw_call;
      req->arg = op;
      req->complete = call_complete;
      break;
    }
    op->gate = write ? GATE_SHARED : GATE_NONE;
    req->opcode = write ? ENGINE_WRITE : ENGINE_READ;
    req->buf = op->buf;
    req->fixed_buf = op->fixed_buf; /* only op->engine's ring, on its own thread, reads it */
    req->offset = op->offset;
    req->len = (size_t)op->length;
    if (write && (op->flags & BACKING_FLAG_FUA) && fb->base.opts.sync != SYNC_NONE) {
      req->rw_flags = fb->base.opts.sync == SYNC_FSYNC ? RWF_SYNC : RWF_DSYNC;
    }
    req->complete = rw_complete;
    break;
  case BACKING_OP_FLUSH:
    if (fb->base.opts.sync == SYNC_NONE) {
      op->done(op, 0);
      return 0;
    }
    if (op->sync_channel >= BACKING_SYNC_CHANNELS || fb->sync_fd[op->sync_channel] < 0) {
      return -EINVAL;
    }
    req->fd = fb->sync_fd[op->sync_channel];
    req->opcode = fb->base.opts.sync == SYNC_FSYNC ? ENGINE_FSYNC : ENGINE_FDATASYNC;
    req->complete = call_complete;
    break;
  case BACKING_OP_BLOCK_STATUS:
  case BACKING_OP_CACHE:
    if (op->type == BACKING_OP_CACHE && op->length == 0) {
      op->done(op, 0); /* nothing to prefetch, like the other zero-length commands */
      return 0;
    }
    if (op->length == 0 || (op->type == BACKING_OP_BLOCK_STATUS && op->extent_max == 0)) {
      return -EINVAL;
    }
    req->opcode = ENGINE_CALL;
    req->call = op->type == BACKING_OP_CACHE ? cache_call : extents_call;
    req->arg = op;
    req->complete = call_complete;
    break;
  case BACKING_OP_TRIM:
  case BACKING_OP_WRITE_ZEROES:
    if (op->length == 0) {
      op->done(op, 0);
      return 0;
    }
    op->gate = zero_needs_exclusive(fb, op) ? GATE_EXCLUSIVE : GATE_SHARED;
    req->opcode = ENGINE_CALL;
    req->call = trim_zero_call;
    req->arg = op;
    req->complete = call_complete;
    break;
  default:
    return -EINVAL;
  }
  if (op->gate != GATE_NONE && req->opcode == ENGINE_CALL) {
    /* Every caller, blocking or not, so that no gated call waits at the gate for a request
     * queued behind it (a TLS connection's thread holding the gate while its RMW waits in
     * the queue would hang the gated calls of event-loop connections queued before it). */
    assert(req->call == rmw_call || req->call == trim_zero_call);
    req->call = gated_call; /* the worker takes the gate; op_finish releases it */
    return engine_submit(fb->base.opts.engine, req);
  }
  gate_enter(fb, op->gate);
  if (write_inline(fb, op, req)) {
    return 0;
  }
  rc = engine_submit(op_engine(fb, op), req);
  if (rc < 0) {
    gate_leave(fb, op->gate);
  }
  return rc;
}
