/* engine_threads.c: the portable engine. Worker threads take requests from one FIFO and
 * run them with pread/pwritev2/fdatasync/fsync; completions run on the worker. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/engine_impl.h"

struct engine_threads {
  struct engine base;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct engine_req *head;
  struct engine_req *tail;
  bool stopping;
  unsigned nthreads;
  pthread_t threads[];
};

ssize_t engine_run_blocking(struct engine_req *req)
{
  ssize_t r;
  struct iovec iov = {req->buf, req->len};

  switch (req->opcode) {
  case ENGINE_READ:
    r = pread(req->fd, req->buf, req->len, (off_t)req->offset);
    break;
  case ENGINE_WRITE:
    r = pwritev2(req->fd, &iov, 1, (off_t)req->offset, req->rw_flags);
    break;
  case ENGINE_FDATASYNC:
    r = fdatasync(req->fd);
    break;
  case ENGINE_FSYNC:
    r = fsync(req->fd);
    break;
  case ENGINE_CALL:
    return req->call(req->arg);
  default:
    return -EINVAL;
  }
  return r < 0 ? -errno : r;
}

static void *worker_main(void *arg)
{
  struct engine_threads *e = arg;

  for (;;) {
    struct engine_req *req;

    pthread_mutex_lock(&e->lock);
    while (e->head == NULL && !e->stopping) {
      pthread_cond_wait(&e->cond, &e->lock);
    }
    req = e->head;
    if (req == NULL) { /* stopping and drained */
      pthread_mutex_unlock(&e->lock);
      return NULL;
    }
    e->head = req->next;
    if (e->head == NULL) {
      e->tail = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    req->complete(req, engine_run_blocking(req));
  }
}

static int threads_submit(struct engine *base, struct engine_req *req)
{
  struct engine_threads *e = (struct engine_threads *)base;

  req->next = NULL;
  pthread_mutex_lock(&e->lock);
  if (e->stopping) {
    pthread_mutex_unlock(&e->lock);
    return -ESHUTDOWN;
  }
  if (e->tail != NULL) {
    e->tail->next = req;
  } else {
    e->head = req;
  }
  e->tail = req;
  pthread_cond_signal(&e->cond);
  pthread_mutex_unlock(&e->lock);
  return 0;
}

static void threads_destroy(struct engine *base)
{
  struct engine_threads *e = (struct engine_threads *)base;

  pthread_mutex_lock(&e->lock);
  e->stopping = true; /* workers drain the queue, then exit */
  pthread_cond_broadcast(&e->cond);
  pthread_mutex_unlock(&e->lock);
  for (unsigned i = 0; i < e->nthreads; i++) {
    pthread_join(e->threads[i], NULL);
  }
  pthread_mutex_destroy(&e->lock);
  pthread_cond_destroy(&e->cond);
  free(e);
}

static const struct engine_vtable threads_vtable = {threads_submit, threads_destroy};

int engine_threads_create(unsigned threads, struct engine **out)
{
  struct engine_threads *e = calloc(1, sizeof *e + threads * sizeof(pthread_t));

  if (e == NULL) {
    return -ENOMEM;
  }
  e->base.vt = &threads_vtable;
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->cond, NULL);
  for (unsigned i = 0; i < threads; i++) {
    int rc = pthread_create(&e->threads[i], NULL, worker_main, e);
    if (rc != 0) {
      e->nthreads = i;
      threads_destroy(&e->base);
      return -rc;
    }
    e->nthreads = i + 1;
  }
  assert(e->nthreads == threads);
  *out = &e->base;
  return 0;
}
