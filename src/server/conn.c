/* conn.c: the transmission phase of one connection (doc/proto.md "Transmission phase").
 *
 * Three roles:
 *   - the reader (the connection's thread) reads request headers and payloads, validates
 *     each request (nbd/request.c) and submits it through the export's durability policy;
 *   - completions (engine/backing threads) encode the reply and queue it;
 *   - the writer thread sends queued replies, gathering several into one sendmsg.
 * Replies therefore leave in completion order, matched by cookie (spec rule 18), and a
 * client that stops reading its replies stalls only its own writer, never an engine thread.
 * At most server->max_inflight requests are in flight per connection. On NBD_CMD_DISC, end
 * of stream, a protocol error or shutdown the reader stops and waits until every in-flight
 * request has been replied to (spec rule 33).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nbd/request.h"
#include "server/conn.h"
#include "server/durability.h"
#include "server/sockio.h"
#include "util/bytes.h"
#include "util/log.h"

#define WRITER_BATCH 64 /* replies per sendmsg at most */

struct conn_req {
  struct backing_op op; /* first: completions find the request from the op */
  struct conn *conn;
  struct nbd_request req;
  void *buf;
  bool fenced;                /* fence_entry is registered with the export */
  struct fence_entry fence_entry;
  /* the encoded reply */
  uint8_t hdr[NBD_ERROR_CHUNK_MAX + 16]; /* room for the longest header we encode */
  size_t hdr_len;
  bool send_data;      /* data_len bytes of buf follow hdr (READ data, BLOCK_STATUS) */
  size_t data_len;
  struct conn_req *next;
};

