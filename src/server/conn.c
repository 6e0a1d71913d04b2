/* SPDX-License-Identifier: MIT */
/* conn.c: the transmission phase of one connection on threads (doc/proto.md "Transmission
 * phase"): the path for TLS connections and for `--engine threads`; plain connections with
 * the io_uring engine run on event loops instead (conn_loop.c). The request itself
 * (checking, submission, reply encoding) is txn.c's, shared by both paths.
 *
 * Three roles:
 *   - the reader (the connection's thread) reads request headers and payloads through the
 *     transport and starts each request (txn.c);
 *   - completions (engine/backing threads) encode the reply and queue it (reply_ready);
 *   - the writer thread sends queued replies, gathering several into one sendmsg (with TLS,
 *     into full TLS records: tls.c explains why the reader and the writer may use one
 *     GnuTLS session at the same time).
 * Replies therefore leave in completion order, matched by cookie (spec rule 18), and a
 * client that stops reading its replies stalls only its own writer, never an engine thread.
 * At most server->max_inflight requests are in flight per connection. On NBD_CMD_DISC, end
 * of stream, a protocol error or shutdown the reader stops and waits until every in-flight
 * request has been replied to (spec rule 33); at shutdown a request read after the signal
 * is not started and gets no reply (server.h, server_conns_drain). Once a reply cannot be sent the reader starts
 * nothing more (the event-loop path does the same: conn_loop.c, reading_stop).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nbd/request.h"
#include "server/admit.h"
#include "server/conn.h"
#include "server/txn.h"
#include "server/txn_split.h"
#include "util/log.h"

#define WRITER_BATCH 64 /* replies per sendmsg at most */

/* conn->reply_ready on the thread path: queue for the writer. Any thread. */
static void reply_queue(struct conn_req *r)
{
  struct conn *c = r->conn;

  r->next = NULL;
  pthread_mutex_lock(&c->lock);
  txn_split_queue_reply(r);
  if (c->reply_tail != NULL) {
    c->reply_tail->next = r;
  } else {
    c->reply_head = r;
  }
  c->reply_tail = r;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
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

    for (r = batch; r != NULL; r = r->next) {
      iov[n].iov_base = r->hdr;
      iov[n++].iov_len = r->hdr_len;
      if (r->send_data) {
        iov[n].iov_base = r->op.buf; /* READ data; BLOCK_STATUS extents */
        iov[n++].iov_len = txn_data_length(r);
      }
    }
    if (!failed && transport_writev_full(&c->transport, iov, n) < 0) {
      pthread_mutex_lock(&c->lock);
      c->send_failed = true;
      pthread_mutex_unlock(&c->lock);
      shutdown(c->transport.fd, SHUT_RDWR); /* the peer is gone: wake the reader */
    }
    size_t bytes = 0;
    count = 0; /* requests these replies complete: a part completes its READ only last */
    while (batch != NULL) {
      r = batch->next; /* before the release: a last part frees every part */
      struct conn_req *done = txn_split_release_reply(batch);
      if (done != NULL) {
        bytes += done->cost;
        txn_metrics_count(done);
        txn_free(done);
        count++;
      }
      batch = r;
    }
    pthread_mutex_lock(&c->lock);
    c->inflight -= count;
    c->inflight_bytes -= bytes;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
  }
}

/* Waits until fewer than `limit` requests are in flight and `cost` more buffer bytes fit
 * the byte budget (or nothing is in flight), then counts one more request of that cost
 * (when `take`). Returns true when a reply could not be sent (the peer is gone): then
 * nothing is counted, and the caller starts nothing more. Reader thread. */
static bool inflight_wait(struct conn *c, unsigned limit, bool take, size_t cost)
{
  bool gone;

  pthread_mutex_lock(&c->lock);
  while (c->inflight >= limit ||
         (c->inflight > 0 && c->inflight_bytes + cost > TXN_INFLIGHT_BYTES_MAX)) {
    pthread_cond_wait(&c->cond, &c->lock);
  }
  gone = c->send_failed;
  if (take && !gone) {
    c->inflight++;
    c->inflight_bytes += cost;
  }
  pthread_mutex_unlock(&c->lock);
  return gone;
}

