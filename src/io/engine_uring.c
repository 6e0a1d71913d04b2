/* SPDX-License-Identifier: MIT */
/* engine_uring.c: the io_uring engine (liburing). One ring per thread; submitters take the
 * ring's mutex to fill an SQE and submit; one reaper thread per ring waits for CQEs and runs
 * the completions. ENGINE_CALL requests (ioctls, fallocate with fallbacks, read-modify-write)
 * go to a small pool of worker threads (engine_threads.c).
 * Model: liburing's examples (direct ring loops, no hidden layers). */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "io/engine_impl.h"
#include "util/log.h"

#define URING_ENTRIES 256u
#define URING_CQ_ENTRIES 4096u

struct uring_ring {
  struct io_uring ring;
  pthread_mutex_t lock; /* guards the SQ */
  pthread_t reaper;
  bool ready;
};

struct engine_uring {
  struct engine base;
  struct engine *calls; /* worker threads for ENGINE_CALL */
  atomic_uint next;
  unsigned nrings;
  struct uring_ring rings[];
};

/* A CQE with user_data 0 asks the reaper to exit (sent by destroy after a drain). */
static void *reaper_main(void *arg)
{
  struct uring_ring *r = arg;

  for (;;) {
    struct io_uring_cqe *cqe;
    int rc = io_uring_wait_cqe(&r->ring, &cqe);
    if (rc == -EINTR) {
      continue;
    }
    if (rc < 0) {
      log_error("io_uring_wait_cqe: %d", rc);
      return NULL;
    }
    struct engine_req *req = io_uring_cqe_get_data(cqe);
    ssize_t res = cqe->res;
    io_uring_cqe_seen(&r->ring, cqe);
    if (req == NULL) {
      return NULL;
    }
    req->complete(req, res);
  }
}

void engine_uring_prep(struct io_uring_sqe *sqe, struct engine_req *req, bool fixed)
{
  fixed = fixed && req->fixed_buf != 0;
  switch (req->opcode) {
  case ENGINE_READ:
    if (fixed) {
      io_uring_prep_read_fixed(sqe, req->fd, req->buf, (unsigned)req->len, req->offset,
                               (int)(req->fixed_buf - 1));
    } else {
      io_uring_prep_read(sqe, req->fd, req->buf, (unsigned)req->len, req->offset);
    }
    break;
  case ENGINE_WRITE:
    if (fixed) {
      io_uring_prep_write_fixed(sqe, req->fd, req->buf, (unsigned)req->len, req->offset,
                                (int)(req->fixed_buf - 1));
    } else {
      io_uring_prep_write(sqe, req->fd, req->buf, (unsigned)req->len, req->offset);
    }
    sqe->rw_flags = req->rw_flags;
    break;
  case ENGINE_FDATASYNC:
    io_uring_prep_fsync(sqe, req->fd, IORING_FSYNC_DATASYNC);
    break;
  case ENGINE_FSYNC:
  default:
    io_uring_prep_fsync(sqe, req->fd, 0);
    break;
  }
  io_uring_sqe_set_data(sqe, req);
}

static int uring_submit(struct engine *base, struct engine_req *req)
{
  struct engine_uring *e = (struct engine_uring *)base;
  struct uring_ring *r;
  struct io_uring_sqe *sqe;
  int rc;

  if (req->opcode == ENGINE_CALL) {
    return engine_submit(e->calls, req);
  }
  r = &e->rings[atomic_fetch_add(&e->next, 1) % e->nrings];
  pthread_mutex_lock(&r->lock);
  while ((sqe = io_uring_get_sqe(&r->ring)) == NULL) {
    io_uring_submit(&r->ring); /* SQ full: hand what is queued to the kernel */
  }
  engine_uring_prep(sqe, req, false); /* buffers are registered with loops' rings only */
  do {
    rc = io_uring_submit(&r->ring);
  } while (rc == -EINTR || rc == -EAGAIN);
  pthread_mutex_unlock(&r->lock);
  return rc < 0 ? rc : 0;
}

static void uring_destroy(struct engine *base)
{
  struct engine_uring *e = (struct engine_uring *)base;

  /* Callers submit nothing more; a NOP with no data, queued after everything else, ends
   * each reaper once the ring's earlier completions have run. IOSQE_IO_DRAIN orders it. */
  for (unsigned i = 0; i < e->nrings; i++) {
    struct uring_ring *r = &e->rings[i];
    if (!r->ready) {
      continue;
    }
    pthread_mutex_lock(&r->lock);
    struct io_uring_sqe *sqe;
    while ((sqe = io_uring_get_sqe(&r->ring)) == NULL) {
      io_uring_submit(&r->ring);
    }
    io_uring_prep_nop(sqe);
    sqe->flags |= IOSQE_IO_DRAIN;
    io_uring_sqe_set_data(sqe, NULL);
    io_uring_submit(&r->ring);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->reaper, NULL);
    io_uring_queue_exit(&r->ring);
    pthread_mutex_destroy(&r->lock);
  }
  engine_destroy(e->calls);
  free(e);
}

static const struct engine_vtable uring_vtable = {uring_submit, uring_destroy};

int engine_uring_create(unsigned threads, struct engine **out)
{
  struct engine_uring *e = calloc(1, sizeof *e + threads * sizeof(struct uring_ring));
  int rc;

  if (e == NULL) {
    return -ENOMEM;
  }
  e->base.vt = &uring_vtable;
  e->nrings = threads;
  rc = engine_threads_create(threads < 2 ? 2 : threads, &e->calls);
  if (rc < 0) {
    free(e);
    return rc;
  }
  for (unsigned i = 0; i < threads; i++) {
    struct uring_ring *r = &e->rings[i];
    struct io_uring_params p = {0};
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = URING_CQ_ENTRIES;
    rc = io_uring_queue_init_params(URING_ENTRIES, &r->ring, &p);
    if (rc < 0) {
      rc = (rc == -EPERM || rc == -ENOSYS || rc == -EINVAL) ? -ENOSYS : rc;
      break;
    }
    pthread_mutex_init(&r->lock, NULL);
    rc = -pthread_create(&r->reaper, NULL, reaper_main, r);
    if (rc < 0) {
      io_uring_queue_exit(&r->ring);
      pthread_mutex_destroy(&r->lock);
      break;
    }
    r->ready = true;
  }
  if (rc < 0) {
    uring_destroy(&e->base);
    return rc;
  }
  *out = &e->base;
  return 0;
}
