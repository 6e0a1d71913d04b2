/* SPDX-License-Identifier: MIT */
/* stall_budget.c: see stall_budget.h. */
#include "backing/stall_budget.h"

#include <assert.h>

void stall_budget_init(struct stall_budget *b)
{
  atomic_init(&b->window_start_ns, 0);
  atomic_init(&b->spent_ns, 0);
  atomic_init(&b->off_until_ns, 0);
  atomic_init(&b->charged_until_ns, 0);
}

bool stall_budget_allows(struct stall_budget *b, long long now_ns)
{
  return now_ns >= atomic_load_explicit(&b->off_until_ns, memory_order_relaxed);
}

/* The part of [start_ns, end_ns) not yet charged (ns, >= 0); moves b->charged_until_ns
 * to end_ns when end_ns is later. */
static long long charge_new_time(struct stall_budget *b, long long start_ns, long long end_ns)
{
  long long until = atomic_load_explicit(&b->charged_until_ns, memory_order_relaxed);
  long long from;

  do {
    if (until >= end_ns) {
      return 0; /* within time some other loop's write charged already */
    }
    from = start_ns > until ? start_ns : until;
  } while (!atomic_compare_exchange_weak_explicit(&b->charged_until_ns, &until, end_ns,
                                                  memory_order_relaxed, memory_order_relaxed));
  return end_ns - from;
}

bool stall_budget_charge(struct stall_budget *b, long long start_ns, long long took_ns)
{
  long long window, spent, charge;

  assert(took_ns >= 0);
  if (took_ns <= STALL_COUNT_NS) {
    return false;
  }
  charge = charge_new_time(b, start_ns, start_ns + took_ns);
  if (charge == 0) {
    return false;
  }
  window = atomic_load_explicit(&b->window_start_ns, memory_order_relaxed);
  if (start_ns - window >= STALL_WINDOW_NS &&
      atomic_compare_exchange_strong_explicit(&b->window_start_ns, &window, start_ns,
                                              memory_order_relaxed, memory_order_relaxed)) {
    atomic_store_explicit(&b->spent_ns, 0, memory_order_relaxed);
  }
  spent = atomic_fetch_add_explicit(&b->spent_ns, charge, memory_order_relaxed) + charge;
  if (spent <= STALL_BUDGET_NS) {
    return false;
  }
  atomic_store_explicit(&b->off_until_ns, start_ns + took_ns + STALL_BACKOFF_NS,
                        memory_order_relaxed);
  /* Writes still in flight on other loops start from zero, so they do not overspend
   * again; the first charge after the back-off opens a new window (this one began more
   * than STALL_WINDOW_NS before). */
  atomic_store_explicit(&b->spent_ns, 0, memory_order_relaxed);
  return true;
}
