/* SPDX-License-Identifier: MIT */
/* txn_split.c: see txn_split.h. */
#include "server/txn_split.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "nbd/proto.h"
#include "nbd/reply.h"
#include "nbd/request.h"
#include "server/conn.h"
#include "server/txn.h"

static bool split_wanted(const struct conn *c, const struct conn_req *r)
{
  return r->req.type == NBD_CMD_READ && c->structured_replies &&
         !(r->req.flags & NBD_CMD_FLAG_DF) && r->req.length >= TXN_SPLIT_MIN &&
         r->req.offset % 4096 == 0 && r->req.length % 4096 == 0;
}

bool txn_split_start(struct conn *c, struct conn_req *r, struct engine *engine,
                     bool nonblocking)
{
  unsigned count;

  if (!split_wanted(c, r)) {
    return false;
  }
  assert(r->parent == NULL && r->parts == NULL && r->buf != NULL);
  count = (unsigned)((r->req.length + TXN_SPLIT_PART - 1) / TXN_SPLIT_PART);
  r->parts = calloc(count, sizeof *r->parts);
  if (r->parts == NULL) {
    return false;
  }
  for (unsigned i = 0; i < count; i++) {
    struct conn_req *p = &r->parts[i];
    uint64_t done = (uint64_t)i * TXN_SPLIT_PART;
    uint64_t left = r->req.length - done;
    p->conn = c;
    p->parent = r;
    p->req = r->req;
    p->req.offset = r->req.offset + done;
    p->req.length = left < TXN_SPLIT_PART ? left : TXN_SPLIT_PART;
    p->op = r->op;
    p->op.offset = p->req.offset;
    p->op.length = p->req.length;
    p->op.buf = (uint8_t *)r->buf + done; /* p->buf stays NULL: the data is r's */
    p->op.fixed_buf = 0;
    p->op.engine = engine;
  }
  r->parts_left = count;
  for (unsigned i = 0; i < count; i++) {
    txn_submit(&r->parts[i], nonblocking);
  }
  return true;
}

void txn_split_queue_reply(struct conn_req *r)
{
  if (r->parent == NULL) {
    return;
  }
  assert(r->parent->parts_left > 0);
  r->last_part = --r->parent->parts_left == 0;
  if (!r->last_part) {
    nbd_reply_header_clear_done(r->hdr);
  }
}

struct conn_req *txn_split_release_reply(struct conn_req *r)
{
  struct conn_req *parent = r->parent;

  if (parent == NULL) {
    return r;
  }
  if (!r->last_part) {
    return NULL;
  }
  assert(parent->parts_left == 0);
  free(parent->parts); /* r among them */
  parent->parts = NULL;
  return parent;
}
