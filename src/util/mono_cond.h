/* SPDX-License-Identifier: MIT */
/* mono_cond.h: condition variables whose timed waits run on CLOCK_MONOTONIC, and deadlines
 * on that clock, so that a step of the wall clock (NTP, `date -s`) neither stretches nor
 * cuts a wait (pthread_cond_timedwait takes an absolute time on the variable's clock).
 * Source: pthread_condattr_setclock(3p), clock_gettime(2). Any thread. */
#ifndef DISKGATE_UTIL_MONO_COND_H
#define DISKGATE_UTIL_MONO_COND_H

#include <pthread.h>
#include <time.h>

/* Initialises `c` with CLOCK_MONOTONIC as the clock of its timed waits. Returns 0 or -errno
 * (pthread's error: -ENOMEM, -EINVAL). Destroy with pthread_cond_destroy. */
int mono_cond_init(pthread_cond_t *c);

/* `t` set to CLOCK_MONOTONIC now plus `ms` milliseconds (ms >= 0): a deadline for
 * pthread_cond_timedwait on a variable from mono_cond_init. */
void mono_cond_deadline(struct timespec *t, long ms);

/* Milliseconds from `t0` (taken on CLOCK_MONOTONIC) to now. */
long mono_ms_since(const struct timespec *t0);

#endif
