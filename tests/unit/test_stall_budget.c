/* SPDX-License-Identifier: MIT */
/* Unit tests of the stall budget of inline page-cache writes (src/backing/stall_budget.c):
 * fast writes and occasional stalls keep inline writes on; stalls that add up to more than
 * STALL_BUDGET_NS in one STALL_WINDOW_NS turn them off for STALL_BACKOFF_NS, after which
 * they are on again with a fresh budget. The clock is the tests'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backing/stall_budget.h"

#define MS 1000000LL
#define US 1000LL
#define T0 (1000LL * STALL_WINDOW_NS) /* any start: CLOCK_MONOTONIC is far from 0 */

static void test_fresh_budget_allows(void **state)
{
  struct stall_budget b;

  (void)state;
  stall_budget_init(&b);
  assert_true(stall_budget_allows(&b, T0));
}

/* Writes of 900 us (a loop preempted during a copy on a busy machine), 2,000 in a row for
 * 2 s of wall time, are never charged: only writes slower than STALL_COUNT_NS count. */
static void test_writes_under_the_count_threshold_are_free(void **state)
{
  struct stall_budget b;
  long long t = T0;

  (void)state;
  stall_budget_init(&b);
  for (int i = 0; i < 2000; i++) {
    assert_false(stall_budget_charge(&b, t, STALL_COUNT_NS - 100 * US));
    t += STALL_COUNT_NS;
  }
  assert_true(stall_budget_allows(&b, t));
}

/* Sustained blocking in pieces just over the threshold is caught: 1.2 ms writes, one every
 * 10 ms; the ninth brings the window to 10.8 ms and turns inline writes off. */
static void test_sustained_short_blocks_turn_inline_writes_off(void **state)
{
  struct stall_budget b;

  (void)state;
  stall_budget_init(&b);
  for (int i = 0; i < 8; i++) {
    assert_false(stall_budget_charge(&b, T0 + i * 10 * MS, 1200 * US));
  }
  assert_true(stall_budget_charge(&b, T0 + 80 * MS, 1200 * US));
  assert_false(stall_budget_allows(&b, T0 + 82 * MS));
}

/* The T4 case: one 4 ms stall every second for a minute keeps inline writes on
 * (before, the first of them turned them off for 5 s). */
static void test_one_stall_a_second_keeps_inline_writes(void **state)
{
  struct stall_budget b;

  (void)state;
  stall_budget_init(&b);
  for (long long s = 0; s < 60; s++) {
    long long start = T0 + s * STALL_WINDOW_NS + 300 * MS;
    assert_true(stall_budget_allows(&b, start));
    assert_false(stall_budget_charge(&b, start, 4 * MS));
  }
  assert_true(stall_budget_allows(&b, T0 + 61 * STALL_WINDOW_NS));
}

/* Three 4 ms stalls within one window spend 12 ms > 10 ms: the third turns inline writes
 * off from its end for STALL_BACKOFF_NS, and they are on again after it. */
static void test_stalls_over_budget_turn_inline_writes_off(void **state)
{
  struct stall_budget b;
  long long third = T0 + 200 * MS, end;

  (void)state;
  stall_budget_init(&b);
  assert_false(stall_budget_charge(&b, T0, 4 * MS));
  assert_false(stall_budget_charge(&b, T0 + 100 * MS, 4 * MS));
  assert_true(stall_budget_charge(&b, third, 4 * MS));
  end = third + 4 * MS + STALL_BACKOFF_NS;
  assert_false(stall_budget_allows(&b, third + 4 * MS));
  assert_false(stall_budget_allows(&b, end - 1));
  assert_true(stall_budget_allows(&b, end));
  /* a fresh budget after the back-off: one more 4 ms stall is allowed */
  assert_false(stall_budget_charge(&b, end + MS, 4 * MS));
  assert_true(stall_budget_allows(&b, end + 10 * MS));
}

/* One write that blocks longer than the whole budget turns them off at once. */
static void test_one_long_block_turns_inline_writes_off(void **state)
{
  struct stall_budget b;

  (void)state;
  stall_budget_init(&b);
  assert_true(stall_budget_charge(&b, T0, STALL_BUDGET_NS + 1));
  assert_false(stall_budget_allows(&b, T0 + STALL_BUDGET_NS + 1));
}

/* The budget is per window: 9.5 ms of stalls in one window (1.5 ms at its start, 8 ms at
 * its end) and 8 ms early in the next stay on (17.5 ms within 1.1 s of wall time, but never
 * over 10 ms in one window). */
static void test_budget_renews_each_window(void **state)
{
  struct stall_budget b;
  long long next = T0 + STALL_WINDOW_NS;

  (void)state;
  stall_budget_init(&b);
  assert_false(stall_budget_charge(&b, T0, 1500 * US)); /* opens the window at T0 */
  assert_false(stall_budget_charge(&b, next - 100 * MS, 4 * MS));
  assert_false(stall_budget_charge(&b, next - 50 * MS, 4 * MS));
  assert_false(stall_budget_charge(&b, next + MS, 4 * MS));
  assert_false(stall_budget_charge(&b, next + 6 * MS, 4 * MS));
  assert_true(stall_budget_allows(&b, next + 10 * MS));
  /* and the new window's budget is spent like the first's: 8 + 4 = 12 ms */
  assert_true(stall_budget_charge(&b, next + 20 * MS, 4 * MS));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fresh_budget_allows),
      cmocka_unit_test(test_writes_under_the_count_threshold_are_free),
      cmocka_unit_test(test_sustained_short_blocks_turn_inline_writes_off),
      cmocka_unit_test(test_one_stall_a_second_keeps_inline_writes),
      cmocka_unit_test(test_stalls_over_budget_turn_inline_writes_off),
      cmocka_unit_test(test_one_long_block_turns_inline_writes_off),
      cmocka_unit_test(test_budget_renews_each_window),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
