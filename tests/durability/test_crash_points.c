/* SPDX-License-Identifier: MIT */
/* test_crash_points.c: the crash points of a random workload through server/durability.c
 * and the fault-injecting backing (dur_harness.h). For every prefix of the recorded event
 * log (every crash point), the image a power loss there would leave (faulty_image_at) holds
 * every write acknowledged with FUA, or acknowledged before a FLUSH that was acknowledged,
 * before that point; and it drops what no sync covered. The invariant of
 * test_durability.c holds over the whole log. Run with one sync at a time and with every
 * sync channel (syncs then overlap and complete out of order).
 * Under --cache writethrough and directsync the workload sends no FLUSH and no FUA, and
 * every write acknowledged before a crash point must be in its image.
 */
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

/* ---- the random workload and its crash points ---- */

#define THREADS 6
#define OPS_PER_THREAD 90

struct worker {
  struct ctx *c;
  unsigned seed;
  uint64_t first_slot; /* slots first_slot .. first_slot + OPS_PER_THREAD - 1 */
  int ops;             /* requests to send, at most OPS_PER_THREAD */
  struct wdesc w[OPS_PER_THREAD];
  size_t nw;
};

static void *worker_main(void *arg)
{
  struct worker *wk = arg;
  uint64_t slot = wk->first_slot;

  for (int i = 0; i < wk->ops; i++) {
    unsigned r = (unsigned)rand_r(&wk->seed) % 100;
    if (r < 20 && !wk->c->write_through) {
      struct treq *f = harness_submit_flush(wk->c);
      (void)harness_wait_free(f);
    } else {
      bool fua = r >= 80 && !wk->c->write_through;
      struct treq *w = harness_submit_write(wk->c, slot, fua);
      /* write-through: durable at its acknowledgement, as a FUA write */
      wk->w[wk->nw++] = (struct wdesc){w->id, slot, fua || wk->c->write_through};
      slot++;
      (void)harness_wait_free(w);
    }
  }
  return NULL;
}

