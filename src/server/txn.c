/* SPDX-License-Identifier: MIT */
/* txn.c: see txn.h. */
#include "server/txn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"
#include "server/conn.h"
#include "server/durability.h"
#include "util/bytes.h"
#include "util/log.h"
#include "util/log_rate.h"

/* Most block status descriptors in one reply (the spec: SHOULD NOT exceed 2^20). */
#define BLOCK_STATUS_MAX_EXTENTS 16384u

/* Reads at least this long that come back all zeroes are sent as one OFFSET_HOLE chunk
 * when structured replies are in use and the client did not set DF. */
#define SPARSE_READ_MIN (64u * 1024u)

_Static_assert(sizeof(struct nbd_extent) == sizeof(struct backing_extent) &&
                 offsetof(struct nbd_extent, flags) == offsetof(struct backing_extent, flags) &&
                 offsetof(struct nbd_extent, depth) == offsetof(struct backing_extent, depth) &&
                 BACKING_EXTENT_HOLE == NBD_STATE_HOLE && BACKING_EXTENT_ZERO == NBD_STATE_ZERO,
               "backing extents are the metadata contexts' extents");

struct nbd_export_limits txn_limits(const struct conn *c)
{
  struct nbd_export_limits limits = {
    .size = c->export->backing->geo.size,
    .transmission_flags = c->transmission_flags,
    .max_payload = c->export->max_payload,
    .structured_replies = c->structured_replies,
    .extended_headers = c->extended_headers,
    .meta_context = c->meta_context,
    .min_block = c->server->unaligned_error && c->block_size_sent ? c->export->min_block : 1,
  };
  return limits;
}

uint32_t txn_check(struct conn *c, const struct nbd_export_limits *limits,
                   const struct nbd_request *req, uint64_t *payload)
{
  uint32_t error;

  txn_counts_add(&c->counts, req->type, req->flags);
  *payload = nbd_request_payload_length(req, c->extended_headers);
  error = nbd_request_validate(req, limits);
  if (error == NBD_SUCCESS && *payload > 0 && req->type != NBD_CMD_WRITE) {
    error = NBD_EINVAL; /* no other command takes a payload here */
  }
  if (error != NBD_SUCCESS && txn_payload_too_large(*payload)) {
    /* no reply: the caller closes the connection (spec rule 25) */
    log_warn("%s: oversized payload refused (%s with %llu bytes); closing the connection",
             c->peer, nbd_command_name(req->type), (unsigned long long)*payload);
  } else if (error != NBD_SUCCESS) {
    /* A client can send refused requests as fast as it can read replies: one line each
     * would write 55 MB of log a second, and a slow reader of the log would stall the
     * other clients. Rate-limited as the backing's failures are. */
    const char *more = NULL;
    if (log_rate_allows(&c->refusals, "refusals", &more)) {
      log_info("%s: %s offset %llu length %llu flags 0x%x refused with NBD error %u%s",
               c->peer, nbd_command_name(req->type), (unsigned long long)req->offset,
               (unsigned long long)req->length, req->flags, error, more != NULL ? more : "");
    }
  }
  return error;
}

static enum backing_op_type op_type_of(uint16_t cmd)
{
  switch (cmd) {
  case NBD_CMD_READ:
    return BACKING_OP_READ;
  case NBD_CMD_WRITE:
    return BACKING_OP_WRITE;
  case NBD_CMD_FLUSH:
    return BACKING_OP_FLUSH;
  case NBD_CMD_TRIM:
    return BACKING_OP_TRIM;
  case NBD_CMD_CACHE:
    return BACKING_OP_CACHE;
  case NBD_CMD_BLOCK_STATUS:
    return BACKING_OP_BLOCK_STATUS;
  default:
    return BACKING_OP_WRITE_ZEROES;
  }
}

static bool op_writes(enum backing_op_type type)
{
  return type == BACKING_OP_WRITE || type == BACKING_OP_TRIM ||
         type == BACKING_OP_WRITE_ZEROES;
}

