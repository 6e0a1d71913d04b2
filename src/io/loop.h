/* SPDX-License-Identifier: MIT */
/* loop.h: event loops. One thread per loop runs one io_uring for everything its clients do:
 * the socket operations they post on the ring (loop_ring) and the ring engine's reads,
 * writes and syncs (io/engine_ring.h), with one io_uring_enter per iteration for the whole
 * batch. Blocking work goes to the fallback engine's workers; work finished on other
 * threads (workers, librbd) comes back through an inbox signalled by an eventfd. A client
 * belongs to one loop and is touched only on its thread, so its state needs no locks.
 *
 * The loop knows nothing of NBD or connections: its clients are `struct loop_client`s,
 * embedded in the owner's state and driven through the `struct loop_ops` given at start
 * (the server's: server/conn_loop.h). Model: Redis's ae.c (a small loop interface) and
 * liburing's examples. */
#ifndef DISKGATE_IO_LOOP_H
#define DISKGATE_IO_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/engine.h"

struct io_uring;
struct loop;

/* The file descriptors one loop holds: its io_uring ring and its wake-up eventfd. */
#define LOOP_FDS 2

/* The low 3 bits of a CQE's user data say whose it is: 1 the ring engine's
 * (ENGINE_RING_TAG), 4 the loop's own; these two are the clients'. The rest of the user
 * data is a pointer (8-byte aligned) that ops->complete receives. */
#define LOOP_TAG_CLIENT_0 2u
#define LOOP_TAG_CLIENT_1 3u
#define LOOP_TAG_MASK 7u

/* A client's link in its loop's lists. Zeroed before loop_add. */
struct loop_client {
  struct loop_client *next; /* the inbox (under the loop's lock), then the marked list */
  bool marked;              /* on the marked list; loop thread only */
};

/* A piece of work posted to a loop from another thread (loop_post). */
struct loop_post {
  struct loop_post *next;
};

/* What a loop does with its clients; every call runs on the loop's thread. */
struct loop_ops {
  /* Takes c on (loop_add queued it). Returns 0, or -errno: release(c, -errno) follows. */
  int (*adopt)(struct loop *l, struct loop_client *c);
  /* A CQE whose user data carries LOOP_TAG_CLIENT_0 or _1 (`tag`) and `ptr`; res is the
   * CQE's result (bytes or -errno). */
  void (*complete)(void *ptr, unsigned tag, int32_t res);
  /* Work loop_post queued. */
  void (*posted)(struct loop_post *p);
  /* After a batch of completions, once for each client marked (loop_mark) in it. Returns
   * true when c is finished: the loop drops it and calls release(c, 0). */
  bool (*advance)(struct loop_client *c);
  /* The loop is done with c: finished (err 0) or not adopted (-errno). c is not touched
   * by the loop again. */
  void (*release)(struct loop_client *c, int err);
};

/* Starts `n` loops (1..64) driving their clients through `ops` (which must outlive them),
 * whose blocking work goes to `fallback`. Returns 0 and *out (an array of n), or -errno
 * (-ENOSYS: io_uring unavailable; -EINVAL: n out of range; -ENOMEM). Main thread. */
int loop_start_all(unsigned n, const struct loop_ops *ops, struct engine *fallback,
                   struct loop ***out);

/* Stops and frees the loops: each ends once it has no clients left (their owners make
 * them finish). Main thread, after every client has been released. */
void loop_stop_all(struct loop **loops, unsigned n);

/* One of the n loops, in turn (round robin). Any thread. */
struct loop *loop_pick(struct loop **loops, unsigned n);

/* Queues c for adoption by loop l (ops->adopt on l's thread). Any thread. */
void loop_add(struct loop *l, struct loop_client *c);

/* The loop's ring engine (submissions from the loop thread need no syscall). */
struct engine *loop_engine(struct loop *l);

/* True on the loop's own thread. */
bool loop_on_thread(const struct loop *l);

/* Queues p for ops->posted on the loop's thread. Any thread. */
void loop_post(struct loop *l, struct loop_post *p);

/* Marks c for ops->advance after the current batch of completions. Loop thread. */
void loop_mark(struct loop *l, struct loop_client *c);

/* Registers a buffer of `len` bytes with the loop's ring (loop_bufs.h). Returns the slot +
 * 1 for engine_req.fixed_buf / backing_op.fixed_buf, or 0 (not registered: use it as it
 * is). Loop thread. */
unsigned loop_buf_register(struct loop *l, void *buf, size_t len);

/* Unregisters a buffer (a value loop_buf_register returned) before it is freed; `loop` is
 * the struct loop (the signature of txn_pool.buf_unregister). Loop thread. */
void loop_buf_unregister(void *loop, unsigned fixed);

/* The loop's ring, to post socket operations (user data tagged LOOP_TAG_CLIENT_*). Loop
 * thread. */
struct io_uring *loop_ring(struct loop *l);

#endif
