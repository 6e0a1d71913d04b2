/* loop.h: event loops for the transmission phase. One thread per loop runs one io_uring
 * for everything its connections do: socket receives and sends, and the file backing's
 * reads, writes and syncs (io/engine_ring.h), with one io_uring_enter per iteration for
 * the whole batch. Blocking work (fallocate, ioctls, read-modify-write) runs on the shared
 * engine's workers; completions from other threads (workers, librbd) come back through an
 * inbox signalled by an eventfd. A connection belongs to one loop, so its state needs no
 * locks. Model: Redis's ae.c (a small loop interface) and liburing's examples.
 * Connections with TLS stay on the reader/writer thread path (conn.c). */
#ifndef DISKGATE_SERVER_LOOP_H
#define DISKGATE_SERVER_LOOP_H

#include <stdbool.h>
#include <stddef.h>

#include "io/engine.h"

struct loop;
struct conn;
struct conn_req;

/* The file descriptors one loop holds: its io_uring ring and its wake-up eventfd. */
#define LOOP_FDS 2

/* Starts `n` loops (1..64) whose blocking work goes to `fallback`. Returns 0 and *out (an
 * array of n), or -errno (-ENOSYS: io_uring unavailable). Main thread. */
int loop_start_all(unsigned n, struct engine *fallback, struct loop ***out);

/* Hands a negotiated connection to a loop (round robin) and waits until the loop has
 * finished with it (the client left, or the server shut it down); then returns, and the
 * caller closes the socket. Returns 0, or -errno when the loop could not take it (the
 * caller serves it on its own thread). The connection's thread. */
int loop_serve_conn(struct loop **loops, unsigned n, struct conn *c);

/* Stops and frees the loops. Main thread, after every connection has ended. */
void loop_stop_all(struct loop **loops, unsigned n);

/* ---- for conn_loop.c ---- */

/* The loop's ring engine (submissions from the loop thread need no syscall). */
struct engine *loop_engine(struct loop *l);

/* True on the loop's own thread. */
bool loop_on_thread(const struct loop *l);

/* Queues a completed request's reply from another thread; the loop picks it up. */
void loop_post_reply(struct loop *l, struct conn_req *r);

/* Marks a connection for attention after the current batch of completions. Loop thread. */
void loop_mark(struct loop *l, struct conn *c);

/* Registers a request buffer of `len` bytes with the loop's ring (loop_bufs.h). Returns the
 * slot + 1 for engine_req.fixed_buf / backing_op.fixed_buf, or 0 (not registered: use it
 * as it is). Loop thread. */
unsigned loop_buf_register(struct loop *l, void *buf, size_t len);

/* Unregisters a buffer (a value loop_buf_register returned) before it is freed; `loop` is
 * the struct loop (the signature of txn_pool.buf_unregister). Loop thread. */
void loop_buf_unregister(void *loop, unsigned fixed);

/* The loop's ring, to post socket operations. Loop thread. */
struct io_uring *loop_ring(struct loop *l);

#endif
