/* SPDX-License-Identifier: MIT */
/* test_durability.c: server/durability.c (group commit, FUA, sticky sync errors) driven
 * through the fault-injecting backing (backing/faulty/faulty.c), whose event log records the order
 * of write completions and syncs as the file backing saw them. The tests add marks to the
 * same log when a request is submitted and when it is acknowledged, so one total order holds
 * both, and check:
 *
 *   invariant    every successful FLUSH acknowledgement comes after a successful sync whose
 *                start (S event) is after the completion (D event) of every write that was
 *                acknowledged before the FLUSH was submitted; every FUA write's
 *                acknowledgement after a sync that started after the write completed;
 *   sharing      concurrent FLUSHes share one sync when no write completed between them,
 *                and do not when one did;
 *   sticky       a failed sync fails that FLUSH and every later one (and FUA writes) with
 *                EIO, without touching the backing again;
 *   overlapping  with several sync channels (geo.sync_channels), a FLUSH that needs a newer
 *                sync than the running one starts it at once on a free channel; a newer
 *                sync that completes first covers the older one's waiters; a full set of
 *                channels queues the next batch; a failure fails every waiter of every
 *                channel;
 *   model        the power-loss model of the faulty backing itself.
 * test_crash_points.c checks the invariant at every crash point of a random workload; the
 * harness (setup, requests, the event log, the invariant) is dur_harness.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dur_harness.h"

/* ---- tests ---- */

/* Flushes that arrive while a sync runs and no write completed since it started share it. */
static void test_concurrent_flushes_share_one_sync(void **state)
{
  struct ctx *c = *state;
  struct treq *f[8];
  struct durability_stats st;
  struct wdesc w;
  struct treq *a = harness_submit_write(c, 0, false);

  harness_channels_set(c, 1); /* the single-sync group commit */

  w = (struct wdesc){a->id, 0, false};
  assert_int_equal(harness_wait_free(a), 0);
  harness_ctl(c, "rule stall flush count=1");
  f[0] = harness_submit_flush(c);
  harness_ctl(c, "wait-stalled 1 5000");
  for (int i = 1; i < 8; i++) {
    f[i] = harness_submit_flush(c);
  }
  usleep(50000);
  for (int i = 0; i < 8; i++) {
    assert_false(harness_is_done(f[i])); /* nobody is answered before the sync */
  }
  harness_ctl(c, "release all");
  for (int i = 0; i < 8; i++) {
    assert_int_equal(harness_wait_free(f[i]), 0);
  }
  struct log l = harness_log_get(c);
  harness_check_invariant(&l, &w, 1);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 1);
  durability_get_stats(c->e, &st);
  assert_int_equal(st.syncs_started, 1);
  assert_int_equal(st.flushes_shared, 7);
  free(l.ev);
}

/* A write that completes while a sync runs (it has started in the file backing; its
 * completion is held): a later FLUSH must wait for a new sync that starts after that write;
 * the FLUSHes that wait for it share it. */
static void test_write_between_needs_new_sync(void **state)
{
  struct ctx *c = *state;
  struct wdesc w[2];
  struct treq *a = harness_submit_write(c, 1, false), *b, *f1, *f2, *f3;

  harness_channels_set(c, 1); /* the single-sync group commit */

  w[0] = (struct wdesc){a->id, 1, false};
  assert_int_equal(harness_wait_free(a), 0);
  harness_ctl(c, "rule stall-done flush count=1"); /* S1 runs; its completion is held */
  f1 = harness_submit_flush(c);
  harness_ctl(c, "wait-stalled 1 5000");
  b = harness_submit_write(c, 2, false);
  w[1] = (struct wdesc){b->id, 2, false};
  assert_int_equal(harness_wait_free(b), 0);
  f2 = harness_submit_flush(c);
  f3 = harness_submit_flush(c);
  harness_ctl(c, "release all");
  assert_int_equal(harness_wait_free(f1), 0);
  assert_int_equal(harness_wait_free(f2), 0);
  assert_int_equal(harness_wait_free(f3), 0);
  struct log l = harness_log_get(c);
  harness_check_invariant(&l, w, 2);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* No write since the last successful sync: a FLUSH is answered without a new sync; the
 * first FLUSH of a fresh export always syncs (a previous process may have left dirty
 * pages). */
static void test_flush_elided_only_after_a_sync(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;

  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0); /* fresh: syncs */
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0); /* nothing new: no sync */
  struct log l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 1);
  free(l.ev);
  assert_int_equal(harness_wait_free(harness_submit_write(c, 3, false)), 0);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0); /* a write completed: syncs */
  l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
  durability_get_stats(c->e, &st);
  assert_int_equal(st.flushes_elided, 1);
}

