/* conn.c: the transmission phase of one connection (doc/proto.md "Transmission phase").
 *
 * The connection thread reads request headers and payloads, validates each request
 * (nbd/request.c), and submits it through the export's durability policy; completions run
 * on engine/backing threads, encode the reply and send it under send_lock, so replies leave
 * in completion order, matched by cookie (spec rule 18). At most server->max_inflight
 * requests are in flight per connection. On NBD_CMD_DISC, end of stream, a protocol error or
 * shutdown, the thread stops reading and waits until every in-flight request is replied to
 * (spec rule 33).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nbd/request.h"
#include "server/conn.h"
#include "server/durability.h"
#include "server/sockio.h"
#include "util/log.h"

struct conn_req {
  struct backing_op op; /* first: completions find the request from the op */
  struct conn *conn;
  struct nbd_request req;
  void *buf;
};

static void conn_mark_dead(struct conn *c)
{
  pthread_mutex_lock(&c->lock);
  if (!c->send_failed) {
    c->send_failed = true;
    shutdown(c->fd, SHUT_RDWR); /* wake the reader */
  }
  pthread_mutex_unlock(&c->lock);
}

/* Sends the reply to `r` with `error` (an NBD error value) and, for a successful READ, its
 * data. Structured replies are used for READ once negotiated (spec rule 19). */
static void reply_send(struct conn *c, const struct nbd_request *req, uint32_t error,
                       void *data, const char *message)
{
  uint8_t hdr[NBD_ERROR_CHUNK_MAX];
  struct iovec iov[2];
  int n = 1;
  int rc;

  if (req->type == NBD_CMD_READ && c->structured_replies) {
    if (error != NBD_SUCCESS) {
      iov[0].iov_len = nbd_error_chunk_encode(hdr, req->cookie, error, message);
    } else if (req->length == 0) {
      nbd_chunk_header_encode(hdr, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE, req->cookie, 0);
      iov[0].iov_len = NBD_STRUCTURED_REPLY_SIZE;
    } else {
      nbd_offset_data_header_encode(hdr, NBD_REPLY_FLAG_DONE, req->cookie, req->offset,
                                    (uint32_t)req->length);
      iov[0].iov_len = NBD_OFFSET_DATA_HEADER_SIZE;
      iov[1].iov_base = data;
      iov[1].iov_len = (size_t)req->length;
      n = 2;
    }
  } else {
    nbd_simple_reply_encode(hdr, error, req->cookie);
    iov[0].iov_len = NBD_SIMPLE_REPLY_SIZE;
    if (req->type == NBD_CMD_READ && error == NBD_SUCCESS && req->length > 0) {
      iov[1].iov_base = data;
      iov[1].iov_len = (size_t)req->length;
      n = 2;
    }
  }
  iov[0].iov_base = hdr;
  pthread_mutex_lock(&c->send_lock);
  rc = sockio_writev_full(c->fd, iov, n);
  pthread_mutex_unlock(&c->send_lock);
  if (rc < 0) {
    conn_mark_dead(c);
  }
}

static void req_release(struct conn_req *r)
{
  struct conn *c = r->conn;

  free(r->buf);
  free(r);
  pthread_mutex_lock(&c->lock);
  c->inflight--;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void req_complete(struct backing_op *op, int result)
{
  struct conn_req *r = (struct conn_req *)op;
  struct conn *c = r->conn;
  uint32_t error = nbd_error_from_errno(result);

  if (result < 0) {
    log_warn("%s: %s offset %llu length %llu failed: %s", c->peer,
             nbd_command_name(r->req.type), (unsigned long long)r->req.offset,
             (unsigned long long)r->req.length, strerror(-result));
  }
  reply_send(c, &r->req, error, r->buf, error != NBD_SUCCESS ? strerror(-result) : NULL);
  req_release(r);
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

static void wait_inflight_below(struct conn *c, unsigned limit)
{
  pthread_mutex_lock(&c->lock);
  while (c->inflight >= limit) {
    pthread_cond_wait(&c->cond, &c->lock);
  }
  pthread_mutex_unlock(&c->lock);
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
    reply_send(c, &req, error, NULL, "request refused");
    return 0;
  }
  wait_inflight_below(c, c->server->max_inflight);
  needs_buf = (req.type == NBD_CMD_READ || payload > 0) && req.length > 0;
  r = calloc(1, sizeof *r);
  if (r != NULL && needs_buf && posix_memalign(&r->buf, 4096, req.length) != 0) {
    r->buf = NULL;
  }
  if (r == NULL || (needs_buf && r->buf == NULL)) {
    free(r);
    rc = payload > 0 ? sockio_discard(c->fd, payload) : 0;
    reply_send(c, &req, NBD_ENOMEM, NULL, "out of memory");
    return rc;
  }
  if (payload > 0) {
    rc = sockio_read_full(c->fd, r->buf, payload);
    if (rc < 0) {
      free(r->buf);
      free(r);
      return rc;
    }
  }
  r->conn = c;
  r->req = req;
  r->op.type = op_type_of(req.type);
  r->op.offset = req.offset;
  r->op.length = req.length;
  r->op.buf = r->buf;
  r->op.flags = 0;
  if ((req.flags & NBD_CMD_FLAG_FUA) && r->op.type != BACKING_OP_READ &&
      r->op.type != BACKING_OP_FLUSH) {
    r->op.flags |= BACKING_FLAG_FUA;
  }
  if (req.flags & NBD_CMD_FLAG_NO_HOLE) {
    r->op.flags |= BACKING_FLAG_NO_HOLE;
  }
  pthread_mutex_lock(&c->lock);
  c->inflight++;
  pthread_mutex_unlock(&c->lock);
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

  do {
    rc = request_handle_one(c, &limits);
  } while (rc == 0);
  if (rc == -ECONNRESET && !c->send_failed) {
    log_info("%s: peer closed the connection without NBD_CMD_DISC", c->peer);
  } else if (rc < 0 && rc != -ECONNRESET && !atomic_load(&c->server->stopping)) {
    log_info("%s: connection ends: %s", c->peer, strerror(-rc));
  }
  wait_inflight_below(c, 1);
}