/* True when the whole buffer is zero bytes; stops at the first non-zero byte. */
static bool buffer_is_zero(const void *buf, size_t len)
{
  const uint8_t *p = buf;
  return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/* Reads at least this long that come back all zeroes are sent as one OFFSET_HOLE chunk
 * when structured replies are in use and the client did not set DF. */
#define SPARSE_READ_MIN (64u * 1024u)

/* Encodes the reply to r->req with `error` (an NBD error value) in the negotiated style:
 * extended headers: always a chunk (spec rule 16); structured replies: READ as chunks
 * (OFFSET_DATA, OFFSET_HOLE or ERROR; spec rules 19-20), other commands as simple replies;
 * otherwise simple replies. */
static void reply_encode(struct conn_req *r, uint32_t error, const char *message)
{
  const struct nbd_request *req = &r->req;
  struct conn *c = r->conn;
  bool ext = c->extended_headers;

  r->send_data = false;
  if (error != NBD_SUCCESS && c->structured_replies) {
    r->hdr_len = nbd_error_reply_encode(r->hdr, ext, req->cookie, req->offset, error, message);
    return;
  }
  if (req->type == NBD_CMD_READ && c->structured_replies) {
    if (req->length == 0) {
      r->hdr_len = nbd_reply_header_encode(r->hdr, ext, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE,
                                           req->cookie, req->offset, 0);
    } else if (req->length >= SPARSE_READ_MIN && !(req->flags & NBD_CMD_FLAG_DF) &&
               buffer_is_zero(r->buf, (size_t)req->length)) {
      size_t n = nbd_reply_header_encode(r->hdr, ext, NBD_REPLY_FLAG_DONE,
                                         NBD_REPLY_TYPE_OFFSET_HOLE, req->cookie, req->offset, 12);
      bytes_put_be64(r->hdr + n, req->offset);
      bytes_put_be32(r->hdr + n + 8, (uint32_t)req->length);
      r->hdr_len = n + 12;
    } else {
      size_t n = nbd_reply_header_encode(r->hdr, ext, NBD_REPLY_FLAG_DONE,
                                         NBD_REPLY_TYPE_OFFSET_DATA, req->cookie, req->offset,
                                         8 + req->length);
      bytes_put_be64(r->hdr + n, req->offset);
      r->hdr_len = n + 8;
      r->send_data = true;
    }
    return;
  }
  if (req->type == NBD_CMD_BLOCK_STATUS) {
    size_t payload = 0;
    r->hdr_len = nbd_block_status_encode(r->hdr, ext, req->cookie, req->offset, 1,
                                         (struct nbd_extent *)r->buf, r->op.extent_count,
                                         &payload);
    r->data_len = payload;
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
  r->send_data = req->type == NBD_CMD_READ && error == NBD_SUCCESS && req->length > 0;
}

/* Queues r's encoded reply for the writer. Any thread. */
static void reply_queue(struct conn_req *r)
{
  struct conn *c = r->conn;

  r->next = NULL;
  pthread_mutex_lock(&c->lock);
  if (c->reply_tail != NULL) {
    c->reply_tail->next = r;
  } else {
    c->reply_head = r;
  }
  c->reply_tail = r;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void req_free(struct conn_req *r)
{
  free(r->buf);
  free(r);
}

static void *writer_main(void *arg)
{
  struct conn *c = arg;
  struct iovec iov[2 * WRITER_BATCH];

  for (;;) {
    struct conn_req *batch, *r;
    unsigned count = 0;
    int n = 0;
    bool failed;

    pthread_mutex_lock(&c->lock);
    while (c->reply_head == NULL && !c->closing) {
      pthread_cond_wait(&c->cond, &c->lock);
    }
    if (c->reply_head == NULL) { /* closing, and every reply went out */
      pthread_mutex_unlock(&c->lock);
      return NULL;
    }
    batch = c->reply_head;
    for (r = batch; r->next != NULL && count + 1 < WRITER_BATCH; r = r->next) {
      count++;
    }
    c->reply_head = r->next;
    if (c->reply_head == NULL) {
      c->reply_tail = NULL;
    }
    r->next = NULL;
    failed = c->send_failed;
    pthread_mutex_unlock(&c->lock);

    count = 0;
    for (r = batch; r != NULL; r = r->next) {
      iov[n].iov_base = r->hdr;
      iov[n++].iov_len = r->hdr_len;
      if (r->send_data) {
        iov[n].iov_base = r->buf;
        iov[n++].iov_len = r->req.type == NBD_CMD_READ ? (size_t)r->req.length : r->data_len;
      }
      count++;
    }
    if (!failed && sockio_writev_full(c->fd, iov, n) < 0) {
      pthread_mutex_lock(&c->lock);
      c->send_failed = true;
      pthread_mutex_unlock(&c->lock);
      shutdown(c->fd, SHUT_RDWR); /* the peer is gone: wake the reader */
    }
    while (batch != NULL) {
      r = batch->next;
      req_free(batch);
      batch = r;
    }
    pthread_mutex_lock(&c->lock);
    c->inflight -= count;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
  }
}

static void req_complete(struct backing_op *op, int result)
{
  struct conn_req *r = (struct conn_req *)op;
  uint32_t error = nbd_error_from_errno(result);

  if (r->fenced) {
    fence_end(&r->conn->export->fence, &r->fence_entry);
    r->fenced = false;
  }
  if (result < 0) {
    log_warn("%s: %s offset %llu length %llu failed: %s", r->conn->peer,
             nbd_command_name(r->req.type), (unsigned long long)r->req.offset,
             (unsigned long long)r->req.length, strerror(-result));
  }
  reply_encode(r, error, error != NBD_SUCCESS ? strerror(-result) : NULL);
  reply_queue(r);
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

/* Waits until fewer than `limit` requests are in flight, then counts one more (when
 * `take`). */
static void inflight_wait(struct conn *c, unsigned limit, bool take)
{
  pthread_mutex_lock(&c->lock);
  while (c->inflight >= limit) {
    pthread_cond_wait(&c->cond, &c->lock);
  }
  if (take) {
    c->inflight++;
  }
  pthread_mutex_unlock(&c->lock);
}

/* Replies `error` to a request that never reached the backing. */
static int reply_refuse(struct conn *c, const struct nbd_request *req, uint32_t error,
                        const char *message)
{
  struct conn_req *r = calloc(1, sizeof *r);

  if (r == NULL) {
    return -ENOMEM;
  }
  r->conn = c;
  r->req = *req;
  inflight_wait(c, c->server->max_inflight, true);
  reply_encode(r, error, message);
  reply_queue(r);
  return 0;
}

/* Payloads we do not want (a refused WRITE) are read and dropped up to this size so the
 * stream stays in sync; a larger one closes the connection (spec rule 25: payloads over
 * 32 MiB may be treated as denial of service). */
#define DRAIN_MAX (64ull * 1024 * 1024)

/* Most block status descriptors in one reply (spec: SHOULD NOT exceed 2^20). */
#define BLOCK_STATUS_MAX_EXTENTS 16384u

/* Bytes of buffer a valid request needs: READ data, WRITE payload, BLOCK_STATUS extents. */
static size_t request_buffer_size(const struct nbd_request *req, uint64_t payload,
                                  uint32_t *extent_max)
{
  *extent_max = 0;
  if (req->type == NBD_CMD_READ) {
    return (size_t)req->length;
  }
  if (req->type == NBD_CMD_BLOCK_STATUS) {
    uint64_t n = (req->flags & NBD_CMD_FLAG_REQ_ONE) ? 1 : req->length / 4096 + 2;
    *extent_max = n > BLOCK_STATUS_MAX_EXTENTS ? BLOCK_STATUS_MAX_EXTENTS : (uint32_t)n;
    return (size_t)*extent_max * sizeof(struct nbd_extent);
  }
  return (size_t)payload;
}

/* Completes what the backing cannot do itself, as the spec allows: CACHE as a no-op,
 * BLOCK_STATUS as one allocated extent of unknown contents. Returns true when done. */
static bool request_emulate(struct conn_req *r, const struct backing_geometry *geo)
{
  if (r->op.type == BACKING_OP_CACHE && !geo->can_cache) {
    req_complete(&r->op, 0);
    return true;
  }
  if (r->op.type == BACKING_OP_BLOCK_STATUS && !geo->can_extents) {
    struct backing_extent *ex = r->buf;
    ex[0].length = r->req.length;
    ex[0].flags = 0;
    r->op.extent_count = 1;
    req_complete(&r->op, 0);
    return true;
  }
  return false;
}

/* Reads one request and starts it. Returns 0 to continue, 1 on NBD_CMD_DISC, -errno to
 * stop reading (peer gone, protocol error). */
static int request_handle_one(struct conn *c, const struct nbd_export_limits *limits)
{
  uint8_t hdr[NBD_EXTENDED_REQUEST_SIZE];
  struct nbd_request req;
  struct conn_req *r;
  uint64_t payload;
  uint32_t error, extent_max;
  size_t bufsize;
  int rc;

  if (c->extended_headers) {
    rc = sockio_read_full(c->fd, hdr, NBD_EXTENDED_REQUEST_SIZE);
    if (rc == 0 && nbd_request_decode_extended(hdr, &req) < 0) {
      rc = -EPROTO;
    }
  } else {
    rc = sockio_read_full(c->fd, hdr, NBD_REQUEST_SIZE);
    if (rc == 0 && nbd_request_decode(hdr, &req) < 0) {
      rc = -EPROTO;
    }
  }
  if (rc == -EPROTO) {
    log_warn("%s: bad request magic; closing the connection", c->peer);
  }
  if (rc < 0) {
    return rc;
  }
  if (req.type == NBD_CMD_DISC) {
    return 1;
  }
  payload = nbd_request_payload_length(&req, c->extended_headers);
  error = nbd_request_validate(&req, limits);
  if (error == NBD_SUCCESS && payload > 0 && req.type != NBD_CMD_WRITE) {
    error = NBD_EINVAL; /* no other command takes a payload here */
  }
  if (error == NBD_SUCCESS && atomic_load(&c->server->stopping)) {
    error = NBD_ESHUTDOWN;
  }
  if (error != NBD_SUCCESS) {
    if (payload > DRAIN_MAX) {
      log_warn("%s: %s with a %llu-byte payload refused; closing the connection", c->peer,
               nbd_command_name(req.type), (unsigned long long)payload);
      return -E2BIG;
    }
    if (payload > 0) {
      rc = sockio_discard(c->fd, payload); /* stay in sync (spec rule 24) */
      if (rc < 0) {
        return rc;
      }
    }
    log_msg(error == NBD_ESHUTDOWN ? LOG_DEBUG : LOG_INFO,
            "%s: %s offset %llu length %llu flags 0x%x refused with NBD error %u", c->peer,
            nbd_command_name(req.type), (unsigned long long)req.offset,
            (unsigned long long)req.length, req.flags, error);
    return reply_refuse(c, &req, error, error == NBD_ESHUTDOWN ? "server is shutting down"
                                                               : "request refused: invalid for this export");
  }
  bufsize = request_buffer_size(&req, payload, &extent_max);
  r = calloc(1, sizeof *r);
  if (r != NULL && bufsize > 0 && posix_memalign(&r->buf, 4096, bufsize) != 0) {
    r->buf = NULL;
  }
  if (r == NULL || (bufsize > 0 && r->buf == NULL)) {
    free(r);
    rc = payload > 0 ? sockio_discard(c->fd, payload) : 0;
    return rc < 0 ? rc : reply_refuse(c, &req, NBD_ENOMEM, "out of memory");
  }
  if (payload > 0) {
    rc = sockio_read_full(c->fd, r->buf, payload);
    if (rc < 0) {
      req_free(r);
      return rc;
    }
  }
  r->conn = c;
  r->req = req;
  r->op.type = op_type_of(req.type);
  r->op.offset = req.offset;
  r->op.length = req.length;
  r->op.buf = r->buf;
  r->op.extent_max = extent_max;
  if ((req.flags & NBD_CMD_FLAG_FUA) &&
      (r->op.type == BACKING_OP_WRITE || r->op.type == BACKING_OP_TRIM ||
       r->op.type == BACKING_OP_WRITE_ZEROES)) {
    r->op.flags |= BACKING_FLAG_FUA;
  }
  if (req.flags & NBD_CMD_FLAG_NO_HOLE) {
    r->op.flags |= BACKING_FLAG_NO_HOLE;
  }
  if (req.flags & NBD_CMD_FLAG_FAST_ZERO) {
    r->op.flags |= BACKING_FLAG_FAST_ZERO;
  }
  inflight_wait(c, c->server->max_inflight, true);
  if (request_emulate(r, &c->export->backing->geo)) {
    return 0;
  }
  if ((r->op.type == BACKING_OP_WRITE || r->op.type == BACKING_OP_TRIM ||
       r->op.type == BACKING_OP_WRITE_ZEROES) && req.length > 0) {
    fence_begin(&c->export->fence, &r->fence_entry, c, req.offset, req.length);
    r->fenced = true;
  }
  rc = durability_submit(c->export, &r->op, req_complete);
  if (rc < 0) {
    req_complete(&r->op, rc);
  }
  return 0;
}

void conn_transmission_run(struct conn *c)
{
  struct nbd_export_limits limits = {
    .size = c->export->backing->geo.size,
    .transmission_flags = c->transmission_flags,
    .max_payload = c->export->max_payload,
    .structured_replies = c->structured_replies,
    .extended_headers = c->extended_headers,
    .meta_context = c->meta_context,
  };
  int rc;

  rc = -pthread_create(&c->writer, NULL, writer_main, c);
  if (rc < 0) {
    log_error("%s: cannot start the reply writer: %s", c->peer, strerror(-rc));
    return;
  }
  do {
    rc = request_handle_one(c, &limits);
  } while (rc == 0);
  if (rc == -ECONNRESET && !c->send_failed) {
    log_info("%s: peer closed the connection without NBD_CMD_DISC", c->peer);
  } else if (rc < 0 && rc != -ECONNRESET && !atomic_load(&c->server->stopping)) {
    log_info("%s: connection ends: %s", c->peer, strerror(-rc));
  }
  inflight_wait(c, 1, false); /* every request replied to (or dropped if the peer left) */
  pthread_mutex_lock(&c->lock);
  c->closing = true;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  pthread_join(c->writer, NULL);
}
