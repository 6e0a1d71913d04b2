/* SPDX-License-Identifier: MIT */
/* Unit tests of the cross-connection write fence (src/server/fence.c, case C12): which
 * writes wait for which, the order parked writes are granted in, and that a long chain of
 * parked writes whose ready callbacks complete at once (page-cache writes complete on the
 * event loop, and their completion ends their fence entry there) is granted without the
 * stack growing with the length of the chain; and that the granule index finds the same
 * blocking writes as a scan of every write in flight. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/fence.h"

/* One chain test's state: the fence, the entries (entry i belongs to connection i), and
 * what the ready callbacks saw. */
struct chain {
  struct fence fence;
  struct fence_entry *entries;
  char *owners;        /* owner i is &owners[i]: one distinct connection per entry */
  size_t n;
  size_t *order;       /* indexes in the order ready ran */
  size_t granted;
  int in_ready;        /* 1 while a ready callback runs */
  int nested;          /* ready callbacks that began inside another */
  bool first_at_once;  /* chain_run: entry 0 was registered at once */
  size_t parked;       /* chain_run: entries 1..n-1 that were parked */
  uintptr_t stack_lo, stack_hi; /* span of a local's address over every ready call */
};

static struct chain *chain_now; /* ready callbacks take only the entry */

static void chain_ready_inline(struct fence_entry *entry)
{
  struct chain *c = chain_now;
  volatile char here = 0;
  uintptr_t at = (uintptr_t)&here;

  if (c->in_ready) {
    c->nested++;
  }
  c->in_ready++;
  if (c->stack_lo == 0 || at < c->stack_lo) {
    c->stack_lo = at;
  }
  if (at > c->stack_hi) {
    c->stack_hi = at;
  }
  c->order[c->granted++] = (size_t)(entry - c->entries);
  /* The write completes at once: its completion ends the entry on this thread. */
  fence_end(&c->fence, entry);
  c->in_ready--;
}

static void chain_setup(struct chain *c, size_t n)
{
  *c = (struct chain){0};
  fence_init(&c->fence);
  c->n = n;
  c->entries = calloc(n, sizeof *c->entries);
  c->owners = calloc(n, 1);
  c->order = calloc(n, sizeof *c->order);
  assert_non_null(c->entries);
  assert_non_null(c->owners);
  assert_non_null(c->order);
  chain_now = c;
}

static void chain_teardown(struct chain *c)
{
  assert_null(c->fence.head);
  assert_null(c->fence.waiters);
  fence_destroy(&c->fence);
  free(c->entries);
  free(c->owners);
  free(c->order);
  chain_now = NULL;
}

/* Entry 0 is in flight; entries 1..n-1, each from its own connection and all over the same
 * 4 KiB, are parked behind it. Ending entry 0 grants entry 1 only (it blocks the rest);
 * its ready completes and ends it, which grants entry 2, and so on. Runs on its own
 * thread: records what it saw for the test to assert after the join (cmocka's asserts
 * belong to the test's thread). */
static void *chain_run(void *arg)
{
  struct chain *c = arg;

  c->first_at_once = fence_begin_async(&c->fence, &c->entries[0], &c->owners[0], 8192, 4096,
                                       chain_ready_inline);
  for (size_t i = 1; i < c->n; i++) {
    c->parked += !fence_begin_async(&c->fence, &c->entries[i], &c->owners[i], 8192, 4096,
                                    chain_ready_inline);
  }
  fence_end(&c->fence, &c->entries[0]);
  return NULL;
}

/* 20,000 connections in the chain, on a thread with a 256 KiB stack: granting each from
 * inside the previous one's ready callback took a few hundred bytes of stack per link and
 * overflowed it. Each ready runs after the one before has returned, in arrival order, at
 * one stack depth. */
