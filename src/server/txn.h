/* SPDX-License-Identifier: MIT */
/* txn.h: one request's life, shared by both transmission paths (the reader/writer threads
 * of conn.c and the io_uring event loops of conn_loop.c): check a decoded request against
 * the export, allocate it with its buffer, submit it through the fence and the durability
 * policy, encode its reply in the negotiated style.
 * Source: doc/proto.md "Transmission phase"; spec rules 16-26, 28-32.
 * Threads: txn_check/txn_alloc/txn_submit on the connection's reading thread; txn_complete
 * on any completion thread, which hands the encoded reply to conn->reply_ready. */
#ifndef DISKGATE_SERVER_TXN_H
#define DISKGATE_SERVER_TXN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/backing.h"
#include "io/loop.h"
#include "nbd/reply.h"
#include "nbd/request.h"
#include "server/fence.h"

struct conn;

struct conn_req {
  struct backing_op op; /* first: completions find the request from the op */
  struct conn *conn;
  struct nbd_request req;
  void *buf;            /* READ data, WRITE payload, BLOCK_STATUS extents; 4096-aligned
                           (NULL for a part: its data is op.buf, in the parent's buf) */
  size_t buf_cap;       /* bytes allocated at buf (txn_pool.c keeps buffers for reuse) */
  unsigned buf_fixed;   /* buf registered with a loop's ring: slot + 1 (loop_bufs.h), or 0 */
  size_t cost;          /* bytes of buf: counted against the connection's byte budget */
  bool fenced;          /* fence_entry is registered with the export */
  struct fence_entry fence_entry;
  /* A READ answered in parts (txn_split.h): the parent owns the parts (one allocation)
   * and counts those whose reply is not queued yet; each part points to its parent. */
  struct conn_req *parts;
  struct conn_req *parent;
  unsigned parts_left;
  bool last_part;       /* the part whose chunk carries NBD_REPLY_FLAG_DONE */
  atomic_bool failure_logged; /* a parent: one of its parts' failures was logged */
  /* the encoded reply */
  uint8_t hdr[NBD_ERROR_OFFSET_REPLY_MAX];
  size_t hdr_len;
  bool send_data;       /* data_len bytes of op.buf follow hdr (txn_data_length) */
  size_t data_len;
  uint64_t start_ns;    /* metrics_now_ns when read (only under --metrics) */
  uint32_t error;       /* the NBD error its reply carries (txn_reply_encode) */
  struct conn_req *next; /* queues of the transmission path */
  struct loop_post loop_post; /* the reply, posted to the connection's loop (conn_loop.c) */
};

/* Payloads we do not want (a refused WRITE) are read and dropped up to this size so the
 * stream stays in sync; a larger one closes the connection (spec rule 25). */
#define TXN_DRAIN_MAX (64ull * 1024 * 1024)

/* True when a refused request's payload (bytes) is too large to read and drop: the caller
 * closes the connection without a reply (spec rule 25); txn_check has logged it. Any
 * thread. */
static inline bool txn_payload_too_large(uint64_t payload)
{
  return payload > TXN_DRAIN_MAX;
}

/* Bytes of request buffers (READ data, WRITE payloads) one connection may hold at once:
 * a client that sends requests but does not read its replies holds at most this much
 * memory (the first request is always let through, whatever its size). */
#define TXN_INFLIGHT_BYTES_MAX (64u * 1024u * 1024u)

/* The buffer bytes a checked request will hold (its cost against the budget). */
size_t txn_cost(const struct nbd_request *req, uint64_t payload);

/* The limits the connection negotiated, for nbd_request_validate. */
struct nbd_export_limits txn_limits(const struct conn *c);

/* Checks a decoded request (not DISC). Sets *payload to the bytes that follow the header
 * (to read, or to discard when refused). Returns NBD_SUCCESS or the NBD error to reply:
 * validation errors, NBD_EINVAL for a payload on a command other than WRITE (a stopping
 * server answers no request with NBD_ESHUTDOWN: it leaves new ones unread, server.h).
 * Logs refusals; one whose payload is too large to drop
 * (txn_payload_too_large) is logged as closing the connection, which the caller does
 * without a reply.
 * Counts the request in c->counts (txn_counts.h), refused or not. */
uint32_t txn_check(struct conn *c, const struct nbd_export_limits *limits,
                   const struct nbd_request *req, uint64_t *payload);

/* Allocates a request for a checked `req` with the buffer it needs and its backing op set
 * up. Returns NULL when out of memory. */
struct conn_req *txn_alloc(struct conn *c, const struct nbd_request *req, uint64_t payload);

/* Allocates a request whose reply is the error `error` (never reaches the backing), with
 * the reply encoded. Returns NULL when out of memory. */
struct conn_req *txn_refusal(struct conn *c, const struct nbd_request *req, uint32_t error,
                             const char *message);

/* Starts r: completes emulated commands at once, registers writes with the export's fence
 * and submits through the durability policy. A `nonblocking` caller (an event loop) never
 * waits: when the fence would block, r is parked and started by the completion that
 * unblocks it (fence_begin_async), on that completion's thread.
 * The reply reaches conn->reply_ready exactly once, on any thread. */
void txn_submit(struct conn_req *r, bool nonblocking);

/* Encodes the reply to r with `error` (an NBD error value) in the negotiated style. */
void txn_reply_encode(struct conn_req *r, uint32_t error, const char *message);

/* The number of bytes that follow r's reply header on the wire: data_len when
 * r->send_data, else 0. The transmission paths send them from r->op.buf (READ data, in
 * the parent's buffer for a part; BLOCK_STATUS extents, where op.buf is r->buf). */
size_t txn_data_length(const struct conn_req *r);

/* Counts r, whose reply was sent or dropped (a READ answered in parts: the parent, once
 * its last part went), in its connection's metrics (metrics.h) when --metrics is on.
 * Only the thread that sends the connection's replies (the writer thread, or its loop):
 * the counts' single writer. */
void txn_metrics_count(struct conn_req *r);

/* Returns r and its buffer to the connection's pool (txn_pool.h), or frees them. Any
 * thread; r's connection must still exist. */
void txn_free(struct conn_req *r);

#endif
