/* SPDX-License-Identifier: MIT */
/* tests/bench/bench_test.h: helpers for the lab's cmocka tests (include after cmocka.h). */
#ifndef DISKGATE_BENCH_TEST_H
#define DISKGATE_BENCH_TEST_H

#include <math.h>

/* Fails unless |a - b| <= eps (cmocka 1.1.5 has no double comparison). */
#define assert_near(a, b, eps)                                                                \
  do {                                                                                        \
    double a_ = (double)(a), b_ = (double)(b);                                                \
    if (!(fabs(a_ - b_) <= (double)(eps))) {                                                  \
      fail_msg("%s = %.12g, expected %.12g (within %g)", #a, a_, b_, (double)(eps));          \
    }                                                                                         \
  } while (0)

#endif
