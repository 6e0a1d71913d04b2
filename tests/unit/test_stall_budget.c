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

/* The collapse of many connections writing into one file: 32 loops blocked at once on the
 * file's write lock for about 1.9 ms, five times in half a second. Summed, the first convoy
 * alone was some 55 ms; charged as wall time the five are 9.7 ms: inline writes stay on,
 * and go off at a sixth stall of 2 ms, as the same stalls on one loop would. */
static void test_loops_waiting_together_are_charged_once(void **state)
{
  struct stall_budget b;

  (void)state;
  stall_budget_init(&b);
  for (int convoy = 0; convoy < 5; convoy++) {
    long long start = T0 + convoy * 100 * MS;
    for (int loop = 0; loop < 32; loop++) {
      /* the loops queued one after another and got the lock in turn, 1 us apart */
      long long from = start + loop * 10 * US;
      assert_false(stall_budget_charge(&b, from, start + 1900 * US + loop * US - from));
    }
    assert_true(stall_budget_allows(&b, start + 3 * MS));
  }
  assert_true(stall_budget_charge(&b, T0 + 500 * MS, 2 * MS));
  assert_false(stall_budget_allows(&b, T0 + 503 * MS));
}

/* Overlap is charged once, disjoint time in full: a 4 ms stall, a second that overlaps its
 * last 1 ms (3 ms new), and one inside both (nothing new) spend 7 ms; a disjoint 4 ms stall
 * then brings the window to 11 ms and turns inline writes off. */
static void test_overlapping_stalls_charge_their_union(void **state)
{
  struct stall_budget b;

  (void)state;
  stall_budget_init(&b);
  assert_false(stall_budget_charge(&b, T0, 4 * MS));
  assert_false(stall_budget_charge(&b, T0 + 3 * MS, 4 * MS));
  assert_false(stall_budget_charge(&b, T0 + 2 * MS, 2 * MS));
  assert_false(stall_budget_charge(&b, T0 + 50 * MS, 2900 * US)); /* 9.9 ms */
  assert_true(stall_budget_allows(&b, T0 + 60 * MS));
  assert_true(stall_budget_charge(&b, T0 + 100 * MS, 1100 * US)); /* 11 ms */
  assert_false(stall_budget_allows(&b, T0 + 102 * MS));
}

/* Dirty-page throttling on a slow disk blocks every loop, in turns that overlap only in
 * part: 4 loops, each blocked 3 ms out of every 4 ms, staggered by 1 ms. The union is the
 * whole time: the budget is spent within about 10 ms and inline writes go off. */
static void test_throttling_of_all_loops_still_turns_inline_writes_off(void **state)
{
  struct stall_budget b;
  bool off = false;
  long long t;

  (void)state;
  stall_budget_init(&b);
  for (t = T0; t < T0 + 20 * MS && !off; t += MS) {
    off = stall_budget_charge(&b, t, 3 * MS);
  }
  assert_true(off);
  assert_true(t <= T0 + 12 * MS);
  assert_false(stall_budget_allows(&b, t + 3 * MS));
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
      cmocka_unit_test(test_loops_waiting_together_are_charged_once),
      cmocka_unit_test(test_overlapping_stalls_charge_their_union),
      cmocka_unit_test(test_throttling_of_all_loops_still_turns_inline_writes_off),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
