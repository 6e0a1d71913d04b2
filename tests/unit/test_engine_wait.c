/* SPDX-License-Identifier: MIT */
/* Unit tests of engine_wait_begin/end (src/io/engine_threads.c): a worker that waits for a
 * request queued behind it gets a replacement, so the queued request runs: with one worker
 * and no replacement, request A (waiting for B) would hold the only worker and B never run,
 * hanging the whole server (four connections, overlapping unaligned writes). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "io/engine.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool b_ran;
static int done;

/* A: waits up to 5 s for B, inside engine_wait_begin/end. Returns 0, or -ETIMEDOUT. */
static ssize_t call_a(void *arg)
{
  struct timespec until;
  ssize_t rc = 0;

  (void)arg;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  engine_wait_begin();
  pthread_mutex_lock(&lock);
  while (!b_ran && rc == 0) {
    if (pthread_cond_timedwait(&cond, &lock, &until) == ETIMEDOUT) {
      rc = -ETIMEDOUT;
    }
  }
  pthread_mutex_unlock(&lock);
  engine_wait_end();
  return rc;
}

/* B: what A waits for. */
static ssize_t call_b(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&lock);
  b_ran = true;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  return 0;
}

static void complete(struct engine_req *req, ssize_t result)
{
  pthread_mutex_lock(&lock);
  *(ssize_t *)req->arg = result;
  done++;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
}

/* `waiters` requests A, each waiting for B, then B, on an engine with `threads` workers
 * (the uring engine's ENGINE_CALL pool has at least 2): every A must see B run. */
static void run_case(enum engine_kind kind, size_t waiters)
{
  struct engine *e;
  struct engine_req reqs[4];
  ssize_t res[4];

  assert_true(waiters < 4);
  b_ran = false;
  done = 0;
  for (size_t i = 0; i <= waiters; i++) {
    res[i] = 1;
    reqs[i] = (struct engine_req){.opcode = ENGINE_CALL, .call = i < waiters ? call_a : call_b,
                                  .arg = &res[i], .complete = complete};
  }
  assert_int_equal(engine_create(kind, 1, &e), 0);
  for (size_t i = 0; i <= waiters; i++) {
    assert_int_equal(engine_submit(e, &reqs[i]), 0);
  }
  pthread_mutex_lock(&lock);
  while (done < (int)waiters + 1) {
    pthread_cond_wait(&cond, &lock);
  }
  pthread_mutex_unlock(&lock);
  engine_destroy(e);
  for (size_t i = 0; i <= waiters; i++) {
    assert_int_equal(res[i], 0); /* each A saw B run: B was not stuck behind the waiters */
  }
}

static void test_threads_engine_replaces_a_waiting_worker(void **state)
{
  (void)state;
  run_case(ENGINE_THREADS, 1);
}

static void test_uring_engine_calls_replace_waiting_workers(void **state)
{
  (void)state;
  run_case(ENGINE_URING, 2); /* both of its call workers wait: B needs a third */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_threads_engine_replaces_a_waiting_worker),
    cmocka_unit_test(test_uring_engine_calls_replace_waiting_workers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
