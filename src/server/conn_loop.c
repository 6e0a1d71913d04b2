/* SPDX-License-Identifier: MIT */
/* conn_loop.c: see conn_loop.h. A connection on a loop is a small state machine:
 *
 *   receive buffer --parse--> requests --submit--> backing --complete--> reply queue
 *        ^                                                                    |
 *        +---- one RECV in flight at a time      one SENDMSG in flight <------+
 *
 * Requests are parsed straight out of the receive buffer; a WRITE payload longer than what
 * arrived with its header is received directly into the request's buffer. At most
 * server->max_inflight requests are read and not yet replied to; beyond that no RECV is
 * posted. Replies leave in completion order, up to SEND_BATCH per SENDMSG; a large READ
 * goes as parts, each a chunk of its own (txn_split.h), and counts as one request. A
 * write that must wait for another connection's overlapping write (fence.h) is parked
 * and started by the completion that unblocks it (txn_submit), never waited for on the
 * loop. The connection is finished once reading has stopped (DISC, the peer closed, a
 * protocol error, shutdown) and every request has been replied to. At shutdown nothing
 * more is parsed or started (server.h, server_conns_drain): requests left in the receive
 * buffer, and a WRITE whose payload is still arriving, get no reply.
 */
#include "server/conn_loop.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "io/loop.h"
#include "nbd/request.h"
#include "server/admit.h"
#include "server/conn.h"
#include "server/txn.h"
#include "server/txn_pool.h"
#include "server/txn_split.h"
#include "util/log.h"

#define RECV_BUFFER (256u * 1024u)
#define SEND_BATCH 64u
#define TAG_RECV LOOP_TAG_CLIENT_0 /* CQE user data: the conn pointer | the tag */
#define TAG_SEND LOOP_TAG_CLIENT_1

struct lconn {
  struct loop *loop;
  struct nbd_export_limits limits;
  size_t header_size;
  /* receiving */
  uint8_t *rbuf;
  size_t rstart, rend;           /* unparsed bytes are rbuf[rstart, rend) */
  bool recv_posted;
  bool reading_done;             /* DISC, EOF, error or shutdown: no more requests */
  struct conn_req *payload_req;  /* a WRITE whose payload is still arriving */
  uint64_t payload_got;
  uint64_t discard_left;         /* payload bytes of a refused request still to drop */
  /* sending */
  struct conn_req *sendq, *sendq_tail;
  struct conn_req *sending;      /* the batch of the SENDMSG in flight */
  bool send_posted;
  bool send_failed;
  struct msghdr msg;
  struct iovec iov[2 * SEND_BATCH];
  unsigned inflight;             /* requests read and not yet replied to */
  size_t inflight_bytes;         /* their buffers, against TXN_INFLIGHT_BYTES_MAX */
  bool parse_blocked;            /* the limits stopped parsing: wait for replies */
};

static struct io_uring_sqe *sqe_get(struct loop *l)
{
  struct io_uring_sqe *sqe;

  while ((sqe = io_uring_get_sqe(loop_ring(l))) == NULL) {
    io_uring_submit(loop_ring(l));
  }
  return sqe;
}

static void reading_stop(struct conn *c, const char *why)
{
  struct lconn *lc = c->loop_state;

  if (lc->reading_done) {
    return;
  }
  if (why != NULL) {
    log_debug("%s: %s", c->peer, why); /* a routine end: --verbose only */
  }
  admit_ending(c); /* a client waiting at --max-connections may have its place */
  lc->reading_done = true;
}

/* Frees r, whose reply was sent or dropped. A part (txn_split.h) completes its request
 * only when it is the last. */
static void reply_release(struct lconn *lc, struct conn_req *r)
{
  r = txn_split_release_reply(r);
  if (r == NULL) {
    return;
  }
  lc->inflight_bytes -= r->cost;
  txn_metrics_count(r);
  txn_free(r);
  lc->inflight--;
}

