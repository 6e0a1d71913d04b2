/* SPDX-License-Identifier: MIT */
/* rbd.c: the Ceph RBD backing, on librbd's asynchronous API.
 *
 * One rados cluster handle, one ioctx and one image handle per backing, shared by every
 * connection of the export (librbd image handles are thread-safe), so a FLUSH through any
 * connection covers the writes of all of them: can_multi_conn.
 *
 * Operations map one to one onto librbd:
 *   READ          rbd_aio_read
 *   WRITE         rbd_aio_write2 (then rbd_aio_flush when FUA, see below)
 *   FLUSH         rbd_aio_flush (sync=none: done at once, see below)
 *   TRIM          rbd_aio_discard (librbd may skip pieces smaller than its
 *                 rbd_discard_granularity_bytes: TRIM only promises "may read back as anything")
 *   WRITE_ZEROES  rbd_aio_write_zeroes: flags 0 = librbd's discard with granularity 0, which
 *                 zeroes partial objects exactly and removes whole ones (case C16: never a
 *                 bare discard); NO_HOLE = RBD_WRITE_ZEROES_FLAG_THICK_PROVISION (write-same
 *                 of zeroes: the range stays allocated).
 *   BLOCK_STATUS  rbd_diff_iterate2 (whole objects, parent included) on an engine worker:
 *                 librbd has no asynchronous diff. Only with fast-diff (geo.can_extents).
 *
 * FUA: geo.can_fua is true and the backing does it itself: the write, then rbd_aio_flush,
 * then done. (The server's group commit, server/durability.c, currently sends FUA writes as
 * a plain write followed by a shared BACKING_OP_FLUSH, which is the same librbd calls.)
 * librbd's default cache policy (writearound, "writethrough until flush") completes writes
 * before the OSDs have them once a flush has been seen, so the flush is what makes the
 * write durable; with rbd_cache_policy=writeback the data even stays in librbd's memory
 * until a flush or its dirty age. With sync=none FUA is ignored and FLUSH flushes nothing
 * (librbd then stays in writethrough mode, since it never sees a flush).
 * tests/rbd/crash.sh (kill -9) checks what an acknowledged FUA or FLUSH promises.
 *
 * Threads: submit may be called from any thread, concurrently. librbd runs every
 * completion callback of one image on one strand (serially, on a librbd thread); op->done
 * is called from there, so it must not block. Issuing new librbd I/O from a callback is
 * allowed (the FUA flush does it; so may the caller's done). Ops with nothing to do
 * (length 0; FLUSH with sync=none) call done on the calling thread before submit returns,
 * as backing.h allows; librbd is not involved (it asserts on a zero-length read into a
 * NULL buffer).
 *
 * Size: rbd_get_size at open and in refresh_size. Besides, an update watcher
 * (rbd_update_watch) re-reads the size whenever librbd sees the image header change (for
 * example `rbd resize` by another client), so geo.size follows resizes while serving.
 * geo.size is written with atomic stores (it is read by other threads), by size_refresh
 * alone, under a lock that keeps each read of the size and its store together.
 *
 * Libraries: librados and librbd are loaded at run time, by the first RBD export
 * (rbd_lib.h), so a server of files never maps them; every call goes through rb->lib.
 *
 * Errors: mapped into NBD's error set (map_error): -EROFS and -EACCES -> -EPERM, -EDQUOT and
 * -EFBIG -> -ENOSPC; -EPERM, -EIO, -ENOMEM, -EINVAL, -ENOSPC and -ENOTSUP as they are; any
 * other (-ETIMEDOUT when the operator set rados_osd_op_timeout, -EBLOCKLISTED, -ENOENT for an
 * image removed under the export, ...) -> -EIO, and its first occurrence per backing is
 * logged with librbd's own error. A read shorter than asked (the image shrank under a
 * request the server validated against the old size) is -EINVAL, never a short count.
 */
#include "backing/rbd.h"

#include "backing/rbd_lib.h"
#include "util/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RBD_LOGICAL_BLOCK  512u
#define RBD_PHYSICAL_BLOCK 4096u

/* op->progress while an op is in librbd (op->owner is the backing). */
enum rbd_stage {
  STAGE_MAIN = 0,  /* the READ/WRITE/... itself */
  STAGE_FLUSH = 1, /* the flush that follows a FUA write */
};