/* Submits 4 writes of blocks 10-13 (with FUA or, under a write-through cache mode, without)
 * on one sync channel: the first starts a sync whose completion is held, the other three
 * complete while it is held. Checks that none is acknowledged before the release, then
 * that all are, and records in w what each wrote (each durable at its acknowledgement).
 * Main test thread only. */
static void four_writes_around_held_sync(struct ctx *c, bool fua, struct wdesc w[4])
{
  struct treq *r[4];

  harness_channels_set(c, 1); /* the single-sync group commit */
  harness_ctl(c, "rule stall-done flush count=1"); /* S1 runs; its completion is held */
  r[0] = harness_submit_write(c, 10, fua);
  w[0] = (struct wdesc){r[0]->id, 10, true};
  harness_ctl(c, "wait-stalled 1 5000");
  for (int i = 1; i < 4; i++) {
    r[i] = harness_submit_write(c, 10 + (uint64_t)i, fua);
    w[i] = (struct wdesc){r[i]->id, 10 + (uint64_t)i, true};
  }
  usleep(50000);
  for (int i = 0; i < 4; i++) {
    assert_false(harness_is_done(r[i])); /* written, but not durable yet */
  }
  harness_ctl(c, "release all");
  for (int i = 0; i < 4; i++) {
    assert_int_equal(harness_wait_free(r[i]), 0);
  }
}

/* FUA writes (emulated: the faulty backing has no native FUA) join the group commit: one
 * that completes while a sync runs waits for the next sync, shared with the others. */
static void test_fua_writes_group_commit(void **state)
{
  struct ctx *c = *state;
  struct wdesc w[4];

  four_writes_around_held_sync(c, true, w);
  struct log l = harness_log_get(c);
  harness_check_invariant(&l, w, 4);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* --cache writethrough: plain writes (no FUA) are acknowledged only after a sync that
 * started after they completed; one completing while a sync runs waits for the next sync,
 * shared with the others (2 syncs for 4 writes); a FLUSH afterwards needs no sync. */
static void test_writethrough_writes_group_commit(void **state)
{
  struct ctx *c = *state;
  struct wdesc w[4];

  four_writes_around_held_sync(c, false, w);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0);
  struct log l = harness_log_get(c);
  harness_check_invariant(&l, w, 4);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* A failed sync: that FLUSH, the FLUSHes waiting for the next sync, every later FLUSH and
 * FUA write fail with EIO; the backing sees no further sync. Plain writes still work. */
static void test_sync_error_is_sticky(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;
  struct treq *f1, *f2;

  harness_channels_set(c, 1); /* the single-sync group commit */

  assert_int_equal(harness_wait_free(harness_submit_write(c, 20, false)), 0);
  harness_ctl(c, "rule stall flush count=1");
  f1 = harness_submit_flush(c);
  harness_ctl(c, "wait-stalled 1 5000");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 21, false)), 0);
  f2 = harness_submit_flush(c); /* needs the next sync */
  harness_ctl(c, "release all err=EIO");
  assert_int_equal(harness_wait_free(f1), -EIO);
  assert_int_equal(harness_wait_free(f2), -EIO);
  assert_true(atomic_load(&c->e->sync_failed));
  assert_int_equal(harness_wait_free(harness_submit_write(c, 22, false)), 0);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), -EIO);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), -EIO);
  assert_int_equal(harness_wait_free(harness_submit_write(c, 23, true)), -EIO);
  struct log l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 0);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_DONE, BACKING_OP_FLUSH), 1);
  free(l.ev);
  durability_get_stats(c->e, &st);
  assert_int_equal(st.syncs_failed, 1);
}

