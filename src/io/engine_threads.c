/* SPDX-License-Identifier: MIT */
/* engine_threads.c: the portable engine. Worker threads take requests from one FIFO and
 * run them with pread/pwritev2/fdatasync/fsync; completions run on the worker.
 *
 * A request may wait for another one still in the FIFO (a write waiting at the file
 * backing's gate for a read-modify-write queued behind it, or at the export's fence). When
 * every worker waits so, nothing would run the FIFO: the pool deadlocks (a tester hung the
 * server with four connections writing overlapping unaligned ranges). So a worker about to
 * wait says so (engine_wait_begin), and when no other worker is left to run requests the
 * pool starts one more, up to THREADS_EXTRA_MAX beyond its size, as io_uring's io-wq does
 * for a worker that blocks; an extra worker exits after THREADS_EXTRA_IDLE_S idle.
 * Event loops no longer make workers wait for queued work (the fence parks writes, and
 * the gate is taken by the worker that runs the request: server/fence.c,
 * backing/file_io.c); connections on the thread path (TLS, --engine threads) still take
 * the gate before queueing, which this covers. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "io/engine_impl.h"
#include "util/mono_cond.h"

#define THREADS_EXTRA_MAX 256u
#define THREADS_EXTRA_IDLE_S 5 /* an extra worker idle this long exits */

struct engine_threads {
  struct engine base;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_cond_t extra_gone; /* an extra worker exited */
  struct engine_req *head;
  struct engine_req *tail;
  bool stopping;
  unsigned nthreads;        /* the pool's own workers (joined by threads_destroy) */
  unsigned extra;           /* extra workers alive (detached; they exit when idle) */
  unsigned waiting;         /* workers inside engine_wait_begin/end */
  pthread_t threads[];
};

/* The pool the calling thread works for; NULL on other threads. */
static _Thread_local struct engine_threads *current_pool;

static void *extra_main(void *arg);

void engine_wait_begin(void)
{
  struct engine_threads *e = current_pool;
  pthread_attr_t attr;
  pthread_t t;

  if (e == NULL) {
    return; /* not a worker: a connection's or a loop's thread waits on its own */
  }
  pthread_mutex_lock(&e->lock);
  e->waiting++;
  if (e->waiting >= e->nthreads + e->extra && e->extra < THREADS_EXTRA_MAX && !e->stopping &&
      pthread_attr_init(&attr) == 0) {
    /* no other worker left for the FIFO; none more if this fails */
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, extra_main, e) == 0) {
      e->extra++;
    }
    pthread_attr_destroy(&attr);
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

/* Takes requests until the pool stops (and, for an extra worker, until it has been idle
 * THREADS_EXTRA_IDLE_S). */
static void worker_loop(struct engine_threads *e, bool extra)
{
  current_pool = e;
  for (;;) {
    struct engine_req *req;

    struct timespec until; /* an extra worker's idle deadline, from when it became idle */

    mono_cond_deadline(&until, THREADS_EXTRA_IDLE_S * 1000L); /* e->cond: mono_cond_init */
    pthread_mutex_lock(&e->lock);
    while (e->head == NULL && !e->stopping) {
      if (!extra) {
        pthread_cond_wait(&e->cond, &e->lock);
      } else if (pthread_cond_timedwait(&e->cond, &e->lock, &until) == ETIMEDOUT &&
                 e->head == NULL) {
        break; /* idle: the pool's own workers are enough again */
      }
    }
    req = e->head;
    if (req == NULL) { /* stopping and drained, or an idle extra worker */
      if (extra) {
        e->extra--;
        pthread_cond_signal(&e->extra_gone); /* threads_destroy may wait for the extras */
      }
      pthread_mutex_unlock(&e->lock);
      return;
    }
    e->head = req->next;
    if (e->head == NULL) {
      e->tail = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    req->complete(req, engine_run_blocking(req));
  }
}

static void *worker_main(void *arg)
{
  worker_loop(arg, false);
  return NULL;
}

static void *extra_main(void *arg)
{
  worker_loop(arg, true);
  return NULL;
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
  e->stopping = true; /* workers drain the queue, then exit; no worker is added now */
  pthread_cond_broadcast(&e->cond);
  pthread_mutex_unlock(&e->lock);
  for (unsigned i = 0; i < e->nthreads; i++) {
    pthread_join(e->threads[i], NULL);
  }
  pthread_mutex_lock(&e->lock);
  while (e->extra > 0) { /* detached: each says when it is gone */
    pthread_cond_wait(&e->extra_gone, &e->lock);
  }
  pthread_mutex_unlock(&e->lock);
  pthread_mutex_destroy(&e->lock);
  pthread_cond_destroy(&e->cond);
  pthread_cond_destroy(&e->extra_gone);
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
  int rc = mono_cond_init(&e->cond); /* idle deadlines ignore clock steps */
  if (rc < 0) {
    pthread_mutex_destroy(&e->lock);
    free(e);
    return rc;
  }
  pthread_cond_init(&e->extra_gone, NULL);
  for (unsigned i = 0; i < threads; i++) {
    rc = pthread_create(&e->threads[i], NULL, worker_main, e);
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