struct rbd_backing {
  struct backing base; /* first: a struct backing * is a struct rbd_backing * */
  const struct rbd_lib *lib; /* librados and librbd (rbd_lib.h): every call goes through it */
  rados_t cluster;
  rados_ioctx_t ioctx;
  rbd_image_t image;
  bool have_cluster, have_ioctx, have_image, have_watch;
  uint64_t watch_handle;
  bool writable;       /* false for snapshots and read-only exports */
  bool snapshot;
  char *pool, *nspace, *name, *snap; /* parsed spec; nspace and snap may be NULL */
  char *ceph_conf, *ceph_id;         /* copies of the options' strings, owned */
  uint64_t eio_logged[3];            /* errno values (< 192) already logged by map_error */
  /* Held across rbd_get_size and the store of what it returned (size_refresh), so that a
   * size read before a resize is never stored after one read since: a GO's refresh racing
   * the header watch would otherwise set geo.size back to the old size for a moment and
   * log the change twice. */
  pthread_mutex_t size_lock;
};

static const struct backing_vtable rbd_vtable;

/* Logs one line, "rbd:SPEC: message", at the given level. */
#define rbd_log(level, spec, fmt, ...) log_msg((level), "rbd:%s: " fmt, (spec), __VA_ARGS__)

/* Maps a librbd/librados error (r < 0) into NBD's error set (doc/proto.md "Error values"):
 * see the header comment. Without this, an error NBD has no value for would reach the
 * client as NBD_EINVAL ("invalid request"), the server's default, instead of EIO. The first
 * error of each kind turned into -EIO is logged (rb may be NULL: then nothing is logged). */
static int map_error(struct rbd_backing *rb, long r)
{
  int e = r < 0 && r >= -4095 ? (int)-r : EIO;
  switch (e) {
  case EPERM:
  case EACCES:
  case EROFS:
    return -EPERM;
  case ENOSPC:
  case EDQUOT:
  case EFBIG:
    return -ENOSPC;
  case EIO:
  case ENOMEM:
  case EINVAL:
  case ENOTSUP:
    return -e;
  default:
    break;
  }
  if (rb != NULL) {
    uint64_t bit = (uint64_t)1 << (e % 64);
    if (e >= 192 ||
        (__atomic_fetch_or(&rb->eio_logged[e / 64], bit, __ATOMIC_RELAXED) & bit) == 0) {
      rbd_log(LOG_WARN, rb->base.description + 4,
              "librbd failed a request with \"%s\" (errno %d); NBD has no such error, so "
              "clients get EIO (logged once per error)", strerror(e), e);
    }
  }
  return -EIO;
}

