/* SPDX-License-Identifier: MIT */
/* format_runs.c: a format node's op as child ops on its file, or on a worker
 * (format_runs.h). */
#include "backing/format_runs.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "io/engine.h"

/* One op served through runs: its child ops on the file and their joint result. */
struct runs_ctx {
  struct backing_op *parent;
  void (*release)(void *arg, uint32_t k);
  void *arg;
  uint32_t k;          /* child ops */
  atomic_uint pending; /* child ops not yet done */
  atomic_int result;   /* the first error, or 0 */
  struct backing_op child[];
};

bool format_run_add(struct format_run *runs, uint32_t cap, uint32_t *n, uint64_t buf_off,
                    uint64_t len, uint64_t host)
{
  if (*n > 0) {
    struct format_run *last = &runs[*n - 1];
    if ((host == FORMAT_RUN_ZERO && last->host == FORMAT_RUN_ZERO) ||
        (host != FORMAT_RUN_ZERO && last->host != FORMAT_RUN_ZERO &&
         last->host + last->len == host)) {
      last->len += len;
      return true;
    }
  }
  if (*n >= cap) {
    return false;
  }
  runs[(*n)++] = (struct format_run){.buf_off = buf_off, .len = len, .host = host};
  return true;
}

bool format_runs_fit(const struct backing *file, const struct backing_op *op,
                     const struct format_run *runs, uint32_t n)
{
  uint64_t al = file->geo.direct_alignment > 1 ? file->geo.direct_alignment : 1;

  for (uint32_t i = 0; i < n; i++) {
    uint64_t host = runs[i].host, len = runs[i].len;
    uintptr_t p = (uintptr_t)((const uint8_t *)op->buf + runs[i].buf_off);
    if (host == FORMAT_RUN_ZERO) {
      continue;
    }
    if (host % al != 0 || len % al != 0 || p % al != 0 || host > file->geo.size ||
        len > file->geo.size - host) {
      return false;
    }
  }
  return true;
}

static void runs_child_done(struct backing_op *c, int result)
{
  struct runs_ctx *ctx = c->opaque;

  if (result < 0) {
    int expected = 0;
    atomic_compare_exchange_strong(&ctx->result, &expected, result);
  }
  if (atomic_fetch_sub(&ctx->pending, 1) == 1) {
    struct backing_op *op = ctx->parent;
    int rc = atomic_load(&ctx->result);
    if (ctx->release != NULL) {
      ctx->release(ctx->arg, ctx->k);
    }
    free(ctx);
    op->done(op, rc);
  }
}

int format_runs_submit(struct backing *file, struct backing_op *op,
                       const struct format_run *runs, uint32_t n,
                       void (*release)(void *arg, uint32_t k), void *arg)
{
  struct runs_ctx *ctx = NULL;
  uint32_t k = 0;

  for (uint32_t i = 0; i < n; i++) {
    k += runs[i].host != FORMAT_RUN_ZERO;
  }
  assert(op->type == BACKING_OP_READ || k == n);
  if (k > 0 && (ctx = malloc(sizeof *ctx + k * sizeof ctx->child[0])) == NULL) {
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (runs[i].host == FORMAT_RUN_ZERO) {
      memset((uint8_t *)op->buf + runs[i].buf_off, 0, runs[i].len);
    }
  }
  if (k == 0) {
    if (release != NULL) {
      release(arg, 0);
    }
    op->done(op, 0);
    return 0;
  }
  *ctx = (struct runs_ctx){.parent = op, .release = release, .arg = arg, .k = k};
  atomic_init(&ctx->pending, k);
  atomic_init(&ctx->result, 0);
  for (uint32_t i = 0, c = 0; i < n; i++) {
    if (runs[i].host != FORMAT_RUN_ZERO) {
      struct backing_op *child = &ctx->child[c++];
      memset(child, 0, sizeof *child);
      child->type = op->type;
      child->flags = op->flags & BACKING_FLAG_FUA;
      child->offset = runs[i].host;
      child->length = runs[i].len;
      child->buf = (uint8_t *)op->buf + runs[i].buf_off;
      child->done = runs_child_done;
      child->opaque = ctx;
      child->engine = op->engine;
      child->nonblocking = op->nonblocking;
      child->fixed_buf = n == 1 ? op->fixed_buf : 0;
    }
  }
  for (uint32_t c = 0; c < k; c++) {
    /* After the last submit ctx may be gone: only k, a local, is read. */
    int rc = backing_submit(file, &ctx->child[c]);
    if (rc < 0) {
      runs_child_done(&ctx->child[c], rc);
    }
  }
  return 0;
}

static void call_complete(struct engine_req *req, ssize_t result)
{
  struct backing_op *op = req->arg;

  op->done(op, (int)result);
}

int format_call_submit(struct engine *engine, struct backing_op *op, ssize_t (*call)(void *op))
{
  if (engine == NULL) {
    op->done(op, (int)call(op));
    return 0;
  }
  memset(&op->ereq, 0, sizeof op->ereq);
  op->ereq.opcode = ENGINE_CALL;
  op->ereq.call = call;
  op->ereq.arg = op;
  op->ereq.complete = call_complete;
  return engine_submit(engine, &op->ereq);
}