/* Takes back what inflight_wait counted for a request that is not started. Reader. */
static void inflight_uncount(struct conn *c, size_t cost)
{
  pthread_mutex_lock(&c->lock);
  c->inflight--;
  c->inflight_bytes -= cost;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

/* Replies `error` to a request that never reached the backing. */
static int reply_refuse(struct conn *c, const struct nbd_request *req, uint32_t error,
                        const char *message)
{
  struct conn_req *r = txn_refusal(c, req, error, message);

  if (r == NULL) {
    return -ENOMEM;
  }
  if (inflight_wait(c, c->server->max_inflight, true, 0)) {
    txn_free(r);
    return -ECONNRESET;
  }
  reply_queue(r);
  return 0;
}

/* Reads one request and starts it. Returns 0 to continue, 1 on NBD_CMD_DISC, -errno to
 * stop reading (peer gone, protocol error). */
static int request_handle_one(struct conn *c, const struct nbd_export_limits *limits)
{
  uint8_t hdr[NBD_EXTENDED_REQUEST_SIZE];
  struct nbd_request req;
  struct conn_req *r;
  uint64_t payload;
  uint32_t error;
  int rc;

  if (c->extended_headers) {
    rc = transport_read_full(&c->transport, hdr, NBD_EXTENDED_REQUEST_SIZE);
    if (rc == 0 && nbd_request_decode_extended(hdr, &req) < 0) {
      rc = -EPROTO;
    }
  } else {
    rc = transport_read_full(&c->transport, hdr, NBD_REQUEST_SIZE);
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
  if (atomic_load(&c->server->stopping)) {
    return -ESHUTDOWN; /* read after the signal: left unanswered; a reconnecting client
                          re-sends it */
  }
  if (req.type == NBD_CMD_DISC) {
    return 1;
  }
  if (atomic_load(&c->export->removing)) {
    /* the export was removed (export_table.h): this request is refused, reading ends */
    rc = reply_refuse(c, &req, NBD_ESHUTDOWN, "export removed");
    return rc < 0 ? rc : 1;
  }
  error = txn_check(c, limits, &req, &payload);
  if (error != NBD_SUCCESS) {
    if (txn_payload_too_large(payload)) {
      return -E2BIG; /* txn_check logged it */
    }
    if (payload > 0) {
      rc = transport_discard(&c->transport, payload); /* stay in sync (spec rule 24) */
      if (rc < 0) {
        return rc;
      }
    }
    return reply_refuse(c, &req, error, "request refused: invalid for this export");
  }
  /* Once a reply could not be sent the peer is gone: what it queued before it went is still
   * readable on a Unix socket after shutdown(SHUT_RD), and starting it would only burn the
   * disk and CPU for replies that are dropped (a tester's 4 x 2000 READs of 32 MiB kept
   * both cores busy for 117 s). inflight_wait says so, here and before the start. */
  if (inflight_wait(c, c->server->max_inflight, false, txn_cost(&req, payload))) {
    return -ECONNRESET;
  }
  r = txn_alloc(c, &req, payload);
  if (r == NULL) {
    rc = payload > 0 ? transport_discard(&c->transport, payload) : 0;
    return rc < 0 ? rc : reply_refuse(c, &req, NBD_ENOMEM, "out of memory");
  }
  if (payload > 0) {
    rc = transport_read_full(&c->transport, r->buf, payload);
    if (rc < 0) {
      txn_free(r);
      return rc;
    }
  }
  if (inflight_wait(c, c->server->max_inflight, true, r->cost)) {
    txn_free(r);
    return -ECONNRESET;
  }
  if (atomic_load(&c->server->stopping)) {
    /* the signal came while its payload arrived or it waited for room: not started */
    inflight_uncount(c, r->cost);
    txn_free(r);
    return -ESHUTDOWN;
  }
  if (!txn_split_start(c, r, NULL, false)) {
    txn_submit(r, false);
  }
  return 0;
}

void conn_transmission_run(struct conn *c)
{
  struct nbd_export_limits limits = txn_limits(c);
  int rc;

  c->reply_ready = reply_queue;
  rc = -pthread_create(&c->writer, NULL, writer_main, c);
  if (rc < 0) {
    log_error("%s: cannot start the reply writer: %s", c->peer, strerror(-rc));
    return;
  }
  do {
    rc = request_handle_one(c, &limits);
  } while (rc == 0);
  admit_ending(c); /* a client waiting at --max-connections may have its place */
  pthread_mutex_lock(&c->lock);
  bool send_failed = c->send_failed;
  pthread_mutex_unlock(&c->lock);
  if (atomic_load(&c->server->stopping) || atomic_load(&c->export->removing)) {
    /* shutdown's or the export's removal's SHUT_RD ended the reads: nothing the peer did */
  } else if (rc == -ECONNRESET && !send_failed) {
    /* routine (fio, nbdcopy after an error, a killed client): --verbose only */
    log_debug("%s: peer closed the connection without NBD_CMD_DISC", c->peer);
  } else if (rc == -EBADMSG) {
    log_warn("%s: TLS error while reading requests (%s); closing the connection", c->peer,
             transport_read_error(&c->transport, rc));
  } else if (rc < 0 && rc != -ECONNRESET && rc != -EPROTO && rc != -E2BIG) {
    log_info("%s: connection ends: %s", c->peer, strerror(-rc)); /* EPROTO, E2BIG: logged */
  }
  (void)inflight_wait(c, 1, false, 0); /* every request replied to (or dropped if the peer left) */
  pthread_mutex_lock(&c->lock);
  c->closing = true;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  pthread_join(c->writer, NULL);
}
