/* SPDX-License-Identifier: MIT */
/* server.h: the server's shared state: exports, live connections, shutdown.
 * Created by serve.c on the main thread; connection threads read the exports and add and
 * remove themselves from the connection list under `lock`. */
#ifndef DISKGATE_SERVER_SERVER_H
#define DISKGATE_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/export.h"
#include "util/log_spell.h"

struct conn;

struct server {
  /* The export table (export_table.h), under lock once the listeners run */
  struct export **exports;
  size_t nexports;
  size_t cap_exports;
  struct export *default_export; /* what the empty name reaches when no export has it */
  unsigned nremovals;            /* export removals in progress (export_table.c), under lock */
  unsigned handshake_timeout_s; /* seconds a client may take to reach transmission */
  unsigned max_handshakes;      /* connections still negotiating, at most */
  unsigned max_connections;     /* open connections, at most; 0: no limit */
  unsigned max_inflight;        /* requests in flight per connection */
  bool unaligned_error;         /* --unaligned error: refuse requests unaligned to the
                                   minimum block size a client was told (spec rule 23) */
  bool metrics_on;              /* --metrics: connections count (metrics.h); set before the
                                   listeners start */
  atomic_bool stopping;
  pthread_mutex_t lock;
  pthread_cond_t cond;          /* signalled when a connection ends */
  struct loop **loops;          /* event loops for plain connections; NULL: threads only */
  unsigned nloops;
  struct conn *conns;           /* live connections (doubly linked) */
  unsigned nconns;
  unsigned nhandshaking;
  /* admit.c: negotiating connections closed to make room in the current spell; main
   * thread, under lock */
  struct log_spell room_spell;
};

/* Initialises an empty server. Its condition variable `cond` times its waits on
 * CLOCK_MONOTONIC (mono_cond.h: deadlines from mono_cond_deadline), so that a step of the
 * wall clock neither stretches nor cuts them. Returns 0 or -errno. Main thread. */
int server_init(struct server *s);

/* Takes ownership of an accepted socket and serves it on a new thread. `peer` names it in
 * logs. Room is made under the limits first (admit.h: the connection negotiating longest
 * is closed, case C13); when there is none at --max-connections, the new socket is closed
 * before the greeting. Returns 0, or -errno (the socket is closed): -EUSERS or -ETIMEDOUT
 * (no room, admit.h), -ESHUTDOWN (stopping), -ENOMEM, -EAGAIN (no thread). Main
 * (accepting) thread; may wait up to ADMIT_WAIT_MS for room, reading no signal meanwhile. */
int server_conn_start(struct server *s, int fd, const char *peer);

/* Closes every connection whose handshake has outlived server->handshake_timeout_s in all
 * (a total deadline: a client trickling one byte at a time does not extend it). Returns
 * how many were closed. Main (accepting) thread, about once a second. */
unsigned server_reap_handshakes(struct server *s);

/* Seconds after SIGTERM/SIGINT/SIGHUP that the requests already read may take in the
 * backing; past it the connections still waiting are closed without those replies (one
 * log line) and the server exits 1. */
#define SERVER_SHUTDOWN_DRAIN_S 300
/* Seconds a connection whose requests are all done in the backing may take to have its
 * replies read (a client that stopped reading them), or a handshake to end, during
 * shutdown; past it its replies are dropped. */
#define SERVER_SHUTDOWN_SEND_S 5
/* Milliseconds a TCP connection's close waits, at shutdown, for the peer to acknowledge
 * every reply sent (closing with unread requests resets the connection, and a reset drops
 * what the peer has not acknowledged yet). */
#define SERVER_SHUTDOWN_LINGER_MS 2000

/* One drain tick for connection c (shutdown, or its export's removal: export_table.h):
 * closes it (SHUT_RDWR) once it has had nothing in the backing, or been negotiating, for
 * SERVER_SHUTDOWN_SEND_S: its replies are not being read. Returns true when it closed it
 * now. Under s->lock, about once a second. */
struct conn;
bool server_conn_cut_if_quiet(struct conn *c);

/* The outcome of server_conns_drain. */
enum server_drain {
  SERVER_DRAIN_DONE,      /* every request read was replied to; every connection ended */
  SERVER_DRAIN_DROPPED,   /* every connection ended, some without the replies of requests
                             still in the backing after SERVER_SHUTDOWN_DRAIN_S */
  SERVER_DRAIN_ABANDONED, /* after SERVER_DRAIN_DROPPED, a connection thread is still
                             blocked in the backing: the caller must not destroy the server
                             and exits the process (status 1) instead */
  SERVER_DRAIN_ATTACHING, /* a handshake thread is still opening a lazy export's backing
                             (a cluster that does not answer): likewise, but nothing was
                             acknowledged through an export that never opened (status 0) */
};

/* Shuts down (doc/serve.md "Stopping and restarting"): reading stops at once on every
 * connection (a request not read yet stays unanswered, and a client that reconnects
 * re-sends it; no request is answered NBD_ESHUTDOWN), every request already read is
 * finished and replied to however long its backing takes, up to SERVER_SHUTDOWN_DRAIN_S,
 * and this waits until all connection threads have ended. A connection whose requests
 * are all done but whose replies are not read for SERVER_SHUTDOWN_SEND_S, and a
 * handshake that lasts as long, are closed (a handshake thread opening a lazy export's
 * backing, which cannot be interrupted, is abandoned after that: nothing was acknowledged
 * through an export that never opened). Main thread, after the listeners closed. */
enum server_drain server_conns_drain(struct server *s);

/* Frees the exports and the server's state. Main thread, after server_conns_drain and
 * export_table_wait_removals. */
void server_destroy(struct server *s);

#endif
