/* conn.h: one client connection: handshake (handshake.c), then transmission (conn.c).
 * A connection's reader thread owns its socket's receive side; completions of its requests
 * run on engine/backing threads and queue their replies; the connection's writer thread
 * sends them, several per sendmsg. */
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
  bool structured_replies;     /* also set by extended headers */
  bool extended_headers;
  bool no_zeroes;
  struct export *meta_export;  /* the export the last SET_META_CONTEXT named, if it
                                  selected base:allocation; else NULL */
  bool meta_context;           /* base:allocation selected for c->export */
  uint16_t transmission_flags;
  /* in-flight accounting and the reply queue (conn.c), under lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned inflight;           /* requests read and not yet replied to */
  bool send_failed;            /* a reply could not be sent: stop reading */
  bool closing;                /* the reader is done: the writer exits once drained */
  struct conn_req *reply_head; /* replies ready to send, in completion order */
  struct conn_req *reply_tail;
  pthread_t writer;            /* sends replies, so a client that does not read its
                                  replies blocks only its own connection */
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