static uint32_t extent_max_of(const struct nbd_request *req)
{
  uint64_t n = (req->flags & NBD_CMD_FLAG_REQ_ONE) ? 1 : req->length / 4096 + 2;
  return n > BLOCK_STATUS_MAX_EXTENTS ? BLOCK_STATUS_MAX_EXTENTS : (uint32_t)n;
}

size_t txn_cost(const struct nbd_request *req, uint64_t payload)
{
  if (req->type == NBD_CMD_READ) {
    return (size_t)req->length;
  }
  if (req->type == NBD_CMD_BLOCK_STATUS) {
    /* room for the second context's chunk too (nbd_block_status_reply_encode) */
    uint32_t n = extent_max_of(req);
    return (size_t)n * sizeof(struct nbd_extent) + NBD_BLOCK_STATUS_SECOND_ROOM(n);
  }
  return (size_t)payload;
}

struct conn_req *txn_alloc(struct conn *c, const struct nbd_request *req, uint64_t payload)
{
  size_t bufsize = txn_cost(req, payload);
  struct conn_req *r = txn_pool_get(&c->pool, bufsize);
  uint32_t extent_max = req->type == NBD_CMD_BLOCK_STATUS ? extent_max_of(req) : 0;

  if (r == NULL) {
    return NULL;
  }
  r->cost = bufsize;
  r->conn = c;
  r->req = *req;
  r->op.type = op_type_of(req->type);
  r->op.offset = req->offset;
  r->op.length = req->length;
  r->op.buf = r->buf;
  r->op.extent_max = extent_max;
  if (c->metrics_on) {
    r->start_ns = metrics_now_ns();
  }
  if ((req->flags & NBD_CMD_FLAG_FUA) && op_writes(r->op.type)) {
    r->op.flags |= BACKING_FLAG_FUA;
  }
  if (req->flags & NBD_CMD_FLAG_NO_HOLE) {
    r->op.flags |= BACKING_FLAG_NO_HOLE;
  }
  if (req->flags & NBD_CMD_FLAG_FAST_ZERO) {
    r->op.flags |= BACKING_FLAG_FAST_ZERO;
  }
  return r;
}

struct conn_req *txn_refusal(struct conn *c, const struct nbd_request *req, uint32_t error,
                             const char *message)
{
  struct conn_req *r = txn_pool_get(&c->pool, 0);

  if (r == NULL) {
    return NULL;
  }
  r->conn = c;
  r->req = *req;
  if (c->metrics_on) {
    r->start_ns = metrics_now_ns();
  }
  txn_reply_encode(r, error, message);
  return r;
}

static void txn_complete(struct backing_op *op, int result)
{
  struct conn_req *r = (struct conn_req *)op;
  uint32_t error = nbd_error_from_errno(result);

  if (r->fenced) {
    fence_end(&r->conn->export->fence, &r->fence_entry);
    r->fenced = false;
  }
  /* One line per failed request, but a full disk fails thousands of writes: after the
   * first ten on a connection, one line per thousand. A READ answered in parts is one
   * request: logged once, with the range the client asked for, whichever parts fail.
   * FAST_ZERO's "not fast" (-ENOTSUP, nothing changed) is an answer the client asked for,
   * not a failure (spec "NBD_CMD_FLAG_FAST_ZERO"; spec rule 28): --verbose only. */
  if (result == -ENOTSUP && (r->op.flags & BACKING_FLAG_FAST_ZERO)) {
    log_debug("%s: WRITE_ZEROES offset %llu length %llu with FAST_ZERO: not fast, declined",
              r->conn->peer, (unsigned long long)r->req.offset,
              (unsigned long long)r->req.length);
  } else if (result < 0 &&
             (r->parent == NULL || !atomic_exchange(&r->parent->failure_logged, true))) {
    const struct nbd_request *req = r->parent != NULL ? &r->parent->req : &r->req;
    const char *more;
    if (log_rate_allows(&r->conn->failures, "failures", &more)) {
      log_warn("%s: %s offset %llu length %llu failed: %s%s", r->conn->peer,
               nbd_command_name(req->type), (unsigned long long)req->offset,
               (unsigned long long)req->length, strerror(-result), more);
    }
  }
  txn_reply_encode(r, error, error != NBD_SUCCESS ? strerror(-result) : NULL);
  /* before the reply is queued: once it is sent, the connection may end and be freed */
  atomic_fetch_sub(&r->conn->backing_busy, 1);
  r->conn->reply_ready(r);
}

