/* SPDX-License-Identifier: MIT */
/* loop.c: see loop.h. */
#include "io/loop.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/engine_ring.h"
#include "io/loop_bufs.h"
#include "util/log.h"

#define LOOP_ENTRIES 1024u
#define LOOP_CQ_ENTRIES 8192u
#define LOOP_TAG_EVENTFD 4u

_Static_assert(ENGINE_RING_TAG_MASK == LOOP_TAG_MASK, "one tag space for the ring's CQEs");
_Static_assert(LOOP_TAG_CLIENT_0 != ENGINE_RING_TAG && LOOP_TAG_CLIENT_1 != ENGINE_RING_TAG &&
                   LOOP_TAG_EVENTFD != LOOP_TAG_CLIENT_0 && LOOP_TAG_EVENTFD != LOOP_TAG_CLIENT_1,
               "each CQE tag has one owner");

struct loop {
  struct io_uring ring;
  pthread_t thread;
  struct engine *engine;   /* ring engine, owned */
  struct engine *fallback; /* shared workers and rings, not owned */
  const struct loop_ops *ops;
  int efd;
  uint64_t efd_value;      /* the eventfd read's buffer */
  /* inbox, under lock: clients to adopt, work posted from other threads */
  pthread_mutex_t lock;
  struct loop_client *inbox_clients;
  struct loop_post *inbox_posts;
  bool stopping;
  bool disabled;           /* created with IORING_SETUP_R_DISABLED: loop_main enables it */
  /* loop-thread state */
  struct loop_client *marked; /* clients to advance after this batch */
  unsigned nclients;
  struct loop_bufs bufs;    /* buffers registered with the ring (loop thread) */
};

static _Thread_local struct loop *current_loop;

struct engine *loop_engine(struct loop *l)
{
  return l->engine;
}

bool loop_on_thread(const struct loop *l)
{
  return current_loop == l;
}

unsigned loop_buf_register(struct loop *l, void *buf, size_t len)
{
  assert(loop_on_thread(l));
  return loop_bufs_add(&l->bufs, buf, len);
}

void loop_buf_unregister(void *loop, unsigned fixed)
{
  struct loop *l = loop;

  assert(loop_on_thread(l));
  loop_bufs_remove(&l->bufs, fixed);
}

struct io_uring *loop_ring(struct loop *l)
{
  return &l->ring;
}

static void loop_wake(struct loop *l)
{
  uint64_t one = 1;
  ssize_t n = write(l->efd, &one, sizeof one);
  (void)n; /* a full counter still wakes the loop */
}

/* Pushes a client to adopt (c) or posted work (p), whichever is not NULL, onto the inbox
 * and wakes the loop. Any thread. */
static void inbox_push(struct loop *l, struct loop_client *c, struct loop_post *p)
{
  pthread_mutex_lock(&l->lock);
  if (c != NULL) {
    c->next = l->inbox_clients;
    l->inbox_clients = c;
  } else {
    p->next = l->inbox_posts;
    l->inbox_posts = p;
  }
  pthread_mutex_unlock(&l->lock);
  loop_wake(l);
}

void loop_post(struct loop *l, struct loop_post *p)
{
  inbox_push(l, NULL, p);
}

void loop_mark(struct loop *l, struct loop_client *c)
{
  assert(loop_on_thread(l));
  if (!c->marked) {
    c->marked = true;
    c->next = l->marked;
    l->marked = c;
  }
}

static void post_eventfd_read(struct loop *l)
{
  struct io_uring_sqe *sqe;

  while ((sqe = io_uring_get_sqe(&l->ring)) == NULL) {
    io_uring_submit(&l->ring);
  }
  io_uring_prep_read(sqe, l->efd, &l->efd_value, sizeof l->efd_value, 0);
  io_uring_sqe_set_data64(sqe, LOOP_TAG_EVENTFD);
}

/* Takes the inbox: adopts new clients, runs work posted from other threads. */
static void drain_inbox(struct loop *l)
{
  struct loop_client *clients;
  struct loop_post *posts;

  pthread_mutex_lock(&l->lock);
  clients = l->inbox_clients;
  posts = l->inbox_posts;
  l->inbox_clients = NULL;
  l->inbox_posts = NULL;
  pthread_mutex_unlock(&l->lock);
  while (clients != NULL) {
    struct loop_client *c = clients;
    clients = c->next;
    c->next = NULL;
    int rc = l->ops->adopt(l, c);
    if (rc == 0) {
      l->nclients++;
      loop_mark(l, c);
    } else {
      l->ops->release(c, rc);
    }
  }
  while (posts != NULL) {
    struct loop_post *p = posts;
    posts = p->next;
    l->ops->posted(p);
  }
}

static void dispatch(struct loop *l, struct io_uring_cqe *cqe)
{
  uint64_t data = io_uring_cqe_get_data64(cqe);
  unsigned tag = (unsigned)(data & ENGINE_RING_TAG_MASK);
  void *ptr = (void *)(uintptr_t)(data & ~(uint64_t)ENGINE_RING_TAG_MASK);

  switch (tag) {
  case ENGINE_RING_TAG:
    engine_ring_complete(data, cqe->res);
    break;
  case LOOP_TAG_CLIENT_0:
  case LOOP_TAG_CLIENT_1:
    l->ops->complete(ptr, tag, cqe->res);
    break;
  case LOOP_TAG_EVENTFD:
    drain_inbox(l);
    post_eventfd_read(l);
    break;
  default:
    log_error("event loop: unexpected completion tag %u", tag);
    break;
  }
}

