/* SPDX-License-Identifier: MIT */
/* engine_impl.h: what each engine implementation provides to engine.c. Internal to src/io. */
#ifndef DISKGATE_IO_ENGINE_IMPL_H
#define DISKGATE_IO_ENGINE_IMPL_H

#include <stdbool.h>

#include "io/engine.h"

struct engine_vtable {
  int (*submit)(struct engine *engine, struct engine_req *req);
  void (*destroy)(struct engine *engine);
};

struct engine {
  const struct engine_vtable *vt;
};

/* Contracts as engine_create(); -ENOSYS when io_uring cannot be set up. */
int engine_uring_create(unsigned threads, struct engine **out);
int engine_threads_create(unsigned threads, struct engine **out);

struct io_uring_sqe;

/* Fills an SQE for a READ, WRITE, FDATASYNC or FSYNC request (not CALL); user data = req.
 * With `fixed` (the ring is the one req->fixed_buf was registered with), a READ or WRITE
 * with fixed_buf != 0 becomes READ_FIXED / WRITE_FIXED. Any thread that owns the SQE. */
void engine_uring_prep(struct io_uring_sqe *sqe, struct engine_req *req, bool fixed);

/* Runs one request synchronously on the calling thread and returns its result
 * (bytes or -errno). Used by the worker threads of both engines. */
ssize_t engine_run_blocking(struct engine_req *req);

#endif