/* Completes what the backing cannot do itself, as the spec allows: CACHE as a no-op,
 * BLOCK_STATUS as one allocated extent of unknown contents. Returns true when done. */
static bool txn_emulate(struct conn_req *r)
{
  const struct backing_geometry *geo = &r->conn->export->backing->geo;

  if (r->op.type == BACKING_OP_CACHE && !geo->can_cache) {
    txn_complete(&r->op, 0);
    return true;
  }
  if (r->op.type == BACKING_OP_BLOCK_STATUS && !geo->can_extents) {
    struct backing_extent *ex = r->buf;
    ex[0].length = r->req.length;
    ex[0].flags = 0;
    ex[0].depth = 1;
    r->op.extent_count = 1;
    txn_complete(&r->op, 0);
    return true;
  }
  return false;
}

static void txn_start(struct conn_req *r)
{
  int rc;

  if (txn_emulate(r)) {
    return;
  }
  rc = durability_submit(r->conn->export, &r->op, txn_complete);
  if (rc < 0) {
    txn_complete(&r->op, rc);
  }
}

/* fence_begin_async's callback: the overlapping writes of other connections that this
 * write waited for have ended (on the thread of the last one's completion). */
static void fence_ready(struct fence_entry *entry)
{
  struct conn_req *r = (struct conn_req *)((char *)entry - offsetof(struct conn_req, fence_entry));

  r->fenced = true;
  txn_start(r); /* op.nonblocking stays true: this thread may be an event loop's */
}

/* The probed-raw guard (format.h, format_write_makes_header): true when r is a WRITE to an
 * image whose format was probed as raw and its payload would give sector 0 a known image
 * header, which a later probe would open as that format (QEMU refuses it too: the class of
 * CVE-2008-2004). Then r is answered NBD_EPERM without reaching the backing, with one log
 * line (rate-limited with the connection's other refusals). */
static bool txn_guard_header(struct conn_req *r)
{
  static const char msg[] = "the image was probed as raw: a write that gives it an image "
                            "header is refused (serve it with --format raw to allow)";
  struct conn *c = r->conn;
  const char *more;

  if (r->op.type != BACKING_OP_WRITE || !c->export->probed_raw ||
      !format_write_makes_header(r->req.offset, r->buf, r->req.length)) {
    return false;
  }
  if (log_rate_allows(&c->refusals, "refusals", &more)) {
    log_warn("%s: WRITE offset %llu length %llu refused: it would give the probed raw image "
             "a qcow2 header (serve it with --format raw to allow)%s", c->peer,
             (unsigned long long)r->req.offset, (unsigned long long)r->req.length, more);
  }
  txn_reply_encode(r, NBD_EPERM, msg);
  c->reply_ready(r);
  return true;
}

void txn_submit(struct conn_req *r, bool nonblocking)
{
  struct export *e = r->conn->export;

  if (txn_guard_header(r)) {
    return;
  }
  r->op.nonblocking = nonblocking;
  atomic_fetch_add(&r->conn->backing_busy, 1); /* until txn_complete */
  if (op_writes(r->op.type) && r->req.length > 0) {
    if (!nonblocking) {
      fence_begin(&e->fence, &r->fence_entry, r->conn, r->req.offset, r->req.length);
    } else if (!fence_begin_async(&e->fence, &r->fence_entry, r->conn, r->req.offset,
                                  r->req.length, fence_ready)) {
      return; /* parked: fence_ready starts it; no thread waits for it */
    }
    r->fenced = true;
  }
  txn_start(r);
}