/* Several channels: a FLUSH that needs a newer sync than the running one starts it at once
 * instead of waiting for the running one, and when the newer sync completes first it also
 * answers the older one's waiters (its start was after every write they cover). */
static void test_overlapping_syncs(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;
  struct wdesc w[2];
  struct treq *a = harness_submit_write(c, 50, false), *b, *f1, *f2;

  w[0] = (struct wdesc){a->id, 50, false};
  assert_int_equal(harness_wait_free(a), 0);
  harness_ctl(c, "rule stall-done flush count=1"); /* S1 runs; its completion is held */
  f1 = harness_submit_flush(c);
  harness_ctl(c, "wait-stalled 1 5000");
  b = harness_submit_write(c, 51, false);
  w[1] = (struct wdesc){b->id, 51, false};
  assert_int_equal(harness_wait_free(b), 0);
  f2 = harness_submit_flush(c); /* S2 starts now, beside S1 */
  assert_int_equal(harness_wait_free(f2), 0);
  assert_int_equal(harness_wait_free(f1), 0); /* covered by S2, while S1 is still held */
  struct log l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_DONE, BACKING_OP_FLUSH), 1); /* S2 only */
  harness_check_invariant(&l, w, 2);
  free(l.ev);
  harness_ctl(c, "release all");
  durability_get_stats(c->e, &st);
  assert_int_equal(st.syncs_started, 2);
  assert_int_equal(st.syncs_running_max, 2);
}

/* Every channel runs: the next FLUSH that needs a newer sync waits for a channel to free
 * and then starts one (no fifth sync while four run). */
static void test_full_channels_queue_the_next_sync(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;
  struct wdesc w[BACKING_SYNC_CHANNELS + 1];
  struct treq *f[BACKING_SYNC_CHANNELS + 1];

  harness_ctl(c, "rule stall-done flush count=%d", BACKING_SYNC_CHANNELS);
  for (unsigned i = 0; i <= BACKING_SYNC_CHANNELS; i++) {
    struct treq *r = harness_submit_write(c, 60 + i, false);
    w[i] = (struct wdesc){r->id, 60 + i, false};
    assert_int_equal(harness_wait_free(r), 0);
    f[i] = harness_submit_flush(c);
    if (i < BACKING_SYNC_CHANNELS) {
      harness_ctl(c, "wait-stalled %u 5000", i + 1);
    }
  }
  usleep(50000);
  struct log l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH),
                   BACKING_SYNC_CHANNELS);
  free(l.ev);
  for (unsigned i = 0; i <= BACKING_SYNC_CHANNELS; i++) {
    assert_false(harness_is_done(f[i]));
  }
  /* S1 frees a channel */
  harness_ctl(c, "release %llu", (unsigned long long)harness_stalled_oldest(c));
  assert_int_equal(harness_wait_free(f[0]), 0);
  assert_int_equal(harness_wait_free(f[BACKING_SYNC_CHANNELS]), 0); /* its own sync, S5 */
  for (unsigned i = 1; i < BACKING_SYNC_CHANNELS; i++) {
    assert_int_equal(harness_wait_free(f[i]), 0); /* covered by S5 */
  }
  l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH),
                   BACKING_SYNC_CHANNELS + 1);
  harness_check_invariant(&l, w, BACKING_SYNC_CHANNELS + 1);
  free(l.ev);
  harness_ctl(c, "release all");
  durability_get_stats(c->e, &st);
  assert_int_equal(st.syncs_running_max, BACKING_SYNC_CHANNELS);
}

/* Several channels, the older sync fails while a newer one runs: the failure is sticky, so
 * the newer sync's waiters fail at once too (a sync on another file description may not
 * see the same writeback error), and nothing is synced again. */
