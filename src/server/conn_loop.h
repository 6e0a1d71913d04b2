/* conn_loop.h: a connection's transmission phase on an event loop (loop.h): the receive
 * buffer and request parsing, submission, the reply queue and batched sends, driven by
 * the loop's completions. Every function runs on the loop's thread. */
#ifndef DISKGATE_SERVER_CONN_LOOP_H
#define DISKGATE_SERVER_CONN_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct conn_req;
struct loop;

/* CQE user-data tags (low 3 bits; io/engine_ring.h uses 1). */
#define CONN_LOOP_TAG_RECV 2u
#define CONN_LOOP_TAG_SEND 3u

/* Adopts c: allocates its loop state and starts receiving. Returns 0 or -ENOMEM. */
int conn_loop_start(struct loop *l, struct conn *c);

/* A receive or send on c completed with `res` (bytes or -errno). */
void conn_loop_on_recv(struct conn *c, int32_t res);
void conn_loop_on_send(struct conn *c, int32_t res);

/* A reply is ready (encoded) for c: queue it. */
void conn_loop_on_reply(struct conn *c, struct conn_req *r);

/* After a batch of completions: parse what arrived, retry fenced requests, post the next
 * receive and send. Returns true when c is finished (the loop then drops it, and c's
 * thread is woken). */
bool conn_loop_advance(struct conn *c);

#endif
