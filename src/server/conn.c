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
  uint8_t hdr[NBD_ERROR_CHUNK_MAX];
  size_t hdr_len;
  bool send_data;      /* a READ's data follows hdr */
  struct conn_req *next;
};

/* Encodes the reply to r->req with `error` (an NBD error value). Structured replies are
 * used for READ once negotiated (spec rule 19); other commands get simple replies. */
static void reply_encode(struct conn_req *r, uint32_t error, const char *message)
{
  const struct nbd_request *req = &r->req;

  r->send_data = false;
  if (req->type == NBD_CMD_READ && r->conn->structured_replies) {
    if (error != NBD_SUCCESS) {
      r->hdr_len = nbd_error_chunk_encode(r->hdr, req->cookie, error, message);
    } else if (req->length == 0) {
      nbd_chunk_header_encode(r->hdr, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, req->cookie, 0);
      r->hdr_len = NBD_STRUCTURED_REPLY_SIZE;
    } else {
      nbd_offset_data_header_encode(r->hdr, NBD_REPLY_FLAG_DONE, req->cookie, req->offset,
                                    (uint32_t)req->length);
      r->hdr_len = NBD_OFFSET_DATA_HEADER_SIZE;
      r->send_data = true;
    }
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
        iov[n++].iov_len = (size_t)r->req.length;
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

/* Reads one request and starts it. Returns 0 to continue, 1 on NBD_CMD_DISC, -errno to
 * stop reading (peer gone, protocol error). */
static int request_handle_one(struct conn *c, const struct nbd_export_limits *limits)
{
  uint8_t hdr[NBD_REQUEST_SIZE];
  struct nbd_request req;
  struct conn_req *r;
  uint64_t payload;
  uint32_t error;
  bool needs_buf;
  int rc;

  rc = sockio_read_full(c->fd, hdr, sizeof hdr);
  if (rc < 0) {
    return rc;
  }
  if (nbd_request_decode(hdr, &req) < 0) {
    log_warn("%s: bad request magic; closing the connection", c->peer);
    return -EPROTO;
  }
  if (req.type == NBD_CMD_DISC) {
    return 1;
  }
  payload = nbd_request_payload_length(&req);
  error = nbd_request_validate(&req, limits);
  if (error == NBD_SUCCESS && atomic_load(&c->server->stopping)) {
    error = NBD_ESHUTDOWN;
  }
  if (error != NBD_SUCCESS) {
    if (payload > 0) {
      rc = sockio_discard(c->fd, payload); /* stay in sync (spec rule 24) */
      if (rc < 0) {
        return rc;
      }
    }
    log_info("%s: %s offset %llu length %llu flags 0x%x refused with NBD error %u", c->peer,
             nbd_command_name(req.type), (unsigned long long)req.offset,
             (unsigned long long)req.length, req.flags, error);
    return reply_refuse(c, &req, error, "request refused: invalid for this export");
  }
  needs_buf = (req.type == NBD_CMD_READ || payload > 0) && req.length > 0;
  r = calloc(1, sizeof *r);
  if (r != NULL && needs_buf && posix_memalign(&r->buf, 4096, req.length) != 0) {
    r->buf = NULL;
  }
  if (r == NULL || (needs_buf && r->buf == NULL)) {
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
  if ((req.flags & NBD_CMD_FLAG_FUA) && r->op.type != BACKING_OP_READ &&
      r->op.type != BACKING_OP_FLUSH) {
    r->op.flags |= BACKING_FLAG_FUA;
  }
  if (req.flags & NBD_CMD_FLAG_NO_HOLE) {
    r->op.flags |= BACKING_FLAG_NO_HOLE;
  }
  inflight_wait(c, c->server->max_inflight, true);
  if (r->op.type != BACKING_OP_READ && r->op.type != BACKING_OP_FLUSH && req.length > 0) {
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