static void test_sync_error_fails_every_channel(void **state)
{
  struct ctx *c = *state;
  struct treq *f1, *f2;

  harness_ctl(c, "rule stall-done flush count=2");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 70, false)), 0);
  f1 = harness_submit_flush(c);
  harness_ctl(c, "wait-stalled 1 5000");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 71, false)), 0);
  f2 = harness_submit_flush(c);
  harness_ctl(c, "wait-stalled 2 5000");
  harness_ctl(c, "release %llu err=EIO", (unsigned long long)harness_stalled_oldest(c));
  assert_int_equal(harness_wait_free(f1), -EIO);
  assert_int_equal(harness_wait_free(f2), -EIO); /* while its own sync is still held */
  harness_ctl(c, "release all"); /* S2 succeeds: too late, nobody is acknowledged by it */
  assert_int_equal(harness_wait_free(harness_submit_write(c, 72, false)), 0);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), -EIO);
  struct log l = harness_log_get(c);
  assert_int_equal(harness_count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* A sync left running with nobody waiting (a newer one answered its FLUSH) when the export
 * is closed: the close waits for it, before the backing and the group commit's state go
 * (never freed under the running sync: a use-after-free at SIGTERM). */
struct release_later {
  struct ctx *c;
  int ms;
  bool released;
};

static void *release_after(void *arg)
{
  struct release_later *rl = arg;

  usleep((useconds_t)rl->ms * 1000);
  __atomic_store_n(&rl->released, true, __ATOMIC_SEQ_CST);
  harness_ctl(rl->c, "release all");
  return NULL;
}

static void test_close_waits_for_an_orphan_sync(void **state)
{
  struct ctx *c = *state;
  struct release_later rl = {.c = c, .ms = 300};
  pthread_t th;
  struct treq *f1;

  harness_ctl(c, "rule stall-done flush count=1");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 80, false)), 0);
  f1 = harness_submit_flush(c); /* S1: held */
  harness_ctl(c, "wait-stalled 1 5000");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 81, false)), 0);
  /* S2 completes, answers f1 too */
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0);
  assert_int_equal(harness_wait_free(f1), 0);
  harness_ctl(c, "wait-stalled 1 0"); /* S1 still runs, with no waiter */
  assert_int_equal(pthread_create(&th, NULL, release_after, &rl), 0);
  export_destroy(c->e); /* must wait for S1 */
  c->e = NULL;
  assert_true(__atomic_load_n(&rl.released, __ATOMIC_SEQ_CST));
  pthread_join(th, NULL);
}

/* The file backing's channels: BACKING_SYNC_CHANNELS when it is writable and syncs, each a
 * FLUSH that works; a channel beyond them is refused; read-only has one. */
static void flush_on_channel(struct backing *b, uint32_t channel, int want)
{
  struct treq r = {0};
  struct ctx c = {0};

  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.cond, NULL);
  r.c = &c;
  r.op.type = BACKING_OP_FLUSH;
  r.op.sync_channel = channel;
  r.op.done = harness_flush_channel_done;
  int rc = backing_submit(b, &r.op);
  if (rc == 0) {
    rc = harness_wait_req(&r);
  }
  assert_int_equal(rc, want);
  pthread_mutex_destroy(&c.lock);
  pthread_cond_destroy(&c.cond);
}

static void test_file_sync_channels(void **state)
{
  struct ctx *c = *state;
  struct backing_options opts = {.sync = SYNC_FULL, .cache = CACHE_WRITEBACK,
                                 .engine = c->engine};
  struct backing *b;
  char path[128];
  int fd;

  snprintf(path, sizeof path, "%s/plain.img", c->dir); /* c->img is locked by the export */
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, 1 << 20), 0);
  close(fd);
  assert_int_equal(backing_open(path, &opts, &b), 0);
  assert_int_equal(b->geo.sync_channels, BACKING_SYNC_CHANNELS);
  for (uint32_t i = 0; i < BACKING_SYNC_CHANNELS; i++) {
    flush_on_channel(b, i, 0);
  }
  flush_on_channel(b, BACKING_SYNC_CHANNELS, -EINVAL);
  backing_close(b);
  opts.read_only = true;
  assert_int_equal(backing_open(path, &opts, &b), 0);
  assert_int_equal(b->geo.sync_channels, 1);
  flush_on_channel(b, 0, 0);
  flush_on_channel(b, 1, -EINVAL);
  backing_close(b);
  unlink(path);
}

