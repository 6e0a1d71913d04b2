/* conn.h: one client connection: handshake (handshake.c), then transmission (conn.c).
 * A connection's reader thread owns its socket's receive side; completions of its requests
 * run on engine/backing threads and send replies under send_lock. */
#ifndef DISKGATE_SERVER_CONN_H
#define DISKGATE_SERVER_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/server.h"

struct conn {
  int fd;
  struct server *server;
  char peer[96];
  /* negotiated */
  struct export *export;
  bool structured_replies;
  bool no_zeroes;
  uint16_t transmission_flags;
  /* in-flight accounting */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned inflight;
  bool send_failed;            /* a reply could not be sent: stop reading */
  pthread_mutex_t send_lock;   /* one reply on the wire at a time */
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