static void crash_points_run(struct ctx *c)
{
  struct worker wk[THREADS];
  pthread_t th[THREADS];
  struct wdesc *all = calloc(THREADS * OPS_PER_THREAD + 1, sizeof *all);
  size_t nall = 0;
  char img[128];
  unsigned seed = (unsigned)getpid();
  const char *env = getenv("DG_TEST_SEED");

  if (env != NULL) {
    seed = (unsigned)strtoul(env, NULL, 0);
  }
  print_message("crash-point workload seed %u (DG_TEST_SEED)\n", seed);
  harness_ctl(c, "rule delay write ms=3 jitter=1");
  harness_ctl(c, "rule delay flush ms=4 jitter=1");
  for (int i = 0; i < THREADS; i++) {
    wk[i] = (struct worker){.c = c, .seed = seed + (unsigned)i * 7919u,
                            .first_slot = 100 + (uint64_t)i * OPS_PER_THREAD,
                            /* write-through: every write syncs; half as many keep it short */
                            .ops = c->write_through ? OPS_PER_THREAD / 2 : OPS_PER_THREAD};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &wk[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    memcpy(all + nall, wk[i].w, wk[i].nw * sizeof *all);
    nall += wk[i].nw;
  }
  harness_ctl(c, "clear");
  /* a last write that nothing syncs (under write-through, its own sync) */
  struct treq *z = harness_submit_write(c, 99, false);
  all[nall++] = (struct wdesc){z->id, 99, c->write_through};
  assert_int_equal(harness_wait_free(z), 0);

  struct log l = harness_log_get(c);
  if (getenv("DG_TEST_NO_INVARIANT") == NULL) { /* to show the crash points alone catch bugs */
    harness_check_invariant(&l, all, nall);
  }

  /* What must survive a crash at point k: writes acknowledged with FUA before k, and
   * writes acknowledged before a FLUSH's submission whose acknowledgement is before k. */
  struct model *m = calloc(1, sizeof *m);
  assert_non_null(m);
  harness_model_build(&l, m);
  assert_true(!c->write_through || m->nf == 0); /* write-through: no FLUSH was sent */
  uint64_t *ack = calloc(nall, sizeof *ack), *must = calloc(nall, sizeof *must);
  assert_non_null(ack);
  assert_non_null(must);
  for (size_t i = 0; i < nall; i++) {
    uint64_t a = UINT64_MAX;
    for (size_t j = 0; j < l.n; j++) {
      const struct faulty_event *ev = &l.ev[j];
      if (ev->kind == FAULTY_EV_MARK && MARK_ID(ev->aux) == all[i].id &&
          (MARK_KIND(ev->aux) == M_WACK || MARK_KIND(ev->aux) == M_FUAACK)) {
        a = ev->seq;
      }
    }
    ack[i] = a;
    must[i] = UINT64_MAX; /* the first crash point from which it must be there */
    if (a != UINT64_MAX && all[i].fua) {
      must[i] = a + 1;
    }
    for (size_t j = 0; j < m->nf; j++) {
      if (m->f[j].ok && a < m->f[j].sub && m->f[j].ack + 1 < must[i]) {
        must[i] = m->f[j].ack + 1;
      }
    }
  }
  /* Every crash point k: the image changes only at a sync's completion and the expected
   * set only at an acknowledgement, so each image is built when it changes, and every
   * required write is checked whenever either changes. */
  snprintf(img, sizeof img, "%s/image.1", c->dir);
  uint64_t first = l.n > 0 ? l.ev[0].seq : 0, last = l.n > 0 ? l.ev[l.n - 1].seq + 1 : 0;
  size_t images = 0, checks = 0;
  int fd = -1;
  char *buf = malloc(BLOCK), *want = malloc(BLOCK);
  for (uint64_t k = first; k <= last; k++) {
    bool rebuild = k == first ||
                   (l.ev[k - 1 - first].kind == FAULTY_EV_DONE &&
                    l.ev[k - 1 - first].type == BACKING_OP_FLUSH);
    if (rebuild) {
      if (fd >= 0) {
        close(fd);
      }
      assert_int_equal(faulty_image_at(c->b, k, img), 0);
      fd = open(img, O_RDONLY);
      assert_true(fd >= 0);
      images++;
    }
    for (size_t i = 0; i < nall; i++) {
      if (must[i] > k || (!rebuild && must[i] != k)) {
        continue;
      }
      harness_fill(want, all[i].id);
      assert_int_equal(pread(fd, buf, BLOCK, (off_t)(all[i].slot * BLOCK)), BLOCK);
      checks++;
      if (memcmp(buf, want, BLOCK) != 0) {
        fail_msg("crash point %llu: write %u (slot %llu, %s, acknowledged at %llu, required "
                 "from %llu) is not in the image", (unsigned long long)k, all[i].id,
                 (unsigned long long)all[i].slot,
                 c->write_through ? "write-through" : all[i].fua ? "FUA" : "flushed",
                 (unsigned long long)ack[i], (unsigned long long)must[i]);
      }
    }
  }
  /* the last write was never synced: the final crash image must not have it, while the
   * live file does (the model drops, it does not just keep everything); under
   * write-through it was acknowledged, so durable */
  assert_int_equal(pread(fd, buf, BLOCK, 99 * BLOCK), BLOCK);
  harness_fill(want, all[nall - 1].id);
  assert_true((memcmp(buf, want, BLOCK) == 0) == c->write_through);
  close(fd);
  harness_assert_slot(c->img, 99, all[nall - 1].id);

  struct durability_stats st;
  durability_get_stats(c->e, &st);
  print_message("%zu events, %zu writes, %zu flushes, %llu syncs (%llu requests shared a "
                "sync, %llu elided), %zu crash images, %zu checks\n",
                l.n, nall, m->nf, (unsigned long long)st.syncs_started,
                (unsigned long long)st.flushes_shared, (unsigned long long)st.flushes_elided,
                images, checks);
  assert_true(images > 10);
  free(buf);
  free(want);
  free(ack);
  free(must);
  free(m);
  free(all);
  free(l.ev);
}

/* The random workload with one sync at a time, and with every channel: syncs then overlap
 * (each delayed 3-5 ms) and complete out of order. */
static void test_crash_points_one_channel(void **state)
{
  struct ctx *c = *state;

  harness_channels_set(c, 1);
  crash_points_run(c);
}

static void test_crash_points_all_channels(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;

  crash_points_run(c);
  durability_get_stats(c->e, &st);
  assert_true(st.syncs_running_max >= 2);
}

/* --cache writethrough: no FLUSH, no FUA; every acknowledged write survives every crash
 * point after its acknowledgement. With one channel the writes of the 6 threads must share
 * syncs (group commit), not pay for one each. */
static void test_writethrough_one_channel(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;

  harness_channels_set(c, 1);
  crash_points_run(c);
  durability_get_stats(c->e, &st);
  assert_true(st.flushes_shared > 0);
  assert_true(st.syncs_started < (uint64_t)THREADS * OPS_PER_THREAD / 4);
}

/* --cache directsync (O_DIRECT): the same, every channel (syncs overlap) */
static void test_directsync_all_channels(void **state)
{
  crash_points_run(*state);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    HARNESS_TEST(test_crash_points_one_channel),
    HARNESS_TEST(test_crash_points_all_channels),
    cmocka_unit_test_setup_teardown(test_writethrough_one_channel, harness_setup_writethrough,
                                    harness_teardown),
    cmocka_unit_test_setup_teardown(test_directsync_all_channels, harness_setup_directsync,
                                    harness_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
