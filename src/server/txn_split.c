/* txn_split.c: see txn_split.h. */
#include "server/txn_split.h"

#include <assert.h>
#include <stddef.h>

#include "nbd/proto.h"
#include "server/conn.h"
#include "server/txn.h"
#include "server/txn_pool.h"

bool txn_split_wanted(const struct conn *c, const struct conn_req *r)
{
  return r->req.type == NBD_CMD_READ && c->structured_replies &&
         !(r->req.flags & NBD_CMD_FLAG_DF) && r->req.length >= TXN_SPLIT_MIN &&
         r->req.offset % 4096 == 0 && r->req.length % 4096 == 0;
}

/* Frees a list of parts made by txn_split_make that were never submitted. */
static void parts_free(struct conn *c, struct conn_req *list)
{
  while (list != NULL) {
    struct conn_req *next = list->next;
    txn_pool_put(&c->pool, list);
    list = next;
  }
}

struct conn_req *txn_split_make(struct conn *c, struct conn_req *r)
{
  struct conn_req *head = NULL, **tail = &head;
  unsigned count = 0;

  assert(r->parent == NULL && r->req.length % 4096 == 0);
  for (uint64_t done = 0; done < r->req.length; done += TXN_SPLIT_PART) {
    uint64_t left = r->req.length - done;
    struct conn_req *p = txn_pool_get(&c->pool, 0);
    if (p == NULL) {
      parts_free(c, head);
      return NULL;
    }
    p->conn = c;
    p->parent = r;
    p->req = r->req;
    p->req.offset = r->req.offset + done;
    p->req.length = left < TXN_SPLIT_PART ? left : TXN_SPLIT_PART;
    p->op = r->op;
    p->op.offset = p->req.offset;
    p->op.length = p->req.length;
    p->op.buf = (uint8_t *)r->buf + done; /* p->buf stays the pool's, unused */
    p->op.fixed_buf = 0;
    *tail = p;
    tail = &p->next;
    count++;
  }
  r->parts_left = count;
  return head;
}

bool txn_split_arrived(struct conn_req *part)
{
  assert(part->parent != NULL && part->parent->parts_left > 0);
  part->last_part = --part->parent->parts_left == 0;
  if (!part->last_part) {
    /* The flags are bytes 4-5 of both the structured and the extended chunk header. */
    part->hdr[5] &= (uint8_t)~NBD_REPLY_FLAG_DONE;
  }
  return part->last_part;
}

void txn_split_submit(struct conn_req *parts, struct engine *engine, bool nonblocking)
{
  while (parts != NULL) {
    struct conn_req *next = parts->next;
    parts->next = NULL;
    parts->op.engine = engine;
    txn_submit(parts, nonblocking);
    parts = next;
  }
}

struct conn_req *txn_split_finished(struct conn_req *r)
{
  struct conn_req *parent = r->parent;

  if (parent == NULL) {
    return r;
  }
  if (!r->last_part) {
    parent = NULL;
  }
  r->parent = NULL;
  txn_pool_put(&r->conn->pool, r);
  return parent;
}