static void *loop_main(void *arg)
{
  struct loop *l = arg;

  current_loop = l;
  if (l->disabled) {
    /* IORING_REGISTER_ENABLE_RINGS: this thread becomes the single issuer. (Debian 12's
     * liburing 2.3 declares io_uring_enable_rings but does not export it.) */
    if (syscall(__NR_io_uring_register, l->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL,
                0) < 0) {
      log_error("event loop: enabling the ring: %s", strerror(errno));
      return NULL;
    }
  }
  loop_bufs_init(&l->bufs, &l->ring); /* on this thread: the issuer registers */
  post_eventfd_read(l);
  for (;;) {
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    int rc = io_uring_submit_and_wait(&l->ring, 1);

    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -ETIME) {
      log_error("event loop: io_uring_submit_and_wait: %s", strerror(-rc));
      break;
    }
    io_uring_for_each_cqe(&l->ring, head, cqe) {
      dispatch(l, cqe);
      seen++;
    }
    io_uring_cq_advance(&l->ring, seen);
    while (l->marked != NULL) {
      struct loop_client *c = l->marked;
      l->marked = c->next;
      c->next = NULL;
      c->marked = false;
      if (l->ops->advance(c)) {
        l->nclients--;
        l->ops->release(c, 0);
      }
    }
    pthread_mutex_lock(&l->lock);
    bool stop = l->stopping && l->nclients == 0 && l->inbox_clients == NULL;
    pthread_mutex_unlock(&l->lock);
    if (stop) {
      break;
    }
  }
  return NULL;
}

static void loop_free(struct loop *l)
{
  engine_ring_destroy(l->engine);
  io_uring_queue_exit(&l->ring);
  close(l->efd);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

static int loop_create(const struct loop_ops *ops, struct engine *fallback, struct loop **out)
{
  struct io_uring_params p = {0};
  struct loop *l = calloc(1, sizeof *l);
  int rc;

  if (l == NULL) {
    return -ENOMEM;
  }
  l->fallback = fallback;
  l->ops = ops;
  pthread_mutex_init(&l->lock, NULL);
  l->efd = eventfd(0, EFD_CLOEXEC);
  if (l->efd < 0) {
    rc = -errno;
    pthread_mutex_destroy(&l->lock);
    free(l);
    return rc;
  }
  /* Only the loop thread submits, and it only reaps while it waits in io_uring_enter:
   * SINGLE_ISSUER + DEFER_TASKRUN (Linux 6.1) run completion work at that wait instead of
   * interrupting the thread for each one (fewer context switches per request: measured in
   * docs/performance.md). The ring starts disabled and the loop thread enables it, which
   * makes that thread its issuer. Older kernels: COOP_TASKRUN (5.19), else plain. */
  static const unsigned modes[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  rc = -EINVAL;
  for (size_t i = 0; i < sizeof modes / sizeof modes[0] && rc == -EINVAL; i++) {
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE | modes[i];
    p.cq_entries = LOOP_CQ_ENTRIES;
    rc = io_uring_queue_init_params(LOOP_ENTRIES, &l->ring, &p);
  }
  l->disabled = rc == 0 && (p.flags & IORING_SETUP_R_DISABLED) != 0;
  if (rc < 0) {
    close(l->efd);
    pthread_mutex_destroy(&l->lock);
    free(l);
    return rc == -EPERM || rc == -ENOSYS || rc == -EINVAL ? -ENOSYS : rc;
  }
  rc = -pthread_create(&l->thread, NULL, loop_main, l);
  if (rc == 0) {
    rc = engine_ring_create(&l->ring, l->thread, fallback, &l->engine);
    if (rc < 0) {
      pthread_mutex_lock(&l->lock);
      l->stopping = true;
      pthread_mutex_unlock(&l->lock);
      loop_wake(l);
      pthread_join(l->thread, NULL);
    }
  }
  if (rc < 0) {
    io_uring_queue_exit(&l->ring);
    close(l->efd);
    pthread_mutex_destroy(&l->lock);
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

int loop_start_all(unsigned n, const struct loop_ops *ops, struct engine *fallback,
                   struct loop ***out)
{
  struct loop **loops;

  if (n == 0 || n > 64) {
    return -EINVAL;
  }
  loops = calloc(n, sizeof *loops);
  if (loops == NULL) {
    return -ENOMEM;
  }
  for (unsigned i = 0; i < n; i++) {
    int rc = loop_create(ops, fallback, &loops[i]);
    if (rc < 0) {
      loop_stop_all(loops, i);
      return rc;
    }
  }
  *out = loops;
  return 0;
}

struct loop *loop_pick(struct loop **loops, unsigned n)
{
  static atomic_uint next;

  return loops[atomic_fetch_add(&next, 1) % n];
}

void loop_add(struct loop *l, struct loop_client *c)
{
  inbox_push(l, c, NULL);
}

void loop_stop_all(struct loop **loops, unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    struct loop *l = loops[i];
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_mutex_unlock(&l->lock);
    loop_wake(l);
    pthread_join(l->thread, NULL);
    loop_free(l);
  }
  free(loops);
}