static void test_chain_of_inline_completions_runs_flat(void **state)
{
  struct chain c;
  pthread_attr_t attr;
  pthread_t t;

  (void)state;
  chain_setup(&c, 20000);
  assert_int_equal(pthread_attr_init(&attr), 0);
  assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  assert_int_equal(pthread_create(&t, &attr, chain_run, &c), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  pthread_attr_destroy(&attr);

  assert_true(c.first_at_once);
  assert_int_equal(c.parked, c.n - 1);
  assert_int_equal(c.granted, c.n - 1);
  for (size_t i = 0; i < c.granted; i++) {
    assert_int_equal(c.order[i], i + 1);
  }
  assert_int_equal(c.nested, 0);
  assert_true(c.stack_hi - c.stack_lo < 1024);
  chain_teardown(&c);
}

static int plain_ready_calls;

static void plain_ready(struct fence_entry *entry)
{
  (void)entry;
  plain_ready_calls++;
}

/* Who waits for whom: only an overlapping write of another connection blocks; a write of
 * the same connection, or one that only touches the range's ends, does not. */
static void test_only_overlapping_writes_of_other_connections_wait(void **state)
{
  struct fence f;
  struct fence_entry a, same, before, after, other;
  char owner_a, owner_b;

  (void)state;
  plain_ready_calls = 0;
  fence_init(&f);
  assert_true(fence_begin_async(&f, &a, &owner_a, 4096, 4096, plain_ready));
  assert_true(fence_begin_async(&f, &same, &owner_a, 4096, 4096, plain_ready));
  assert_true(fence_begin_async(&f, &before, &owner_b, 0, 4096, plain_ready));
  assert_true(fence_begin_async(&f, &after, &owner_b, 8192, 512, plain_ready));
  assert_false(fence_begin_async(&f, &other, &owner_b, 8191, 2, plain_ready));
  fence_end(&f, &a);
  assert_int_equal(plain_ready_calls, 0); /* `same` still overlaps it */
  fence_end(&f, &same);
  assert_int_equal(plain_ready_calls, 1);
  fence_end(&f, &other);
  fence_end(&f, &before);
  fence_end(&f, &after);
  assert_null(f.head);
  assert_null(f.waiters);
  fence_destroy(&f);
}

/* Parked writes are granted in arrival order within one fence_end: of two parked writes of
 * different connections that overlap each other, the earlier is granted and the later
 * waits for it; a parked write that overlaps neither is granted with the first. */
static void test_parked_writes_granted_in_arrival_order(void **state)
{
  struct fence f;
  struct fence_entry stalled, first, second, apart;
  char c0, c1, c2, c3;

  (void)state;
  plain_ready_calls = 0;
  fence_init(&f);
  assert_true(fence_begin_async(&f, &stalled, &c0, 0, 1 << 20, plain_ready));
  assert_false(fence_begin_async(&f, &first, &c1, 0, 4096, plain_ready));
  assert_false(fence_begin_async(&f, &second, &c2, 0, 4096, plain_ready));
  assert_false(fence_begin_async(&f, &apart, &c3, 65536, 4096, plain_ready));
  fence_end(&f, &stalled);
  assert_int_equal(plain_ready_calls, 2); /* first and apart */
  assert_ptr_equal(f.waiters, &second);
  fence_end(&f, &first);
  assert_int_equal(plain_ready_calls, 3);
  fence_end(&f, &second);
  fence_end(&f, &apart);
  assert_null(f.head);
  fence_destroy(&f);
}

/* A write that overlaps only a parked write of another connection waits for it, not only
 * for writes at the backing: connection 1's write is stalled, connection 2's overlapping
 * write is parked behind it (and connection 2 dropped), connection 3's newer write over
 * connection 2's range must land after it, never be acknowledged first and then be
 * overwritten by the stale write when the stall ends. */
static void test_write_behind_a_parked_write_waits_for_it(void **state)
{
  struct fence f;
  struct fence_entry stalled, parked, newer;
  char c1, c2, c3;

  (void)state;
  plain_ready_calls = 0;
  fence_init(&f);
  assert_true(fence_begin_async(&f, &stalled, &c1, 0, 65536, plain_ready));
  assert_false(fence_begin_async(&f, &parked, &c2, 32768, 65536, plain_ready));
  assert_false(fence_begin_async(&f, &newer, &c3, 65536, 32768, plain_ready));
  fence_end(&f, &stalled);
  assert_int_equal(plain_ready_calls, 1); /* parked only: newer overlaps it */
  assert_ptr_equal(f.waiters, &newer);
  fence_end(&f, &parked);
  assert_int_equal(plain_ready_calls, 2);
  assert_null(f.waiters);
  fence_end(&f, &newer);
  assert_null(f.head);
  fence_destroy(&f);
}

/* fence_begin on a thread of its own, for the blocking path (the threads engine). */
struct blocking_write {
  struct fence *fence;
  struct fence_entry entry;
  const void *owner;
  uint64_t offset, length;
  int started; /* 1 once fence_begin returned; read with __atomic loads */
  pthread_t thread;
};

static void *blocking_write_run(void *arg)
{
  struct blocking_write *w = arg;

  fence_begin(w->fence, &w->entry, w->owner, w->offset, w->length);
  __atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Starts w's fence_begin on a thread and waits until w is registered (linked as the newest
 * entry), so the arrival order of two such writes is the order they were started in. */
static void blocking_write_start(struct fence *f, struct blocking_write *w)
{
  bool linked = false;

  assert_int_equal(pthread_create(&w->thread, NULL, blocking_write_run, w), 0);
  for (int i = 0; i < 5000 && !linked; i++) {
    pthread_mutex_lock(&f->lock);
    linked = f->head == &w->entry;
    pthread_mutex_unlock(&f->lock);
    if (!linked) {
      usleep(1000);
    }
  }
  assert_true(linked);
}

/* Whether w's fence_begin has returned within `ms` milliseconds. */
static bool blocking_write_started_within(struct blocking_write *w, int ms)
{
  for (int i = 0; i < ms; i++) {
    if (__atomic_load_n(&w->started, __ATOMIC_ACQUIRE)) {
      return true;
    }
    usleep(1000);
  }
  return __atomic_load_n(&w->started, __ATOMIC_ACQUIRE) != 0;
}

/* Blocked writes (fence_begin) keep their arrival order too. Both wait for a stalled write;
 * the second also overlaps the first. When the stall ends, the first goes and the second
 * still waits for it: they never race on the broadcast, so the older (a dead connection's)
 * cannot land last. A third that overlaps only the first waits as well. */
static void test_blocked_writes_keep_arrival_order(void **state)
{
  struct fence f;
  struct fence_entry stalled;
  char c0, c1, c2, c3;

  (void)state;
  fence_init(&f);
  struct blocking_write first = {.fence = &f, .owner = &c1, .offset = 0, .length = 65536};
  struct blocking_write second = {.fence = &f, .owner = &c2, .offset = 0, .length = 4096};
  struct blocking_write third = {.fence = &f, .owner = &c3, .offset = 61440, .length = 8192};
  assert_true(fence_begin_async(&f, &stalled, &c0, 0, 4096, plain_ready));
  blocking_write_start(&f, &first);
  blocking_write_start(&f, &second);
  blocking_write_start(&f, &third); /* overlaps `first` only: nothing at the backing */
  assert_false(blocking_write_started_within(&first, 20));
  assert_false(blocking_write_started_within(&second, 20));
  assert_false(blocking_write_started_within(&third, 50));
  fence_end(&f, &stalled);
  assert_true(blocking_write_started_within(&first, 5000));
  assert_false(blocking_write_started_within(&second, 50));
  assert_false(blocking_write_started_within(&third, 20));
  fence_end(&f, &first.entry);
  assert_true(blocking_write_started_within(&second, 5000));
  assert_true(blocking_write_started_within(&third, 5000));
  assert_int_equal(pthread_join(first.thread, NULL), 0);
  assert_int_equal(pthread_join(second.thread, NULL), 0);
  assert_int_equal(pthread_join(third.thread, NULL), 0);
  fence_end(&f, &second.entry);
  fence_end(&f, &third.entry);
  assert_null(f.head);
  fence_destroy(&f);
}

/* test_index_agrees_with_full_scan's entries and which of them have started (at once, or
 * granted through index_ready): only a started write can end. */
static struct fence_entry *index_entries;
static bool *index_started;

static void index_ready(struct fence_entry *entry)
{
  index_started[entry - index_entries] = true;
}

/* The granule index finds exactly the entries a scan of every entry finds: 20,000 writes
 * from 5 connections, registered at random and ended at random once started, over 8 MiB
 * (so they meet often) with 4 KiB-2 MiB lengths across granule boundaries, some over
 * 3-70 MiB (the long list, and past FENCE_SCAN_GRANULES the full scan). Each new write is
 * parked exactly when an earlier one still registered, from another connection, overlaps
 * it. */
static void test_index_agrees_with_full_scan(void **state)
{
  enum { N = 20000, LIVE_MAX = 300, OWNERS = 5 };
  struct fence f;
  size_t *live = calloc(LIVE_MAX, sizeof *live), nlive = 0;
  char owners[OWNERS];
  unsigned seed = 12345;

  (void)state;
  index_entries = calloc(N, sizeof *index_entries);
  index_started = calloc(N, sizeof *index_started);
  assert_non_null(index_entries);
  assert_non_null(index_started);
  assert_non_null(live);
  fence_init(&f);
  for (size_t i = 0; i < N; i++) {
    uint64_t offset = (uint64_t)(rand_r(&seed) % (8 << 20)) & ~(uint64_t)511;
    uint64_t length = 4096 + (uint64_t)(rand_r(&seed) % (2 << 20));
    const char *owner = &owners[rand_r(&seed) % OWNERS];
    bool expect_blocked = false;

    if (rand_r(&seed) % 50 == 0) {
      length = (3ull << 20) + (uint64_t)(rand_r(&seed) % (67 << 20)); /* long, or huge */
    }
    for (size_t k = 0; k < nlive; k++) {
      const struct fence_entry *e = &index_entries[live[k]];
      expect_blocked = expect_blocked ||
        (e->owner != owner && e->offset < offset + length && offset < e->offset + e->length);
    }
    index_started[i] = fence_begin_async(&f, &index_entries[i], owner, offset, length,
                                         index_ready);
    assert_int_equal(index_started[i], !expect_blocked);
    live[nlive++] = i;
    /* end started writes at random; when full, the oldest started one */
    for (size_t tries = 0; nlive > 0 && (tries < 4 || nlive == LIVE_MAX); tries++) {
      size_t k = nlive == LIVE_MAX ? tries % nlive : (size_t)rand_r(&seed) % nlive;
      if (index_started[live[k]] && (nlive == LIVE_MAX || rand_r(&seed) % 2 == 0)) {
        fence_end(&f, &index_entries[live[k]]);
        live[k] = live[--nlive];
      }
    }
  }
  while (nlive > 0) { /* the oldest goes first: each end grants what it blocked */
    size_t k = 0;
    for (size_t j = 1; j < nlive; j++) {
      k = index_entries[live[j]].seq < index_entries[live[k]].seq ? j : k;
    }
    assert_true(index_started[live[k]]);
    fence_end(&f, &index_entries[live[k]]);
    live[k] = live[--nlive];
  }
  assert_null(f.head);
  assert_null(f.waiters);
  assert_non_null(f.buckets); /* the index was in use */
  fence_destroy(&f);
  free(index_entries);
  free(index_started);
  free(live);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_chain_of_inline_completions_runs_flat),
    cmocka_unit_test(test_only_overlapping_writes_of_other_connections_wait),
    cmocka_unit_test(test_parked_writes_granted_in_arrival_order),
    cmocka_unit_test(test_write_behind_a_parked_write_waits_for_it),
    cmocka_unit_test(test_blocked_writes_keep_arrival_order),
    cmocka_unit_test(test_index_agrees_with_full_scan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