/* A reply is ready (encoded) for c: queue it. Loop thread. */
static void conn_loop_on_reply(struct conn *c, struct conn_req *r)
{
  struct lconn *lc = c->loop_state;

  r->next = NULL;
  txn_split_queue_reply(r);
  if (lc->send_failed) { /* the peer is gone: drop the reply */
    reply_release(lc, r);
  } else {
    if (lc->sendq_tail != NULL) {
      lc->sendq_tail->next = r;
    } else {
      lc->sendq = r;
    }
    lc->sendq_tail = r;
  }
  loop_mark(lc->loop, &c->loop_client);
}

/* conn->reply_ready for loop connections: any thread. */
static void reply_ready(struct conn_req *r)
{
  struct conn *c = r->conn;

  if (loop_on_thread(c->loop)) {
    conn_loop_on_reply(c, r);
  } else {
    loop_post(c->loop, &r->loop_post);
  }
}

/* Adopts c: allocates its loop state. Returns 0 or -ENOMEM. Loop thread. */
static int conn_loop_start(struct loop *l, struct conn *c)
{
  struct lconn *lc = calloc(1, sizeof *lc);

  if (lc == NULL || (lc->rbuf = malloc(RECV_BUFFER)) == NULL) {
    free(lc);
    return -ENOMEM;
  }
  lc->loop = l;
  lc->limits = txn_limits(c);
  lc->header_size = c->extended_headers ? NBD_EXTENDED_REQUEST_SIZE : NBD_REQUEST_SIZE;
  c->loop_state = lc;
  c->reply_ready = reply_ready;
  c->pool.buf_unregister = loop_buf_unregister;
  c->pool.buf_ctx = l;
  return 0;
}

static void submit(struct conn *c, struct conn_req *r)
{
  struct lconn *lc = c->loop_state;

  r->op.engine = loop_engine(lc->loop);
  if ((r->op.type == BACKING_OP_READ || r->op.type == BACKING_OP_WRITE) && r->buf != NULL) {
    /* Pooled buffers are kept, so one registration serves many requests; a larger one is
     * freed after its request (txn_pool.h) and would cost two system calls each time. */
    if (r->buf_fixed == 0 && r->buf_cap <= TXN_POOL_BUF_MAX) {
      r->buf_fixed = loop_buf_register(lc->loop, r->buf, r->buf_cap);
    }
    r->op.fixed_buf = r->buf_fixed;
  }
  txn_submit(r, true);
}

static void refuse(struct conn *c, const struct nbd_request *req, uint32_t error,
                   const char *message)
{
  struct lconn *lc = c->loop_state;
  struct conn_req *r = txn_refusal(c, req, error, message);

  if (r == NULL) {
    /* a warning: the server, not the client, ends the connection (parse() calls this only
     * while still reading, so reading_stop has logged nothing yet) */
    log_warn("%s: out of memory; closing the connection", c->peer);
    reading_stop(c, NULL);
    return;
  }
  lc->inflight++;
  conn_loop_on_reply(c, r);
}

