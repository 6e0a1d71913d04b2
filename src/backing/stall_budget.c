/* SPDX-License-Identifier: MIT */
/* stall_budget.c: see stall_budget.h. */
#include "backing/stall_budget.h"

#include <assert.h>

void stall_budget_init(struct stall_budget *b)
{
  atomic_init(&b->window_start_ns, 0);
  atomic_init(&b->spent_ns, 0);
  atomic_init(&b->off_until_ns, 0);
}

bool stall_budget_allows(struct stall_budget *b, long long now_ns)
{
  return now_ns >= atomic_load_explicit(&b->off_until_ns, memory_order_relaxed);
}

bool stall_budget_charge(struct stall_budget *b, long long start_ns, long long took_ns)
{
  long long window, spent;

  assert(took_ns >= 0);
  if (took_ns <= STALL_COUNT_NS) {
    return false;
  }
  window = atomic_load_explicit(&b->window_start_ns, memory_order_relaxed);
  if (start_ns - window >= STALL_WINDOW_NS &&
      atomic_compare_exchange_strong_explicit(&b->window_start_ns, &window, start_ns,
                                              memory_order_relaxed, memory_order_relaxed)) {
    atomic_store_explicit(&b->spent_ns, 0, memory_order_relaxed);
  }
  spent = atomic_fetch_add_explicit(&b->spent_ns, took_ns, memory_order_relaxed) + took_ns;
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
