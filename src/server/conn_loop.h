/* SPDX-License-Identifier: MIT */
/* conn_loop.h: a connection's transmission phase on an event loop (io/loop.h): the receive
 * buffer and request parsing, submission, the reply queue and batched sends, driven by
 * the loop's completions through conn_loop_ops. */
#ifndef DISKGATE_SERVER_CONN_LOOP_H
#define DISKGATE_SERVER_CONN_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct loop;
struct loop_ops;

/* What event loops do with connections: pass it to loop_start_all. Loop thread. */
extern const struct loop_ops conn_loop_ops;

/* Hands a negotiated connection to one of the n loops (round robin) and waits until the
 * loop has finished with it (the client left, or the server shut it down); then returns,
 * and the caller closes the socket. Returns 0, or -ENOMEM when the loop could not take it
 * (the caller serves it on its own thread). The connection's thread. */
int conn_loop_serve(struct loop **loops, unsigned n, struct conn *c);

#endif
