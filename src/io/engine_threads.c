/* engine_threads.c: the portable engine. Worker threads take requests from one FIFO and
 * run them with pread/pwritev2/fdatasync/fsync; completions run on the worker.
 *
 * A request may wait for another one still in the FIFO (a write waiting at the file
 * backing's gate for a read-modify-write queued behind it, or at the export's fence). When
 * every worker waits so, nothing would run the FIFO: the pool deadlocks (a tester hung the
 * server with four connections writing overlapping unaligned ranges). So a worker about to
 * wait says so (engine_wait_begin), and when no other worker is left to run requests the
 * pool starts one more, up to THREADS_EXTRA_MAX beyond its size, as io_uring's io-wq does
 * for a worker that blocks. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/engine_impl.h"

#define THREADS_EXTRA_MAX 256u

struct engine_threads {
  struct engine base;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct engine_req *head;
  struct engine_req *tail;
  bool stopping;
  unsigned nthreads;        /* started (the pool's size, plus extra ones) */
  unsigned cap;             /* at most this many: the size + THREADS_EXTRA_MAX */
  unsigned waiting;         /* workers inside engine_wait_begin/end */
  pthread_t threads[];
};

/* The pool the calling thread works for; NULL on other threads. */
static _Thread_local struct engine_threads *current_pool;

static void *worker_main(void *arg);

/* Starts one more worker. Caller holds e->lock. Returns 0 or -errno (pthread_create). */
static int worker_add(struct engine_threads *e)
{
  int rc;

  assert(e->nthreads < e->cap);
  rc = pthread_create(&e->threads[e->nthreads], NULL, worker_main, e);
  if (rc != 0) {
    return -rc;
  }
  e->nthreads++;
  return 0;
}

void engine_wait_begin(void)
{
  struct engine_threads *e = current_pool;

  if (e == NULL) {
    return; /* not a worker: a connection's or a loop's thread waits on its own */
  }
  pthread_mutex_lock(&e->lock);
  e->waiting++;
  if (e->waiting >= e->nthreads && e->nthreads < e->cap && !e->stopping) {
    (void)worker_add(e); /* no other worker left for the FIFO; none more if it fails */
  }
  pthread_mutex_unlock(&e->lock);
}

void engine_wait_end(void)
{
  struct engine_threads *e = current_pool;

  if (e == NULL) {
    return;
  }
  pthread_mutex_lock(&e->lock);
  assert(e->waiting > 0);
  e->waiting--;
  pthread_mutex_unlock(&e->lock);
}

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

  current_pool = e;
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

  unsigned n;

  pthread_mutex_lock(&e->lock);
  e->stopping = true; /* workers drain the queue, then exit; no worker is added now */
  pthread_cond_broadcast(&e->cond);
  n = e->nthreads;
  pthread_mutex_unlock(&e->lock);
  for (unsigned i = 0; i < n; i++) {
    pthread_join(e->threads[i], NULL);
  }
  pthread_mutex_destroy(&e->lock);
  pthread_cond_destroy(&e->cond);
  free(e);
}

static const struct engine_vtable threads_vtable = {threads_submit, threads_destroy};

int engine_threads_create(unsigned threads, struct engine **out)
{
  unsigned cap = threads + THREADS_EXTRA_MAX;
  struct engine_threads *e = calloc(1, sizeof *e + cap * sizeof(pthread_t));

  if (e == NULL) {
    return -ENOMEM;
  }
  e->base.vt = &threads_vtable;
  e->cap = cap;
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->cond, NULL);
  for (unsigned i = 0; i < threads; i++) {
    pthread_mutex_lock(&e->lock);
    int rc = worker_add(e);
    pthread_mutex_unlock(&e->lock);
    if (rc < 0) {
      threads_destroy(&e->base);
      return rc;
    }
  }
  assert(e->nthreads == threads);
  *out = &e->base;
  return 0;
}
