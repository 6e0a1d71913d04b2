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
  struct export **exports;
  size_t nexports;
  unsigned handshake_timeout_s; /* seconds a client may take to reach transmission */
  unsigned max_handshakes;      /* connections still negotiating, at most */
  unsigned max_connections;     /* open connections, at most; 0: no limit */
  unsigned max_inflight;        /* requests in flight per connection */
  bool unaligned_error;         /* --unaligned error: refuse requests unaligned to the
                                   minimum block size a client was told (spec rule 23) */
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

/* Looks an export up by its name (`length` bytes, not NUL-terminated): a key into what the
 * operator configured, never a path (case C18). Returns NULL when unknown. Any thread. */
struct export *server_find_export(struct server *s, const uint8_t *name, size_t length);

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

/* Seconds connections may take to leave by themselves after SIGTERM/SIGINT. */
#define SERVER_SHUTDOWN_GRACE_S 1
/* Seconds after that for the replies in flight to be read by their clients. */
#define SERVER_SHUTDOWN_SEND_S 5

/* Shuts down: for up to SERVER_SHUTDOWN_GRACE_S connections keep running but new requests
 * get NBD_ESHUTDOWN (and options NBD_REP_ERR_SHUTDOWN); then reading stops on every
 * connection, in-flight requests finish and are replied to, and this waits until all
 * connection threads have ended. Returns true then; false when, SERVER_SHUTDOWN_SEND_S
 * after that, a handshake thread is still opening a lazy export's backing (a cluster
 * that does not answer): that thread still uses the export, so the caller must not
 * destroy the server and exits the process instead (nothing was acknowledged through an
 * export that never opened). Main thread, after the listeners closed. */
bool server_conns_drain(struct server *s);

/* Frees the exports and the server's state. Main thread, after server_conns_drain. */
void server_destroy(struct server *s);

#endif
