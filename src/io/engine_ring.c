/* SPDX-License-Identifier: MIT */
/* engine_ring.c: see engine_ring.h. */
#include "io/engine_ring.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "io/engine_impl.h"

struct engine_ring {
  struct engine base;
  struct io_uring *ring;
  pthread_t owner;
  struct engine *fallback;
};

static int ring_submit(struct engine *base, struct engine_req *req)
{
  struct engine_ring *e = (struct engine_ring *)base;
  struct io_uring_sqe *sqe;

  if (req->opcode == ENGINE_CALL || !pthread_equal(pthread_self(), e->owner)) {
    return engine_submit(e->fallback, req);
  }
  while ((sqe = io_uring_get_sqe(e->ring)) == NULL) {
    int rc = io_uring_submit(e->ring); /* SQ full: hand the batch to the kernel now */
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      return rc;
    }
  }
  engine_uring_prep(sqe, req, true); /* this ring: its registered buffers apply */
  assert(((uintptr_t)req & ENGINE_RING_TAG_MASK) == 0);
  io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)req | ENGINE_RING_TAG);
  return 0;
}

void engine_ring_complete(uint64_t user_data, int32_t res)
{
  struct engine_req *req = (struct engine_req *)(uintptr_t)(user_data & ~(uint64_t)ENGINE_RING_TAG_MASK);
  req->complete(req, res);
}

static void ring_destroy(struct engine *base)
{
  free(base);
}

static const struct engine_vtable ring_vtable = {ring_submit, ring_destroy};

int engine_ring_create(struct io_uring *ring, pthread_t owner, struct engine *fallback,
                       struct engine **out)
{
  struct engine_ring *e = calloc(1, sizeof *e);

  if (e == NULL) {
    return -ENOMEM;
  }
  e->base.vt = &ring_vtable;
  e->ring = ring;
  e->owner = owner;
  e->fallback = fallback;
  *out = &e->base;
  return 0;
}

void engine_ring_destroy(struct engine *engine)
{
  if (engine != NULL) {
    engine->vt->destroy(engine);
  }
}