/* Parses and starts every whole request in the receive buffer. */
static void parse(struct conn *c)
{
  struct lconn *lc = c->loop_state;

  lc->parse_blocked = false;
  while (!lc->reading_done && lc->payload_req == NULL) {
    size_t avail = lc->rend - lc->rstart;
    if (atomic_load(&c->server->stopping)) {
      /* what is left in rbuf came after the signal: dropped unanswered; a reconnecting
       * client re-sends it */
      reading_stop(c, NULL);
      break;
    }
    if (lc->inflight >= c->server->max_inflight) {
      lc->parse_blocked = true;
      break;
    }
    struct nbd_request req;
    uint64_t payload;
    uint32_t error;
    int rc;

    if (lc->discard_left > 0) {
      size_t n = avail < lc->discard_left ? avail : (size_t)lc->discard_left;
      lc->rstart += n;
      lc->discard_left -= n;
      if (lc->discard_left > 0) {
        break;
      }
      continue;
    }
    if (avail < lc->header_size) {
      break;
    }
    rc = c->extended_headers ? nbd_request_decode_extended(lc->rbuf + lc->rstart, &req)
                             : nbd_request_decode(lc->rbuf + lc->rstart, &req);
    if (rc < 0) {
      log_warn("%s: bad request magic; closing the connection", c->peer); /* as conn.c */
      reading_stop(c, NULL);
      break;
    }
    if (lc->inflight > 0 && req.type != NBD_CMD_DISC &&
        lc->inflight_bytes + txn_cost(&req, nbd_request_payload_length(&req, c->extended_headers)) >
          TXN_INFLIGHT_BYTES_MAX) {
      lc->parse_blocked = true; /* the byte budget: wait until replies free some */
      break;
    }
    lc->rstart += lc->header_size;
    avail -= lc->header_size;
    if (req.type == NBD_CMD_DISC) {
      reading_stop(c, NULL); /* nothing to log: the client said goodbye */
      break;
    }
    if (atomic_load(&c->export->removing)) {
      /* the export was removed (export_table.h): this request is refused, reading ends */
      refuse(c, &req, NBD_ESHUTDOWN, "export removed");
      reading_stop(c, NULL);
      break;
    }
    error = txn_check(c, &lc->limits, &req, &payload);
    if (error != NBD_SUCCESS) {
      if (txn_payload_too_large(payload)) {
        reading_stop(c, NULL); /* txn_check logged it */
        break;
      }
      lc->discard_left = payload; /* dropped as it arrives (spec rule 24) */
      refuse(c, &req, error, "request refused: invalid for this export");
      continue;
    }
    struct conn_req *r = txn_alloc(c, &req, payload);
    if (r == NULL) {
      lc->discard_left = payload;
      refuse(c, &req, NBD_ENOMEM, "out of memory");
      continue;
    }
    lc->inflight++;
    lc->inflight_bytes += r->cost;
    if (payload > 0) {
      size_t n = avail < payload ? avail : (size_t)payload;
      memcpy(r->buf, lc->rbuf + lc->rstart, n);
      lc->rstart += n;
      if (n < payload) {
        lc->payload_req = r; /* the rest is received straight into r->buf */
        lc->payload_got = n;
        break;
      }
    }
    if (!txn_split_start(c, r, loop_engine(lc->loop), true)) {
      submit(c, r);
    }
  }
}

static void post_recv(struct conn *c)
{
  struct lconn *lc = c->loop_state;
  struct io_uring_sqe *sqe;
  void *dst;
  size_t len;

  if (lc->recv_posted || lc->reading_done || lc->send_failed ||
      (lc->payload_req == NULL && lc->parse_blocked)) {
    return;
  }
  if (lc->payload_req != NULL) {
    dst = (uint8_t *)lc->payload_req->buf + lc->payload_got;
    len = (size_t)(lc->payload_req->req.length - lc->payload_got);
  } else {
    if (lc->rstart > 0) { /* keep the unparsed tail at the front */
      memmove(lc->rbuf, lc->rbuf + lc->rstart, lc->rend - lc->rstart);
      lc->rend -= lc->rstart;
      lc->rstart = 0;
    }
    dst = lc->rbuf + lc->rend;
    len = RECV_BUFFER - lc->rend;
    if (len == 0) {
      return; /* full of requests we cannot start yet (a zero-length RECV would read as EOF) */
    }
  }
  sqe = sqe_get(lc->loop);
  io_uring_prep_recv(sqe, c->transport.fd, dst, len, 0);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | TAG_RECV);
  lc->recv_posted = true;
}

