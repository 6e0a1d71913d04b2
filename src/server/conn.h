/* SPDX-License-Identifier: MIT */
/* conn.h: one client connection: handshake (handshake.c), then transmission (conn.c).
 * A connection's reader thread owns its transport's receive side; completions of its
 * requests run on engine/backing threads and queue their replies; the connection's writer
 * thread sends them, several per sendmsg (or per TLS record). The transport is plain until
 * NBD_OPT_STARTTLS succeeds, then TLS (transport.h). */
#ifndef DISKGATE_SERVER_CONN_H
#define DISKGATE_SERVER_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "io/loop.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/transport.h"
#include "server/txn_counts.h"
#include "server/txn_pool.h"

struct conn_req;
struct loop;

/* The metadata contexts a connection may select, and their context ids (the bit's value:
 * base:allocation 1, qemu:allocation-depth 2). */
#define CONN_META_BASE  1u /* base:allocation (doc/proto.md) */
#define CONN_META_DEPTH 2u /* qemu:allocation-depth (QEMU's docs/interop/nbd.txt) */

struct conn {
  struct transport transport;  /* transport.fd is the socket; server.c closes it */
  struct server *server;
  char peer[96];
  /* negotiated: the export selected, with a reference on it (export_table.h); set under
   * server->lock */
  struct export *export;
  bool removal_stopped;        /* its export's removal stopped its reading; under
                                  server->lock */
  /* structured_replies, extended_headers and the meta_* fields are option state:
     a successful STARTTLS resets them (spec rule 13) */
  bool structured_replies;     /* also set by extended headers */
  bool extended_headers;
  bool no_zeroes;
  bool block_size_sent;        /* NBD_INFO_BLOCK_SIZE told the client the constraints */
  uint64_t meta_export_id;     /* the id of the export the last SET_META_CONTEXT named,
                                  if it selected a context; else 0 (no export has it) */
  unsigned meta_set;           /* CONN_META_* the last SET_META_CONTEXT selected */
  unsigned meta_contexts;      /* CONN_META_* selected for c->export (transmission) */
  bool meta_context;           /* meta_contexts != 0: BLOCK_STATUS allowed */
  uint16_t transmission_flags;
  /* in-flight accounting and the reply queue (conn.c), under lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned inflight;           /* requests read and not yet replied to */
  size_t inflight_bytes;       /* their buffers (txn.h: TXN_INFLIGHT_BYTES_MAX) */
  atomic_uint failures;        /* requests that failed in the backing (log rate limit) */
  atomic_uint refusals;        /* requests refused before the backing (log rate limit) */
  atomic_uint option_refusals; /* options refused in the handshake (log rate limit) */
  struct txn_counts counts;    /* requests read, by kind (txn_check): written only by the
                                  connection's reading thread (reader or loop), read by
                                  server.c after transmission has ended */
  bool metrics_on;             /* server->metrics_on when the connection began */
  struct export *metrics_export; /* under server->lock: the export it counts for once in
                                  transmission (metrics_on), else NULL */
  struct metrics_counts metrics; /* its answered requests (metrics.h): written only by the
                                  thread sending its replies (writer thread or loop) */
  atomic_uint backing_busy;    /* requests (or parts) submitted and not yet completed by
                                  the backing (txn.c): the shutdown drain waits for them */
  const char *handshake_cut;   /* set by handshake_run when a read of an option failed: the
                                  option's name (nbd_option_name), or "" for its header;
                                  server.c logs it if the peer closed (not the server) */
  struct txn_pool pool;        /* idle requests and buffers for reuse (txn_pool.h) */
  bool send_failed;            /* a reply could not be sent: stop reading */
  bool closing;                /* the reader is done: the writer exits once drained */
  struct conn_req *reply_head; /* replies ready to send, in completion order */
  struct conn_req *reply_tail;
  pthread_t writer;            /* sends replies, so a client that does not read its
                                  replies blocks only its own connection */
  /* Where a queued reply goes (txn.c calls it from any thread): the writer thread's queue
   * here, or the event loop's (conn_loop.c). */
  void (*reply_ready)(struct conn_req *r);
  /* event loop (io/loop.c, conn_loop.c); NULL loop: the reader/writer thread path */
  struct loop *loop;
  void *loop_state;            /* conn_loop.c's; loop thread only */
  struct loop_client loop_client; /* the connection in its loop's lists */
  bool loop_done;              /* under lock: the loop has finished with the connection */
  bool loop_state_failed;      /* under lock: the loop could not adopt it */
  /* admission and the handshake deadline (admit.c, server.c), under server->lock */
  bool handshaking;            /* until admit_commit, or the handshake's end */
  int handshake_evicted;       /* 0, or shut down by the deadline (1) or to make room under
                                  --max-handshakes or --max-connections (2) */
  bool ending;                 /* admit_ending: no more requests are read; it will end */
  struct timespec handshake_deadline; /* CLOCK_MONOTONIC */
  /* the shutdown drain (server.c), main thread under server->lock */
  bool drain_quiet;            /* seen with nothing in the backing since drain_quiet_since */
  struct timespec drain_quiet_since; /* CLOCK_MONOTONIC */
  bool drain_cut;              /* shut down by the drain: its replies are dropped */
  /* server list */
  struct conn *prev, *next;
};

/* Runs option haggling (doc/proto.md "Newstyle negotiation") until the client enters
 * transmission (returns 0 with c->export set), aborts, or errs (returns -errno; the caller
 * closes the socket). Connection thread. */
int handshake_run(struct conn *c);

/* Serves requests until NBD_CMD_DISC, the peer closing, a protocol error, or server
 * shutdown; waits for every in-flight request to be replied to before returning.
 * Connection thread. */
void conn_transmission_run(struct conn *c);

#endif