static char *dup_range(const char *s, size_t n)
{
  char *p = malloc(n + 1);
  if (p != NULL) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* Parses "POOL/IMAGE[@SNAP]" or "POOL/NAMESPACE/IMAGE[@SNAP]" into rb's strings.
 * Returns 0, -EINVAL (empty part, too many '/', a second '@') or -ENOMEM. */
static int parse_spec(const char *spec, struct rbd_backing *rb)
{
  const char *at = strchr(spec, '@');
  size_t main_len = at != NULL ? (size_t)(at - spec) : strlen(spec);
  const char *slash1 = memchr(spec, '/', main_len);
  if (slash1 == NULL || slash1 == spec) {
    return -EINVAL;
  }
  const char *rest = slash1 + 1;
  size_t rest_len = main_len - (size_t)(rest - spec);
  const char *slash2 = memchr(rest, '/', rest_len);
  const char *img = rest;
  size_t img_len = rest_len;
  if (slash2 != NULL) {
    if (slash2 == rest) {
      return -EINVAL;
    }
    img = slash2 + 1;
    img_len = main_len - (size_t)(img - spec);
    if (memchr(img, '/', img_len) != NULL) {
      return -EINVAL;
    }
  }
  if (img_len == 0) {
    return -EINVAL;
  }
  if (at != NULL && (at[1] == '\0' || strchr(at + 1, '@') != NULL ||
                     strchr(at + 1, '/') != NULL)) {
    return -EINVAL;
  }
  rb->pool = dup_range(spec, (size_t)(slash1 - spec));
  rb->name = dup_range(img, img_len);
  if (slash2 != NULL) {
    rb->nspace = dup_range(rest, (size_t)(slash2 - rest));
  }
  if (at != NULL) {
    rb->snap = strdup(at + 1);
  }
  if (rb->pool == NULL || rb->name == NULL || (slash2 != NULL && rb->nspace == NULL) ||
      (at != NULL && rb->snap == NULL)) {
    return -ENOMEM;
  }
  return 0;
}

int backing_rbd_spec_check(const char *spec, struct backing_spec_info *info)
{
  struct rbd_backing probe = {0};
  int r = parse_spec(spec, &probe);

  info->costly = true;
  info->read_only = probe.snap != NULL;
  free(probe.pool);
  free(probe.nspace);
  free(probe.name);
  free(probe.snap);
  return r;
}

/* Frees everything rb holds, in the reverse order of backing_rbd_open. */
static void rbd_free(struct rbd_backing *rb)
{
  if (rb->have_watch) {
    rb->lib->rbd_update_unwatch(rb->image, rb->watch_handle);
  }
  if (rb->have_image) {
    int r = rb->lib->rbd_close(rb->image);
    if (r < 0) {
      rbd_log(LOG_ERROR, rb->base.description != NULL ? rb->base.description + 4 : "?",
              "rbd_close: %s", strerror(-r));
    }
  }
  if (rb->have_ioctx) {
    rb->lib->rados_ioctx_destroy(rb->ioctx);
  }
  if (rb->have_cluster) {
    rb->lib->rados_shutdown(rb->cluster);
  }
  free(rb->pool);
  free(rb->nspace);
  free(rb->name);
  free(rb->snap);
  free(rb->ceph_conf);
  free(rb->ceph_id);
  free(rb->base.description);
  pthread_mutex_destroy(&rb->size_lock);
  free(rb);
}

/* Reads the image's size (rbd_get_size refreshes the image state first when the header
 * changed) and stores it in geo.size, which other threads read; logs a change once. The
 * read and the store are one step under size_lock: two callers cannot store their sizes
 * in the other order than they read them. *size (may be NULL) gets the size. Returns 0 or
 * librbd's -errno. Any thread; blocks on a round trip to the cluster when the header
 * changed. */
static int size_refresh(struct rbd_backing *rb, uint64_t *size)
{
  uint64_t now;

  pthread_mutex_lock(&rb->size_lock);
  int r = rb->lib->rbd_get_size(rb->image, &now);
  if (r == 0) {
    uint64_t old = __atomic_exchange_n(&rb->base.geo.size, now, __ATOMIC_ACQ_REL);
    if (old != now) {
      rbd_log(LOG_INFO, rb->base.description + 4,
              "size changed: %" PRIu64 " -> %" PRIu64 " bytes", old, now);
    }
  }
  pthread_mutex_unlock(&rb->size_lock);
  if (r == 0 && size != NULL) {
    *size = now;
  }
  return r;
}

/* librbd update watcher: the header changed (resize, snapshot, ...). Runs on a librbd
 * thread (its update watchers' queue, not the one that refreshes the image state). */
static void header_changed(void *arg)
{
  (void)size_refresh(arg, NULL); /* a failure: the next GO's refresh tries again */
}

/* Creates, configures and connects the cluster handle. Returns 0 or -errno. */
static int connect_cluster(struct rbd_backing *rb, const char *spec)
{
  int r;
  const char *id = rb->ceph_id;
  if (id != NULL && strncmp(id, "client.", 7) == 0) {
    r = rb->lib->rados_create2(&rb->cluster, "ceph", id, 0);
  } else {
    r = rb->lib->rados_create(&rb->cluster, id);
  }
  if (r < 0) {
    rbd_log(LOG_ERROR, spec, "rados_create(%s): %s", id != NULL ? id : "admin", strerror(-r));
    return r;
  }
  rb->have_cluster = true;

  /* The file named by --ceph-conf, else Ceph's own search ($CEPH_CONF,
   * /etc/ceph/ceph.conf, ~/.ceph/config, ./ceph.conf); then $CEPH_ARGS on top. */
  r = rb->lib->rados_conf_read_file(rb->cluster, rb->ceph_conf);
  if (r < 0) {
    if (rb->ceph_conf != NULL) {
      rbd_log(LOG_ERROR, spec, "reading %s: %s", rb->ceph_conf, strerror(-r));
      return r;
    }
    rbd_log(LOG_WARN, spec, "no ceph.conf found (%s); relying on CEPH_ARGS", strerror(-r));
  }
  r = rb->lib->rados_conf_parse_env(rb->cluster, NULL);
  if (r < 0) {
    rbd_log(LOG_ERROR, spec, "parsing CEPH_ARGS: %s", strerror(-r));
    return r;
  }

  r = rb->lib->rados_connect(rb->cluster);
  if (r < 0) {
    rbd_log(LOG_ERROR, spec, "connecting to the cluster as %s: %s",
            id != NULL ? id : "client.admin", strerror(-r));
    return r == -EPERM ? -EACCES : r;
  }
  return 0;
}

/* Opens the image: a snapshot read-only; the head read-write, or read-only-ish when the
 * export is read-only (still with a header watch so resizes are seen; if the caps forbid
 * the watch, rbd_open_read_only). Returns 0 or -errno. */
static int open_image(struct rbd_backing *rb, const char *spec)
{
  int r = rb->lib->rados_ioctx_create(rb->cluster, rb->pool, &rb->ioctx);
  if (r < 0) {
    rbd_log(LOG_ERROR, spec, "pool %s: %s", rb->pool, strerror(-r));
    return r;
  }
  rb->have_ioctx = true;
  if (rb->nspace != NULL) {
    rb->lib->rados_ioctx_set_namespace(rb->ioctx, rb->nspace);
  }

  if (rb->snapshot) {
    r = rb->lib->rbd_open_read_only(rb->ioctx, rb->name, &rb->image, rb->snap);
  } else {
    r = rb->lib->rbd_open(rb->ioctx, rb->name, &rb->image, NULL);
    if (!rb->writable && (r == -EPERM || r == -EACCES)) {
      r = rb->lib->rbd_open_read_only(rb->ioctx, rb->name, &rb->image, NULL);
      if (r == 0) {
        rbd_log(LOG_WARN, spec, "%s", "opened without a header watch (the caps allow no "
                "writes): resizes by other clients are not seen");
      }
    }
  }
  if (r < 0) {
    rbd_log(LOG_ERROR, spec, "opening image%s: %s",
            rb->writable && (r == -EPERM || r == -EACCES) ? " read-write" : "", strerror(-r));
    return r == -EPERM ? -EACCES : r;
  }
  rb->have_image = true;
  return 0;
}

/* See rbd.h. spec is "POOL/IMAGE[@SNAP]" or "POOL/NAMESPACE/IMAGE[@SNAP]" (without "rbd:").
 * Connects as opts->ceph_id (NULL: client.admin) with opts->ceph_conf (NULL: Ceph's search)
 * and $CEPH_ARGS, opens the image (a snapshot, or any image when opts->read_only, refuses
 * writes), reads its size (bytes) and registers the header watch. Returns 0 and *out, or
 * -errno: -EINVAL (bad spec), -ELIBACC (librados or librbd cannot be loaded: logged with
 * the loader's reason), -ENOENT (no ceph.conf at the given path, no keyring, no such
 * pool, image or snapshot), -EACCES (authentication or caps), -ETIMEDOUT (no mon answered
 * within client_mount_timeout), -ENOMEM, or another librados/librbd error. Blocks for the
 * round trips to the cluster. Main thread only. */
int backing_rbd_open(const char *spec, const struct backing_options *opts,
                     struct backing **out)
{
  if (spec == NULL || opts == NULL || out == NULL) {
    return -EINVAL;
  }
  struct rbd_backing *rb = calloc(1, sizeof *rb);
  if (rb == NULL) {
    return -ENOMEM;
  }
  pthread_mutex_init(&rb->size_lock, NULL);
  rb->base.vt = &rbd_vtable;
  rb->base.opts = *opts;
  int r = parse_spec(spec, rb);
  if (r < 0) {
    if (r == -EINVAL) {
      rbd_log(LOG_ERROR, spec, "%s",
              "expected POOL/IMAGE[@SNAP] or POOL/NAMESPACE/IMAGE[@SNAP]");
    }
    goto fail;
  }
  char why[512];
  r = rbd_lib_load(&rb->lib, why, sizeof why);
  if (r < 0) {
    char shown[LOG_SHOWN_MAX];
    rbd_log(LOG_ERROR, spec, "%s", log_escape_str(shown, sizeof shown, why));
    goto fail;
  }
  rb->snapshot = rb->snap != NULL;
  rb->writable = !opts->read_only && !rb->snapshot;
  if ((opts->ceph_conf != NULL && (rb->ceph_conf = strdup(opts->ceph_conf)) == NULL) ||
      (opts->ceph_id != NULL && (rb->ceph_id = strdup(opts->ceph_id)) == NULL)) {
    r = -ENOMEM;
    goto fail;
  }
  rb->base.opts.ceph_conf = rb->ceph_conf;
  rb->base.opts.ceph_id = rb->ceph_id;
  rb->base.opts.read_only = !rb->writable;

  /* "rbd:POOL/IMAGE" (with "@SNAP" for a snapshot) */
  size_t dlen = strlen(spec) + 5;
  rb->base.description = malloc(dlen);
  if (rb->base.description == NULL) {
    r = -ENOMEM;
    goto fail;
  }
  snprintf(rb->base.description, dlen, "rbd:%s", spec);

  r = connect_cluster(rb, spec);
  if (r < 0) {
    goto fail;
  }
  r = open_image(rb, spec);
  if (r < 0) {
    goto fail;
  }

  uint64_t size;
  r = rb->lib->rbd_get_size(rb->image, &size);
  if (r < 0) {
    rbd_log(LOG_ERROR, spec, "rbd_get_size: %s", strerror(-r));
    goto fail;
  }
  uint64_t features = 0;
  if (rb->lib->rbd_get_features(rb->image, &features) < 0) {
    features = 0;
  }
  rb->base.geo = (struct backing_geometry){
      .size = size,
      .logical_block_size = RBD_LOGICAL_BLOCK,
      .physical_block_size = RBD_PHYSICAL_BLOCK,
      .direct_alignment = 1,
      .rotational = false,
      .can_trim = true,
      .can_zero = true,
      .can_fua = true,
      .can_multi_conn = true,
      /* Block status from the object map: only with fast-diff, which keeps per-object
       * allocation in the map, so rbd_diff_iterate2 answers without listing objects.
       * Without it every query would cost one round trip per object: all data, then. */
      .can_extents = (features & RBD_FEATURE_FAST_DIFF) != 0,
  };

  if (!rb->snapshot) {
    r = rb->lib->rbd_update_watch(rb->image, &rb->watch_handle, header_changed, rb);
    if (r < 0) {
      /* Not fatal: refresh_size still works. */
      rbd_log(LOG_WARN, spec, "rbd_update_watch: %s (resizes seen only on refresh)",
              strerror(-r));
    } else {
      rb->have_watch = true;
      /* A resize between rbd_open and the watch would otherwise go unseen. */
      (void)size_refresh(rb, NULL);
    }
  }
  *out = &rb->base;
  return 0;

fail:
  rbd_free(rb);
  return r;
}

/* ---- BLOCK_STATUS from the object map (rbd_diff_iterate2) ----
 * librbd has no asynchronous diff, so the query runs on one of the engine's workers
 * (ENGINE_CALL), never on the caller's thread (an event loop). */

struct extent_fill {
  struct backing_op *op;
  uint64_t cursor; /* bytes: the map is filled up to here */
  uint64_t end;    /* bytes: op->offset + op->length */
  bool full;       /* op->buf had no room for the next extent: the map ends at cursor */
  uint64_t last_end;  /* bytes: end of the previous report */
  bool unordered;     /* a report went backwards (fancy striping, a clone's parent) */
};

/* Appends [fill->cursor, upto) with `flags`, merged into the last extent when the flags
 * are equal. Returns false when op->buf is full (the extent was not added). */
static bool extent_push(struct extent_fill *fill, uint64_t upto, uint32_t flags)
{
  struct backing_op *op = fill->op;
  struct backing_extent *ex = op->buf;

  assert(upto > fill->cursor && upto <= fill->end);
  if (op->extent_count > 0 && ex[op->extent_count - 1].flags == flags) {
    ex[op->extent_count - 1].length += upto - fill->cursor;
  } else if (op->extent_count < op->extent_max) {
    ex[op->extent_count].length = upto - fill->cursor;
    ex[op->extent_count].flags = flags;
    op->extent_count++;
  } else {
    fill->full = true;
    return false;
  }
  fill->cursor = upto;
  return true;
}

/* rbd_diff_iterate2's callback: [offset, offset+length) exists (is allocated, here or in
 * the parent) or not. Gaps between reports are unallocated: HOLE|ZERO. Whole objects are
 * reported (whole_object = 1), so an extent may start before the cursor or end past the
 * range: clipped. Returns 0 to go on, 1 to stop (the range or the buffer is full). */
static int extent_report(uint64_t offset, size_t length, int exists, void *arg)
{
  struct extent_fill *fill = arg;
  uint64_t start = offset > fill->cursor ? offset : fill->cursor;
  uint64_t stop = offset + length < fill->end ? offset + length : fill->end;

  if (fill->full || fill->unordered || fill->cursor >= fill->end) {
    return 1; /* librbd's fast-diff path goes on calling after a non-zero return */
  }
  /* The gap logic needs reports in offset order (whole objects of a plainly striped
   * image come so). Anything else: stop, and the range is reported as data. */
  if (offset < fill->last_end) {
    fill->unordered = true;
    return 1;
  }
  fill->last_end = offset + length;
  if (start > fill->cursor &&
      !extent_push(fill, start < fill->end ? start : fill->end,
                   BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO)) {
    return 1;
  }
  if (stop > fill->cursor &&
      !extent_push(fill, stop, exists ? 0 : BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO)) {
    return 1;
  }
  return fill->cursor >= fill->end ? 1 : 0;
}

/* ENGINE_CALL on a worker: fills op->buf. Returns 0 or -errno (mapped). */
static ssize_t block_status_call(void *arg)
{
  struct backing_op *op = arg;
  struct rbd_backing *rb = (struct rbd_backing *)op->owner;
  struct extent_fill fill = {.op = op, .cursor = op->offset, .end = op->offset + op->length};
  int r;

  op->extent_count = 0;
  r = rb->lib->rbd_diff_iterate2(rb->image, NULL, op->offset, op->length, 1, 1, extent_report,
                                 &fill);
  if (r < 0) {
    return map_error(rb, r);
  }
  if (fill.unordered) {
    struct backing_extent *ex = op->buf;
    ex[0].length = op->length; /* all data: never a hole that is not one */
    ex[0].flags = 0;
    op->extent_count = 1;
    return 0;
  }
  /* Nothing reported after the cursor: unallocated to the end, unless the map stopped
   * because op->buf was full (then the map ends early, which block status allows). */
  if (!fill.full && fill.cursor < fill.end) {
    (void)extent_push(&fill, fill.end, BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO);
  }
  assert(op->extent_count >= 1);
  return 0;
}

static void block_status_done(struct engine_req *req, ssize_t result)
{
  struct backing_op *op = req->arg;

  op->done(op, (int)result);
}

/* Queues op (BLOCK_STATUS, length > 0) on the engine's workers. Returns 0 or -ENOTSUP
 * (no fast-diff: the server reports all data) / -ESHUTDOWN (the engine is stopping). */
static int rbd_block_status_submit(struct rbd_backing *rb, struct backing_op *op)
{
  if (!rb->base.geo.can_extents || op->extent_max == 0 || op->buf == NULL ||
      rb->base.opts.engine == NULL) {
    return -ENOTSUP;
  }
  memset(&op->ereq, 0, sizeof op->ereq);
  op->ereq.opcode = ENGINE_CALL;
  op->ereq.call = block_status_call;
  op->ereq.arg = op;
  op->ereq.complete = block_status_done;
  return engine_submit(rb->base.opts.engine, &op->ereq);
}

/* Completion of one librbd request for op (the arg). Either starts the FUA flush or
 * finishes op. Runs on librbd's callback strand. */
static void rbd_complete(rbd_completion_t c, void *arg)
{
  struct backing_op *op = arg;
  struct rbd_backing *rb = (struct rbd_backing *)op->owner;
  ssize_t r = rb->lib->rbd_aio_get_return_value(c);
  rb->lib->rbd_aio_release(c);

  if (r < 0) {
    op->done(op, map_error(rb, r));
    return;
  }
  if (op->progress == STAGE_MAIN && op->type == BACKING_OP_READ && (uint64_t)r != op->length) {
    /* The image ended inside the request: it shrank after the server checked bounds. */
    op->done(op, -EINVAL);
    return;
  }
  if (op->progress == STAGE_MAIN && (op->flags & BACKING_FLAG_FUA) != 0 &&
      (op->type == BACKING_OP_WRITE || op->type == BACKING_OP_WRITE_ZEROES) &&
      rb->base.opts.sync != SYNC_NONE) {
    rbd_completion_t fc;
    op->progress = STAGE_FLUSH;
    int e = rb->lib->rbd_aio_create_completion(op, rbd_complete, &fc);
    if (e < 0) {
      op->done(op, map_error(rb, e));
      return;
    }
    e = rb->lib->rbd_aio_flush(rb->image, fc);
    if (e < 0) {
      rb->lib->rbd_aio_release(fc);
      op->done(op, map_error(rb, e));
    }
    return;
  }
  op->done(op, 0);
}

/* vtable submit: see backing_submit in backing.h. Returns 0 (op->done will be called
 * exactly once: on a librbd thread, or before this returns when there is nothing to do)
 * or -errno without calling done: -EPERM (write to a
 * snapshot or read-only export), -EINVAL (unknown type, READ/WRITE without a buffer),
 * -ENOMEM, or librbd's refusal. */
static int rbd_submit(struct backing *b, struct backing_op *op)
{
  struct rbd_backing *rb = (struct rbd_backing *)b;
  bool writes = op->type == BACKING_OP_WRITE || op->type == BACKING_OP_TRIM ||
                op->type == BACKING_OP_WRITE_ZEROES;
  if (writes && !rb->writable) {
    return -EPERM;
  }
  if ((op->type == BACKING_OP_READ || op->type == BACKING_OP_WRITE) && op->buf == NULL &&
      op->length != 0) {
    return -EINVAL;
  }
#if SIZE_MAX < UINT64_MAX
  if (op->length > SIZE_MAX) {
    return -EINVAL;
  }
#endif
  if (op->type != BACKING_OP_FLUSH && op->length == 0) {
    op->done(op, 0);
    return 0;
  }
  if (op->type == BACKING_OP_FLUSH && rb->base.opts.sync == SYNC_NONE) {
    op->done(op, 0);
    return 0;
  }
  op->owner = b;
  op->progress = STAGE_MAIN;
  if (op->type == BACKING_OP_BLOCK_STATUS) {
    return rbd_block_status_submit(rb, op);
  }

  rbd_completion_t c;
  int r = rb->lib->rbd_aio_create_completion(op, rbd_complete, &c);
  if (r < 0) {
    return map_error(rb, r);
  }
  switch (op->type) {
  case BACKING_OP_READ:
    r = rb->lib->rbd_aio_read(rb->image, op->offset, (size_t)op->length, op->buf, c);
    break;
  case BACKING_OP_WRITE:
    r = rb->lib->rbd_aio_write2(rb->image, op->offset, (size_t)op->length, op->buf, c, 0);
    break;
  case BACKING_OP_FLUSH:
    r = rb->lib->rbd_aio_flush(rb->image, c);
    break;
  case BACKING_OP_TRIM:
    r = rb->lib->rbd_aio_discard(rb->image, op->offset, op->length, c);
    break;
  case BACKING_OP_WRITE_ZEROES: {
    int zflags = (op->flags & BACKING_FLAG_NO_HOLE) != 0 ? RBD_WRITE_ZEROES_FLAG_THICK_PROVISION
                                                         : 0;
    r = rb->lib->rbd_aio_write_zeroes(rb->image, op->offset, (size_t)op->length, c, zflags, 0);
    break;
  }
  default:
    r = -EINVAL;
    break;
  }
  if (r < 0) {
    rb->lib->rbd_aio_release(c);
    return map_error(rb, r);
  }
  return 0;
}

/* vtable refresh_size: size_refresh, its error mapped. Returns 0 or -errno. Any thread;
 * may block on a round trip to the cluster. */
static int rbd_refresh_size(struct backing *b, uint64_t *size)
{
  struct rbd_backing *rb = (struct rbd_backing *)b;
  int r = size_refresh(rb, size);
  return r < 0 ? map_error(rb, r) : 0;
}

/* vtable close: unwatch, rbd_close (flushes librbd's cache), destroy the ioctx, shut the
 * cluster handle down, free. Only after every submitted op is done. */
static void rbd_close_backing(struct backing *b)
{
  rbd_free((struct rbd_backing *)b);
}

static const struct backing_vtable rbd_vtable = {
    .kind = "rbd",
    .submit = rbd_submit,
    .refresh_size = rbd_refresh_size,
    .close = rbd_close_backing,
};