/* A receive on c completed with `res` (bytes or -errno). Loop thread. */
static void conn_loop_on_recv(struct conn *c, int32_t res)
{
  struct lconn *lc = c->loop_state;

  lc->recv_posted = false;
  loop_mark(lc->loop, &c->loop_client);
  if (res == -EINTR || res == -EAGAIN) {
    return;
  }
  if (res <= 0) {
    /* EOF or an RST (a client that closed with SO_LINGER 0): the thread path logs both */
    if ((res == 0 || res == -ECONNRESET) && !lc->send_failed &&
        !atomic_load(&c->server->stopping) && !atomic_load(&c->export->removing)) {
      reading_stop(c, "peer closed the connection without NBD_CMD_DISC");
    } else {
      reading_stop(c, NULL);
    }
    return; /* a WRITE cut short is dropped by conn_loop_advance (payload_abandon) */
  }
  if (lc->payload_req != NULL) {
    lc->payload_got += (uint64_t)res;
    if (lc->payload_got == lc->payload_req->req.length &&
        atomic_load(&c->server->stopping)) {
      reading_stop(c, NULL); /* not started: conn_loop_advance drops it (payload_abandon) */
    } else if (lc->payload_got == lc->payload_req->req.length) {
      struct conn_req *r = lc->payload_req;
      lc->payload_req = NULL;
      submit(c, r);
    }
    return;
  }
  lc->rend += (size_t)res;
}

static void post_send(struct conn *c)
{
  struct lconn *lc = c->loop_state;
  struct io_uring_sqe *sqe;
  unsigned n = 0, count = 0;
  struct conn_req *r;

  if (lc->send_posted || lc->sendq == NULL) {
    return;
  }
  lc->sending = lc->sendq;
  for (r = lc->sendq; r != NULL && count < SEND_BATCH; r = r->next) {
    lc->iov[n].iov_base = r->hdr;
    lc->iov[n++].iov_len = r->hdr_len;
    if (r->send_data) {
      lc->iov[n].iov_base = r->op.buf; /* READ data; BLOCK_STATUS extents */
      lc->iov[n++].iov_len = txn_data_length(r);
    }
    count++;
    if (r->next == NULL || count == SEND_BATCH) {
      lc->sendq = r->next;
      if (lc->sendq == NULL) {
        lc->sendq_tail = NULL;
      }
      r->next = NULL;
      break;
    }
  }
  memset(&lc->msg, 0, sizeof lc->msg);
  lc->msg.msg_iov = lc->iov;
  lc->msg.msg_iovlen = n;
  sqe = sqe_get(lc->loop);
  io_uring_prep_sendmsg(sqe, c->transport.fd, &lc->msg, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | TAG_SEND);
  lc->send_posted = true;
}

static void sending_release(struct conn *c)
{
  struct lconn *lc = c->loop_state;

  while (lc->sending != NULL) {
    struct conn_req *r = lc->sending;
    lc->sending = r->next;
    reply_release(lc, r);
  }
}

/* A send on c completed with `res` (bytes or -errno). Loop thread. */
static void conn_loop_on_send(struct conn *c, int32_t res)
{
  struct lconn *lc = c->loop_state;
  size_t left = (size_t)(res > 0 ? res : 0);

  lc->send_posted = false;
  loop_mark(lc->loop, &c->loop_client);
  if (res < 0 && res != -EINTR && res != -EAGAIN) {
    lc->send_failed = true; /* the peer is gone: stop reading, drop every reply */
    shutdown(c->transport.fd, SHUT_RDWR);
    reading_stop(c, NULL);
    sending_release(c);
    while (lc->sendq != NULL) {
      struct conn_req *r = lc->sendq;
      lc->sendq = r->next;
      reply_release(lc, r);
    }
    lc->sendq_tail = NULL;
    return;
  }
  /* Skip what went out; a partial send goes again from where it stopped. */
  while (lc->msg.msg_iovlen > 0 && left >= lc->msg.msg_iov[0].iov_len) {
    left -= lc->msg.msg_iov[0].iov_len;
    lc->msg.msg_iov++;
    lc->msg.msg_iovlen--;
  }
  if (lc->msg.msg_iovlen > 0) {
    struct io_uring_sqe *sqe = sqe_get(lc->loop);
    lc->msg.msg_iov[0].iov_base = (uint8_t *)lc->msg.msg_iov[0].iov_base + left;
    lc->msg.msg_iov[0].iov_len -= left;
    io_uring_prep_sendmsg(sqe, c->transport.fd, &lc->msg, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | TAG_SEND);
    lc->send_posted = true;
    return;
  }
  sending_release(c);
}

