/* SPDX-License-Identifier: MIT */
/* Unit tests of the monotonic condition variables (src/util/mono_cond.c): a deadline is now
 * plus the milliseconds asked, normalised (tv_nsec below 1e9), on CLOCK_MONOTONIC; a
 * variable from mono_cond_init times its waits on that clock: a wait for a deadline 50 ms
 * ahead returns ETIMEDOUT after about 50 ms (on CLOCK_REALTIME, a monotonic deadline is
 * decades in the past: no wait at all). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "util/mono_cond.h"

static int64_t ns_of(const struct timespec *t)
{
  return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int64_t mono_now_ns(void)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return ns_of(&t);
}

static void test_deadline_adds_and_normalises(void **state)
{
  long steps[] = {0, 1, 999, 1000, 1500, 2999, 61001};

  (void)state;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    struct timespec t;
    int64_t before = mono_now_ns(), after;

    mono_cond_deadline(&t, steps[i]);
    after = mono_now_ns();
    assert_true(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
    assert_true(ns_of(&t) >= before + steps[i] * 1000000LL);
    assert_true(ns_of(&t) <= after + steps[i] * 1000000LL);
  }
}

static void test_waits_run_on_the_monotonic_clock(void **state)
{
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c;
  struct timespec t;
  int64_t t0, waited;

  (void)state;
  assert_int_equal(mono_cond_init(&c), 0);
  pthread_mutex_lock(&m);
  mono_cond_deadline(&t, 50);
  t0 = mono_now_ns();
  assert_int_equal(pthread_cond_timedwait(&c, &m, &t), ETIMEDOUT);
  waited = mono_now_ns() - t0;
  assert_true(waited >= 45 * 1000000LL);   /* it waited: on CLOCK_REALTIME, none at all */
  assert_true(waited < 5000 * 1000000LL);  /* and not for ever */
  pthread_mutex_unlock(&m);
  pthread_cond_destroy(&c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_deadline_adds_and_normalises),
    cmocka_unit_test(test_waits_run_on_the_monotonic_clock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
