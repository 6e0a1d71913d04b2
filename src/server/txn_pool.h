/* SPDX-License-Identifier: MIT */
/* txn_pool.h: a connection's free list of requests (struct conn_req) with their buffers,
 * so the steady state of a connection allocates nothing per request: a malloc and free
 * per request would cost about two thirds of the user-space instructions of a 4K read
 * (callgrind, docs/performance.md).
 *
 * Bounds (memory stays what the in-flight limits allow, plus at most this much idle):
 * at most TXN_POOL_MAX requests kept, buffers of at most TXN_POOL_BUF_MAX bytes each
 * (larger ones are freed on put) and TXN_POOL_BYTES_MAX bytes of idle buffers in all.
 * Buffers are 4096-aligned (O_DIRECT).
 * Registered buffers: an event loop registers a request's buffer with its ring
 * (conn_req.buf_fixed, io/loop_bufs.h) and sets buf_unregister; the pool calls it
 * before it frees or replaces such a buffer, and txn_pool_unregister_all empties the
 * slots of the idle ones when the loop lets the connection go. Those calls happen on the
 * thread that frees, which on a loop is the loop's own thread (the only one allowed to).
 * Threads: any thread (a mutex: the thread path frees on its writer thread and allocates
 * on its reader thread; on a loop both happen on the loop thread, uncontended). */
#ifndef DISKGATE_SERVER_TXN_POOL_H
#define DISKGATE_SERVER_TXN_POOL_H

#include <pthread.h>
#include <stddef.h>

struct conn_req;

#define TXN_POOL_MAX 128u
#define TXN_POOL_BUF_MAX (256u * 1024u)
#define TXN_POOL_BYTES_MAX (4u * 1024u * 1024u)

struct txn_pool {
  pthread_mutex_t lock;
  struct conn_req *free; /* linked through conn_req.next */
  unsigned count;
  size_t bytes;          /* sum of the idle requests' buffer capacities */
  /* Empties the registered-buffer slot `fixed` (conn_req.buf_fixed) of ctx's ring; NULL
   * when the connection is not on an event loop. */
  void (*buf_unregister)(void *ctx, unsigned fixed);
  void *buf_ctx;
};

/* Initialises an empty pool. */
void txn_pool_init(struct txn_pool *p);

/* Frees every idle request. Only when no request of the pool is in use any more. */
void txn_pool_destroy(struct txn_pool *p);

/* A request whose fields are zero (all but its buffer) and whose buffer holds at least
 * `bufsize` bytes (buf is NULL when bufsize is 0 and no idle buffer came with it).
 * Returns NULL when out of memory. */
struct conn_req *txn_pool_get(struct txn_pool *p, size_t bufsize);

/* Returns r to the pool, or frees it (and its buffer) beyond the bounds above. */
void txn_pool_put(struct txn_pool *p, struct conn_req *r);

/* Unregisters the buffers of the idle requests (buf_unregister, then buf_fixed = 0) and
 * clears buf_unregister. The event loop's thread, once every request of the connection is
 * back in the pool. */
void txn_pool_unregister_all(struct txn_pool *p);

#endif