/* True when the whole buffer is zero bytes; stops at the first non-zero byte. */
static bool buffer_is_zero(const void *buf, size_t len)
{
  const uint8_t *p = buf;
  return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

void txn_reply_encode(struct conn_req *r, uint32_t error, const char *message)
{
  const struct nbd_request *req = &r->req;
  struct conn *c = r->conn;
  bool ext = c->extended_headers;
  /* An extended header echoes the request's offset (spec rule 16): a part's parent's. */
  uint64_t echo = r->parent != NULL ? r->parent->req.offset : req->offset;

  r->error = error;

  r->send_data = false;
  r->data_len = 0;
  if (error != NBD_SUCCESS && c->structured_replies) {
    /* A part's error is at its own offset, so the other parts' data stays valid. */
    r->hdr_len = r->parent != NULL
                   ? nbd_error_offset_reply_encode(r->hdr, ext, req->cookie, echo, error,
                                                   message, req->offset)
                   : nbd_error_reply_encode(r->hdr, ext, req->cookie, echo, error, message);
    return;
  }
  if (req->type == NBD_CMD_READ && c->structured_replies) {
    if (req->length == 0) {
      r->hdr_len = nbd_reply_header_encode(r->hdr, ext, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE,
                                           req->cookie, echo, 0);
    } else if (req->length >= SPARSE_READ_MIN && !(req->flags & NBD_CMD_FLAG_DF) &&
               buffer_is_zero(r->op.buf, (size_t)req->length)) {
      size_t n = nbd_reply_header_encode(r->hdr, ext, NBD_REPLY_FLAG_DONE,
                                         NBD_REPLY_TYPE_OFFSET_HOLE, req->cookie, echo, 12);
      bytes_put_be64(r->hdr + n, req->offset);
      bytes_put_be32(r->hdr + n + 8, (uint32_t)req->length);
      r->hdr_len = n + 12;
    } else {
      size_t n = nbd_reply_header_encode(r->hdr, ext, NBD_REPLY_FLAG_DONE,
                                         NBD_REPLY_TYPE_OFFSET_DATA, req->cookie, echo,
                                         8 + req->length);
      bytes_put_be64(r->hdr + n, req->offset);
      r->hdr_len = n + 8;
      r->send_data = true;
      r->data_len = (size_t)req->length;
    }
    return;
  }
  if (req->type == NBD_CMD_BLOCK_STATUS && error == NBD_SUCCESS) {
    struct nbd_extent *ex = r->buf;
    if ((c->meta_contexts & CONN_META_DEPTH) && !c->export->backing->geo.can_depth) {
      for (uint32_t i = 0; i < r->op.extent_count; i++) {
        ex[i].depth = 1; /* one image, allocated everywhere (as qemu-nbd -A on a raw file) */
      }
    }
    r->hdr_len = nbd_block_status_reply_encode(
        r->hdr, ext, req->cookie, req->offset, c->meta_contexts & CONN_META_BASE,
        c->meta_contexts & CONN_META_DEPTH, ex, r->op.extent_count, &r->data_len);
    r->send_data = true;
    return;
  }
  if (ext) {
    r->hdr_len = nbd_reply_header_encode(r->hdr, true, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE,
                                         req->cookie, req->offset, 0);
    return;
  }
  nbd_simple_reply_encode(r->hdr, error, req->cookie);
  r->hdr_len = NBD_SIMPLE_REPLY_SIZE;
  if (req->type == NBD_CMD_READ && error == NBD_SUCCESS && req->length > 0) {
    r->send_data = true;
    r->data_len = (size_t)req->length;
  }
}

size_t txn_data_length(const struct conn_req *r)
{
  return r->send_data ? r->data_len : 0;
}

void txn_free(struct conn_req *r)
{
  txn_pool_put(&r->conn->pool, r);
}

void txn_metrics_count(struct conn_req *r)
{
  struct conn *c = r->conn;
  enum metrics_op op;

  if (!c->metrics_on) {
    return;
  }
  op = metrics_op_of(r->req.type);
  if (op == METRICS_OPS) {
    return; /* CACHE, unknown commands: not counted */
  }
  /* a READ answered in parts failed when one of its parts did (failure_logged) */
  bool error = r->error != NBD_SUCCESS || (r->parts != NULL && atomic_load(&r->failure_logged));
  metrics_count(&c->metrics, op, r->req.length, error, metrics_now_ns() - r->start_ns);
}