/* Drops a WRITE whose payload will never arrive whole: reading stopped (EOF, an error, a
 * failed send, shutdown) with no RECV posted. It was never submitted. The one place for
 * this, whichever way reading stopped. */
static void payload_abandon(struct lconn *lc)
{
  lc->inflight_bytes -= lc->payload_req->cost;
  txn_free(lc->payload_req);
  lc->payload_req = NULL;
  lc->inflight--;
}

/* After a batch of completions: parse what arrived, retry fenced requests, post the next
 * receive and send. Returns true when c is finished. Loop thread. */
static bool conn_loop_advance(struct conn *c)
{
  struct lconn *lc = c->loop_state;

  parse(c);
  post_send(c);
  post_recv(c);
  if (lc->reading_done && lc->payload_req != NULL && !lc->recv_posted) {
    payload_abandon(lc);
  }
  if (lc->reading_done && lc->inflight == 0 && !lc->send_posted && !lc->recv_posted &&
      lc->sendq == NULL) {
    txn_pool_unregister_all(&c->pool); /* every request is back in the pool */
    free(lc->rbuf);
    free(lc);
    c->loop_state = NULL;
    return true;
  }
  return false;
}

/* ---- conn_loop_ops: the loop's view of a connection ---- */

static struct conn *conn_of(struct loop_client *lc)
{
  return (struct conn *)((char *)lc - offsetof(struct conn, loop_client));
}

static int ops_adopt(struct loop *l, struct loop_client *lc)
{
  return conn_loop_start(l, conn_of(lc));
}

static void ops_complete(void *ptr, unsigned tag, int32_t res)
{
  if (tag == TAG_RECV) {
    conn_loop_on_recv(ptr, res);
  } else {
    assert(tag == TAG_SEND);
    conn_loop_on_send(ptr, res);
  }
}

static void ops_posted(struct loop_post *p)
{
  struct conn_req *r = (struct conn_req *)((char *)p - offsetof(struct conn_req, loop_post));

  conn_loop_on_reply(r->conn, r);
}

static bool ops_advance(struct loop_client *lc)
{
  return conn_loop_advance(conn_of(lc));
}

/* Wakes the connection's thread (conn_loop_serve): it closes the socket, or serves the
 * connection itself when the loop could not adopt it (err < 0). */
static void ops_release(struct loop_client *lc, int err)
{
  struct conn *c = conn_of(lc);

  pthread_mutex_lock(&c->lock);
  c->loop_state_failed = err < 0;
  c->loop_done = true;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

const struct loop_ops conn_loop_ops = {
  .adopt = ops_adopt,
  .complete = ops_complete,
  .posted = ops_posted,
  .advance = ops_advance,
  .release = ops_release,
};

int conn_loop_serve(struct loop **loops, unsigned n, struct conn *c)
{
  struct loop *l = loop_pick(loops, n);
  bool failed;

  c->loop = l;
  loop_add(l, &c->loop_client);
  pthread_mutex_lock(&c->lock);
  while (!c->loop_done) {
    pthread_cond_wait(&c->cond, &c->lock);
  }
  failed = c->loop_state_failed;
  pthread_mutex_unlock(&c->lock);
  if (failed) {
    c->loop = NULL;
    return -ENOMEM;
  }
  return 0;
}