/* An injected ENOSPC reaches the caller as is; the next write works. */
static void test_write_errors_pass_through(void **state)
{
  struct ctx *c = *state;

  harness_ctl(c, "rule fail write count=1 err=ENOSPC");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 30, false)), -ENOSPC);
  assert_int_equal(harness_wait_free(harness_submit_write(c, 31, false)), 0);
  harness_ctl(c, "rule fail write count=1 err=EIO");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 32, true)), -EIO);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0);
  assert_false(atomic_load(&c->e->sync_failed));
}

/* The power-loss model itself: overlapping writes, TRIM, a failed write, and `crash`. */
static void test_model_drops_unsynced_writes(void **state)
{
  struct ctx *c = *state;
  char img[128];
  struct treq *a, *b, *t;
  uint64_t k;

  a = harness_submit_write(c, 40, false);
  unsigned ida = a->id;
  assert_int_equal(harness_wait_free(a), 0);
  struct treq *d = harness_submit_write(c, 41, false);
  unsigned idd = d->id;
  assert_int_equal(harness_wait_free(d), 0);
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0);
  /* then, without a sync: B overwrites A, a TRIM over D, a write that fails */
  b = harness_submit_write(c, 40, false);
  unsigned idb = b->id;
  assert_int_equal(harness_wait_free(b), 0);
  t = calloc(1, sizeof *t);
  t->c = c;
  t->op.type = BACKING_OP_TRIM;
  t->op.offset = 41 * BLOCK;
  t->op.length = BLOCK;
  assert_int_equal(durability_submit(c->e, &t->op, harness_req_done), 0);
  assert_int_equal(harness_wait_free(t), 0);
  harness_ctl(c, "rule fail write count=1");
  assert_int_equal(harness_wait_free(harness_submit_write(c, 42, false)), -EIO);

  /* now: the live file has B and the trim; the durable state has A and D */
  harness_assert_slot(c->img, 40, idb);
  harness_assert_slot(c->img, 41, 0);
  struct log l = harness_log_get(c);
  k = l.ev[l.n - 1].seq + 1;
  free(l.ev);
  snprintf(img, sizeof img, "%s/image.0", c->dir);
  assert_int_equal(faulty_image_at(c->b, k, img), 0);
  harness_assert_slot(img, 40, ida);
  harness_assert_slot(img, 41, idd);
  harness_assert_slot(img, 42, 0);
  /* a sync makes B and the trim durable */
  assert_int_equal(harness_wait_free(harness_submit_flush(c)), 0);
  l = harness_log_get(c);
  k = l.ev[l.n - 1].seq + 1;
  free(l.ev);
  assert_int_equal(faulty_image_at(c->b, k, img), 0);
  harness_assert_slot(img, 40, idb);
  harness_assert_slot(img, 41, 0);
  /* an unsynced write, then power loss: the image file itself loses it */
  b = harness_submit_write(c, 43, false);
  assert_int_equal(harness_wait_free(b), 0);
  harness_ctl(c, "crash");
  harness_assert_slot(c->img, 40, idb);
  harness_assert_slot(c->img, 43, 0);
  assert_int_equal(faulty_image_at(c->b, UINT64_MAX, img), -EINVAL); /* not reached yet */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    HARNESS_TEST(test_concurrent_flushes_share_one_sync),
    HARNESS_TEST(test_write_between_needs_new_sync),
    HARNESS_TEST(test_flush_elided_only_after_a_sync),
    HARNESS_TEST(test_fua_writes_group_commit),
    HARNESS_TEST(test_sync_error_is_sticky),
    HARNESS_TEST(test_write_errors_pass_through),
    HARNESS_TEST(test_model_drops_unsynced_writes),
    HARNESS_TEST(test_overlapping_syncs),
    HARNESS_TEST(test_full_channels_queue_the_next_sync),
    HARNESS_TEST(test_sync_error_fails_every_channel),
    HARNESS_TEST(test_close_waits_for_an_orphan_sync),
    HARNESS_TEST(test_file_sync_channels),
    cmocka_unit_test_setup_teardown(test_writethrough_writes_group_commit,
                                    harness_setup_writethrough, harness_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
