/* SPDX-License-Identifier: MIT */
/* txn_pool.c: see txn_pool.h. */
#include "server/txn_pool.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "server/txn.h"

void txn_pool_init(struct txn_pool *p)
{
  pthread_mutex_init(&p->lock, NULL);
  p->free = NULL;
  p->count = 0;
  p->bytes = 0;
  p->buf_unregister = NULL;
  p->buf_ctx = NULL;
}

/* Drops r's buffer: out of its ring's table first, then freed. */
static void buf_drop(struct txn_pool *p, struct conn_req *r)
{
  if (r->buf_fixed != 0) {
    assert(p->buf_unregister != NULL);
    p->buf_unregister(p->buf_ctx, r->buf_fixed);
    r->buf_fixed = 0;
  }
  free(r->buf);
  r->buf = NULL;
  r->buf_cap = 0;
}

static void req_free(struct txn_pool *p, struct conn_req *r)
{
  buf_drop(p, r);
  free(r);
}

void txn_pool_destroy(struct txn_pool *p)
{
  struct conn_req *r = p->free;

  while (r != NULL) {
    struct conn_req *next = r->next;
    assert(r->buf_fixed == 0); /* txn_pool_unregister_all ran on the loop */
    req_free(p, r);
    r = next;
  }
  p->free = NULL;
  p->count = 0;
  p->bytes = 0;
  pthread_mutex_destroy(&p->lock);
}

/* Zeroes r up to the reply header (which txn_reply_encode writes before it is read),
 * keeping the buffer. */
static void req_reset(struct conn_req *r)
{
  void *buf = r->buf;
  size_t cap = r->buf_cap;
  unsigned fixed = r->buf_fixed;

  memset(r, 0, offsetof(struct conn_req, hdr));
  r->buf = buf;
  r->buf_cap = cap;
  r->buf_fixed = fixed;
  r->hdr_len = 0;
  r->send_data = false;
  r->data_len = 0;
  r->next = NULL;
}

struct conn_req *txn_pool_get(struct txn_pool *p, size_t bufsize)
{
  struct conn_req *r;

  pthread_mutex_lock(&p->lock);
  r = p->free;
  if (r != NULL) {
    p->free = r->next;
    p->count--;
    p->bytes -= r->buf_cap;
  }
  pthread_mutex_unlock(&p->lock);
  if (r == NULL) {
    r = calloc(1, sizeof *r);
    if (r == NULL) {
      return NULL;
    }
  } else {
    req_reset(r);
  }
  if (bufsize > r->buf_cap) {
    void *buf;
    size_t cap = (bufsize + 4095) & ~(size_t)4095;
    if (posix_memalign(&buf, 4096, cap) != 0) {
      req_free(p, r);
      return NULL;
    }
    buf_drop(p, r);
    r->buf = buf;
    r->buf_cap = cap;
  }
  return r;
}

void txn_pool_put(struct txn_pool *p, struct conn_req *r)
{
  assert(r->buf_cap == 0 || r->buf != NULL);
  if (r->buf_cap > TXN_POOL_BUF_MAX) {
    buf_drop(p, r);
  }
  pthread_mutex_lock(&p->lock);
  if (p->count < TXN_POOL_MAX && p->bytes + r->buf_cap <= TXN_POOL_BYTES_MAX) {
    r->next = p->free;
    p->free = r;
    p->count++;
    p->bytes += r->buf_cap;
    r = NULL;
  }
  pthread_mutex_unlock(&p->lock);
  if (r != NULL) {
    req_free(p, r);
  }
}

void txn_pool_unregister_all(struct txn_pool *p)
{
  pthread_mutex_lock(&p->lock);
  for (struct conn_req *r = p->free; r != NULL; r = r->next) {
    if (r->buf_fixed != 0) {
      p->buf_unregister(p->buf_ctx, r->buf_fixed);
      r->buf_fixed = 0;
    }
  }
  p->buf_unregister = NULL;
  p->buf_ctx = NULL;
  pthread_mutex_unlock(&p->lock);
}
