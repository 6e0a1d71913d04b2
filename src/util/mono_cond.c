/* SPDX-License-Identifier: MIT */
/* mono_cond.c: see mono_cond.h. */
#include "util/mono_cond.h"

#include <assert.h>

int mono_cond_init(pthread_cond_t *c)
{
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);

  if (rc == 0) {
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0) {
      rc = pthread_cond_init(c, &ca);
    }
    pthread_condattr_destroy(&ca);
  }
  return -rc;
}

void mono_cond_deadline(struct timespec *t, long ms)
{
  assert(ms >= 0);
  clock_gettime(CLOCK_MONOTONIC, t);
  t->tv_nsec += ms % 1000 * 1000000L;
  t->tv_sec += ms / 1000 + t->tv_nsec / 1000000000L;
  t->tv_nsec %= 1000000000L;
}

long mono_ms_since(const struct timespec *t0)
{
  struct timespec now;

  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long)(now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}
