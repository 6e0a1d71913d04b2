/* test_durability.c: server/durability.c (group commit, FUA, sticky sync errors) driven
 * through the fault-injecting backing (backing/faulty.c), whose event log records the order
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
 *   crash points for every prefix of a recorded random workload (every crash point), the
 *                image a power loss there would leave (faulty_image_at) holds every write
 *                acknowledged with FUA, or acknowledged before a FLUSH that was
 *                acknowledged, before that point; and it drops what no sync covered.
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

#include "backing/faulty.h"
#include "io/engine.h"
#include "server/durability.h"
#include "server/export.h"

#define BLOCK 4096u
#define IMAGE_SIZE (4u << 20) /* 1024 slots of BLOCK bytes */
#define SLOTS (IMAGE_SIZE / BLOCK)

/* Marks: kind in the top byte, the request id in the low 32 bits. */
enum { M_WSUB = 1, M_WACK, M_FSUB, M_FACK, M_FUAACK, M_FAIL };
#define MARK(kind, id) (((uint64_t)(kind) << 56) | (uint32_t)(id))
#define MARK_KIND(v) ((int)((v) >> 56))
#define MARK_ID(v) ((uint32_t)(v))

struct ctx {
  char dir[64], img[96], ctl[96];
  struct engine *engine;
  struct backing *b;
  struct export *e;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned next_id;
};

struct treq {
  struct backing_op op; /* first */
  struct ctx *c;
  unsigned id;
  bool fua;
  bool done;
  int result;
};

/* ---- set-up ---- */

static int setup(void **state)
{
  struct ctx *c = calloc(1, sizeof *c);
  struct backing_options opts = {.sync = SYNC_FULL, .cache = CACHE_WRITEBACK};
  char spec[128];
  int fd;

  assert_non_null(c);
  strcpy(c->dir, "/tmp/dgdur.XXXXXX");
  assert_non_null(mkdtemp(c->dir));
  snprintf(c->img, sizeof c->img, "%s/disk.img", c->dir);
  snprintf(c->ctl, sizeof c->ctl, "%s/ctl", c->dir);
  fd = open(c->img, O_RDWR | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, IMAGE_SIZE), 0);
  close(fd);
  setenv("DISKGATE_TEST_FAULTS", c->ctl, 1);
  /* the suite's engine (DG_ENGINE, see tests/lib.sh); threads when io_uring is missing */
  enum engine_kind kind = ENGINE_THREADS;
  const char *engine = getenv("DG_ENGINE");
  if (engine != NULL && engine_kind_parse(engine, &kind) < 0) {
    kind = ENGINE_THREADS;
  }
  if (engine_create(kind, 4, &c->engine) < 0) {
    assert_int_equal(engine_create(ENGINE_THREADS, 4, &c->engine), 0);
  }
  opts.engine = c->engine;
  snprintf(spec, sizeof spec, "faulty:%s", c->img);
  assert_int_equal(backing_open(spec, &opts, &c->b), 0);
  assert_true(backing_is_faulty(c->b));
  assert_false(c->b->geo.can_fua);
  assert_int_equal(export_create("t", c->b, false, SYNC_FULL, &c->e), 0);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  free(faulty_command(c->b, "record"));
  *state = c;
  return 0;
}

static int teardown(void **state)
{
  struct ctx *c = *state;
  char path[160];

  export_destroy(c->e); /* frees the group commit, closes the backing */
  engine_destroy(c->engine);
  unlink(c->img);
  snprintf(path, sizeof path, "%s.faulty-base", c->img);
  unlink(path);
  unlink(c->ctl);
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/image.%d", c->dir, i);
    unlink(path);
  }
  rmdir(c->dir);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  free(c);
  return 0;
}

/* Runs a control command and requires a reply starting with "ok". */
static void ctl(struct ctx *c, const char *fmt, ...)
{
  char line[256];
  va_list ap;
  char *reply;

  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  reply = faulty_command(c->b, line);
  assert_non_null(reply);
  if (strncmp(reply, "ok", 2) != 0) {
    fail_msg("control '%s': %s", line, reply);
  }
  free(reply);
}

/* The export's backing runs at most n syncs at once (the file backing offers
 * BACKING_SYNC_CHANNELS; the faulty backing inherits that). */
static void channels_set(struct ctx *c, uint32_t n)
{
  assert_true(c->b->geo.sync_channels >= n);
  c->b->geo.sync_channels = n;
}

/* The faulty backing's id of the oldest stalled operation (from its `stalled` reply:
 * "ok N ID:TYPE:OFF:LEN[:done] ..."). */
static uint64_t stalled_oldest(struct ctx *c)
{
  char *reply = faulty_command(c->b, "stalled");
  uint64_t best = UINT64_MAX;
  char *p;

  assert_non_null(reply);
  assert_memory_equal(reply, "ok ", 3);
  p = strchr(reply + 3, ' ');
  while (p != NULL) {
    uint64_t id = strtoull(p + 1, NULL, 10);
    if (id < best) {
      best = id;
    }
    p = strchr(p + 1, ' ');
  }
  free(reply);
  assert_true(best != UINT64_MAX);
  return best;
}

/* ---- requests ---- */

static void req_done(struct backing_op *op, int result)
{
  struct treq *r = (struct treq *)op;
  struct ctx *c = r->c;
  int kind = result < 0 ? M_FAIL
             : op->type == BACKING_OP_FLUSH ? M_FACK
             : r->fua ? M_FUAACK : M_WACK;

  faulty_mark(c->b, MARK(kind, r->id));
  pthread_mutex_lock(&c->lock);
  r->result = result;
  r->done = true;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

/* A FLUSH sent straight to a backing (no marks: it may not be the faulty one). */
static void flush_channel_done(struct backing_op *op, int result)
{
  struct treq *r = (struct treq *)op;

  pthread_mutex_lock(&r->c->lock);
  r->result = result;
  r->done = true;
  pthread_cond_broadcast(&r->c->cond);
  pthread_mutex_unlock(&r->c->lock);
}

static unsigned new_id(struct ctx *c)
{
  pthread_mutex_lock(&c->lock);
  unsigned id = ++c->next_id;
  pthread_mutex_unlock(&c->lock);
  return id;
}

/* The content of request id's write: its id in every 8 bytes. */
static void fill(void *buf, unsigned id)
{
  uint64_t v = 0xd1500000000ull | id;
  for (size_t i = 0; i < BLOCK / 8; i++) {
    memcpy((char *)buf + i * 8, &v, 8);
  }
}

static struct treq *submit_write(struct ctx *c, uint64_t slot, bool fua)
{
  struct treq *r = calloc(1, sizeof *r);

  assert_non_null(r);
  assert_int_equal(posix_memalign(&r->op.buf, 4096, BLOCK), 0);
  r->c = c;
  r->id = new_id(c);
  r->fua = fua;
  fill(r->op.buf, r->id);
  r->op.type = BACKING_OP_WRITE;
  r->op.offset = slot * BLOCK;
  r->op.length = BLOCK;
  r->op.flags = fua ? BACKING_FLAG_FUA : 0;
  faulty_mark(c->b, MARK(M_WSUB, r->id));
  assert_int_equal(durability_submit(c->e, &r->op, req_done), 0);
  return r;
}

static struct treq *submit_flush(struct ctx *c)
{
  struct treq *r = calloc(1, sizeof *r);

  assert_non_null(r);
  r->c = c;
  r->id = new_id(c);
  r->op.type = BACKING_OP_FLUSH;
  faulty_mark(c->b, MARK(M_FSUB, r->id));
  assert_int_equal(durability_submit(c->e, &r->op, req_done), 0);
  return r;
}

static int wait_req(struct treq *r)
{
  struct ctx *c = r->c;
  pthread_mutex_lock(&c->lock);
  while (!r->done) {
    pthread_cond_wait(&c->cond, &c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return r->result;
}

static bool is_done(struct treq *r)
{
  pthread_mutex_lock(&r->c->lock);
  bool d = r->done;
  pthread_mutex_unlock(&r->c->lock);
  return d;
}

static void req_free(struct treq *r)
{
  free(r->op.buf);
  free(r);
}

static int wait_free(struct treq *r)
{
  int rc = wait_req(r);
  req_free(r);
  return rc;
}

/* ---- the event log ---- */

struct log {
  struct faulty_event *ev;
  size_t n;
};

static struct log log_get(struct ctx *c)
{
  struct log l;
  assert_int_equal(faulty_events(c->b, &l.ev, &l.n), 0);
  return l;
}

static size_t count_events(const struct log *l, char kind, enum backing_op_type type)
{
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) {
    n += l->ev[i].kind == kind && l->ev[i].type == type;
  }
  return n;
}


/* m(k): the largest S seq of a sync whose successful D is before k; 0 when none. */
static uint64_t durable_mark(const struct log *l, uint64_t k)
{
  uint64_t m = 0;
  for (size_t i = 0; i < l->n && l->ev[i].seq < k; i++) {
    const struct faulty_event *ev = &l->ev[i];
    if (ev->kind == FAULTY_EV_DONE && ev->type == BACKING_OP_FLUSH && ev->result == 0 &&
        ev->aux > m) {
      m = ev->aux;
    }
  }
  return m;
}

/* Writes of the log, one per slot (the tests never write a slot twice). */
struct wrec {
  unsigned id;
  uint64_t slot;
  uint64_t done;    /* D seq in the backing */
  uint64_t ack;     /* ack mark seq, or UINT64_MAX */
  bool fua;
  bool ok;
};

struct model {
  struct wrec w[SLOTS];
  size_t nw;
  struct frec {
    unsigned id;
    uint64_t sub, ack;
    bool ok;
  } f[4096];
  size_t nf;
};

/* The FLUSH requests of the log: submit and acknowledgement marks. */
static void model_build(const struct log *l, struct model *m)
{
  memset(m, 0, sizeof *m);
  for (size_t i = 0; i < l->n; i++) {
    const struct faulty_event *ev = &l->ev[i];
    if (ev->kind != FAULTY_EV_MARK) {
      continue;
    }
    int kind = MARK_KIND(ev->aux);
    unsigned id = MARK_ID(ev->aux);
    if (kind == M_FSUB) {
      assert_true(m->nf < sizeof m->f / sizeof m->f[0]);
      m->f[m->nf++] = (struct frec){.id = id, .sub = ev->seq, .ack = UINT64_MAX};
    } else if (kind == M_FACK || kind == M_FAIL) {
      for (size_t j = 0; j < m->nf; j++) {
        if (m->f[j].id == id) {
          m->f[j].ack = ev->seq;
          m->f[j].ok = kind == M_FACK;
        }
      }
    }
  }
}

/* ---- the checks ---- */

/* The invariant, for writes whose slots are known: see the file comment. `writes` lists
 * (id, slot, fua) of every write request; their D seq comes from the log by offset. */
struct wdesc {
  unsigned id;
  uint64_t slot;
  bool fua;
};

static void check_invariant(const struct log *l, const struct wdesc *writes, size_t nwrites)
{
  struct model *m = calloc(1, sizeof *m);

  assert_non_null(m);
  model_build(l, m);
  for (size_t i = 0; i < nwrites; i++) {
    struct wrec *w = &m->w[m->nw++];
    w->id = writes[i].id;
    w->slot = writes[i].slot;
    w->fua = writes[i].fua;
    w->ack = UINT64_MAX;
    for (size_t j = 0; j < l->n; j++) {
      const struct faulty_event *ev = &l->ev[j];
      if (ev->kind == FAULTY_EV_DONE && ev->type == BACKING_OP_WRITE && ev->result == 0 &&
          ev->offset == w->slot * BLOCK) {
        w->done = ev->seq;
      }
      if (ev->kind == FAULTY_EV_MARK && MARK_ID(ev->aux) == w->id &&
          (MARK_KIND(ev->aux) == M_WACK || MARK_KIND(ev->aux) == M_FUAACK)) {
        w->ack = ev->seq;
        w->ok = true;
      }
    }
    if (w->ok && w->fua) {
      uint64_t dm = durable_mark(l, w->ack);
      if (!(dm > w->done)) {
        fail_msg("FUA write %u (slot %llu, done at %llu) acknowledged at %llu before a sync "
                 "started after it completed", w->id, (unsigned long long)w->slot,
                 (unsigned long long)w->done, (unsigned long long)w->ack);
      }
    }
  }
  for (size_t j = 0; j < m->nf; j++) {
    const struct frec *f = &m->f[j];
    if (!f->ok) {
      continue;
    }
    uint64_t dm = durable_mark(l, f->ack);
    for (size_t i = 0; i < m->nw; i++) {
      const struct wrec *w = &m->w[i];
      if (w->ok && w->ack < f->sub && !(dm > w->done)) {
        fail_msg("FLUSH %u (submitted at %llu) acknowledged at %llu, but write %u "
                 "(acknowledged at %llu, done at %llu) is not covered by a sync that "
                 "completed before (latest covering sync started at %llu)",
                 f->id, (unsigned long long)f->sub, (unsigned long long)f->ack, w->id,
                 (unsigned long long)w->ack, (unsigned long long)w->done,
                 (unsigned long long)dm);
      }
    }
  }
  free(m);
}

/* ---- tests ---- */

/* Flushes that arrive while a sync runs and no write completed since it started share it. */
static void test_concurrent_flushes_share_one_sync(void **state)
{
  struct ctx *c = *state;
  struct treq *f[8];
  struct durability_stats st;
  struct wdesc w;
  struct treq *a = submit_write(c, 0, false);

  channels_set(c, 1); /* the single-sync group commit */

  w = (struct wdesc){a->id, 0, false};
  assert_int_equal(wait_free(a), 0);
  ctl(c, "rule stall flush count=1");
  f[0] = submit_flush(c);
  ctl(c, "wait-stalled 1 5000");
  for (int i = 1; i < 8; i++) {
    f[i] = submit_flush(c);
  }
  usleep(50000);
  for (int i = 0; i < 8; i++) {
    assert_false(is_done(f[i])); /* nobody is answered before the sync */
  }
  ctl(c, "release all");
  for (int i = 0; i < 8; i++) {
    assert_int_equal(wait_free(f[i]), 0);
  }
  struct log l = log_get(c);
  check_invariant(&l, &w, 1);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 1);
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
  struct treq *a = submit_write(c, 1, false), *b, *f1, *f2, *f3;

  channels_set(c, 1); /* the single-sync group commit */

  w[0] = (struct wdesc){a->id, 1, false};
  assert_int_equal(wait_free(a), 0);
  ctl(c, "rule stall-done flush count=1"); /* S1 runs; its completion is held */
  f1 = submit_flush(c);
  ctl(c, "wait-stalled 1 5000");
  b = submit_write(c, 2, false);
  w[1] = (struct wdesc){b->id, 2, false};
  assert_int_equal(wait_free(b), 0);
  f2 = submit_flush(c);
  f3 = submit_flush(c);
  ctl(c, "release all");
  assert_int_equal(wait_free(f1), 0);
  assert_int_equal(wait_free(f2), 0);
  assert_int_equal(wait_free(f3), 0);
  struct log l = log_get(c);
  check_invariant(&l, w, 2);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* No write since the last successful sync: a FLUSH is answered without a new sync; the
 * first FLUSH of a fresh export always syncs (a previous process may have left dirty
 * pages). */
static void test_flush_elided_only_after_a_sync(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;

  assert_int_equal(wait_free(submit_flush(c)), 0); /* fresh: syncs */
  assert_int_equal(wait_free(submit_flush(c)), 0); /* nothing new: no sync */
  struct log l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 1);
  free(l.ev);
  assert_int_equal(wait_free(submit_write(c, 3, false)), 0);
  assert_int_equal(wait_free(submit_flush(c)), 0); /* a write completed: syncs */
  l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
  durability_get_stats(c->e, &st);
  assert_int_equal(st.flushes_elided, 1);
}

/* FUA writes (emulated: the faulty backing has no native FUA) join the group commit: one
 * that completes while a sync runs waits for the next sync, shared with the others. */
static void test_fua_writes_group_commit(void **state)
{
  struct ctx *c = *state;
  struct wdesc w[4];
  struct treq *r[4];

  channels_set(c, 1); /* the single-sync group commit */

  ctl(c, "rule stall-done flush count=1"); /* S1 runs; its completion is held */
  r[0] = submit_write(c, 10, true);
  w[0] = (struct wdesc){r[0]->id, 10, true};
  ctl(c, "wait-stalled 1 5000");
  for (int i = 1; i < 4; i++) {
    r[i] = submit_write(c, 10 + (uint64_t)i, true);
    w[i] = (struct wdesc){r[i]->id, 10 + (uint64_t)i, true};
  }
  usleep(50000);
  for (int i = 0; i < 4; i++) {
    assert_false(is_done(r[i])); /* written, but not durable yet */
  }
  ctl(c, "release all");
  for (int i = 0; i < 4; i++) {
    assert_int_equal(wait_free(r[i]), 0);
  }
  struct log l = log_get(c);
  check_invariant(&l, w, 4);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* A failed sync: that FLUSH, the FLUSHes waiting for the next sync, every later FLUSH and
 * FUA write fail with EIO; the backing sees no further sync. Plain writes still work. */
static void test_sync_error_is_sticky(void **state)
{
  struct ctx *c = *state;
  struct durability_stats st;
  struct treq *f1, *f2;

  channels_set(c, 1); /* the single-sync group commit */

  assert_int_equal(wait_free(submit_write(c, 20, false)), 0);
  ctl(c, "rule stall flush count=1");
  f1 = submit_flush(c);
  ctl(c, "wait-stalled 1 5000");
  assert_int_equal(wait_free(submit_write(c, 21, false)), 0);
  f2 = submit_flush(c); /* needs the next sync */
  ctl(c, "release all err=EIO");
  assert_int_equal(wait_free(f1), -EIO);
  assert_int_equal(wait_free(f2), -EIO);
  assert_true(atomic_load(&c->e->sync_failed));
  assert_int_equal(wait_free(submit_write(c, 22, false)), 0);
  assert_int_equal(wait_free(submit_flush(c)), -EIO);
  assert_int_equal(wait_free(submit_flush(c)), -EIO);
  assert_int_equal(wait_free(submit_write(c, 23, true)), -EIO);
  struct log l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 0);
  assert_int_equal(count_events(&l, FAULTY_EV_DONE, BACKING_OP_FLUSH), 1);
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
  struct treq *a = submit_write(c, 50, false), *b, *f1, *f2;

  w[0] = (struct wdesc){a->id, 50, false};
  assert_int_equal(wait_free(a), 0);
  ctl(c, "rule stall-done flush count=1"); /* S1 runs; its completion is held */
  f1 = submit_flush(c);
  ctl(c, "wait-stalled 1 5000");
  b = submit_write(c, 51, false);
  w[1] = (struct wdesc){b->id, 51, false};
  assert_int_equal(wait_free(b), 0);
  f2 = submit_flush(c); /* S2 starts now, beside S1 */
  assert_int_equal(wait_free(f2), 0);
  assert_int_equal(wait_free(f1), 0); /* covered by S2, while S1 is still held */
  struct log l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  assert_int_equal(count_events(&l, FAULTY_EV_DONE, BACKING_OP_FLUSH), 1); /* S2 only */
  check_invariant(&l, w, 2);
  free(l.ev);
  ctl(c, "release all");
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

  ctl(c, "rule stall-done flush count=%d", BACKING_SYNC_CHANNELS);
  for (unsigned i = 0; i <= BACKING_SYNC_CHANNELS; i++) {
    struct treq *r = submit_write(c, 60 + i, false);
    w[i] = (struct wdesc){r->id, 60 + i, false};
    assert_int_equal(wait_free(r), 0);
    f[i] = submit_flush(c);
    if (i < BACKING_SYNC_CHANNELS) {
      ctl(c, "wait-stalled %u 5000", i + 1);
    }
  }
  usleep(50000);
  struct log l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), BACKING_SYNC_CHANNELS);
  free(l.ev);
  for (unsigned i = 0; i <= BACKING_SYNC_CHANNELS; i++) {
    assert_false(is_done(f[i]));
  }
  ctl(c, "release %llu", (unsigned long long)stalled_oldest(c)); /* S1 frees a channel */
  assert_int_equal(wait_free(f[0]), 0);
  assert_int_equal(wait_free(f[BACKING_SYNC_CHANNELS]), 0); /* its own sync, S5 */
  for (unsigned i = 1; i < BACKING_SYNC_CHANNELS; i++) {
    assert_int_equal(wait_free(f[i]), 0); /* covered by S5 */
  }
  l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), BACKING_SYNC_CHANNELS + 1);
  check_invariant(&l, w, BACKING_SYNC_CHANNELS + 1);
  free(l.ev);
  ctl(c, "release all");
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

  ctl(c, "rule stall-done flush count=2");
  assert_int_equal(wait_free(submit_write(c, 70, false)), 0);
  f1 = submit_flush(c);
  ctl(c, "wait-stalled 1 5000");
  assert_int_equal(wait_free(submit_write(c, 71, false)), 0);
  f2 = submit_flush(c);
  ctl(c, "wait-stalled 2 5000");
  ctl(c, "release %llu err=EIO", (unsigned long long)stalled_oldest(c));
  assert_int_equal(wait_free(f1), -EIO);
  assert_int_equal(wait_free(f2), -EIO); /* while its own sync is still held */
  ctl(c, "release all"); /* S2 succeeds: too late, nobody is acknowledged by it */
  assert_int_equal(wait_free(submit_write(c, 72, false)), 0);
  assert_int_equal(wait_free(submit_flush(c)), -EIO);
  struct log l = log_get(c);
  assert_int_equal(count_events(&l, FAULTY_EV_SUBMIT, BACKING_OP_FLUSH), 2);
  free(l.ev);
}

/* A sync left running with nobody waiting (a newer one answered its FLUSH) when the export
 * is closed: the close waits for it, before the backing and the group commit's state go.
 * It used to free them under the running sync (use-after-free at SIGTERM, helper-14). */
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
  ctl(rl->c, "release all");
  return NULL;
}

static void test_close_waits_for_an_orphan_sync(void **state)
{
  struct ctx *c = *state;
  struct release_later rl = {.c = c, .ms = 300};
  pthread_t th;
  struct treq *f1;

  ctl(c, "rule stall-done flush count=1");
  assert_int_equal(wait_free(submit_write(c, 80, false)), 0);
  f1 = submit_flush(c); /* S1: held */
  ctl(c, "wait-stalled 1 5000");
  assert_int_equal(wait_free(submit_write(c, 81, false)), 0);
  assert_int_equal(wait_free(submit_flush(c)), 0); /* S2 completes, answers f1 too */
  assert_int_equal(wait_free(f1), 0);
  ctl(c, "wait-stalled 1 0"); /* S1 still runs, with no waiter */
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
  r.op.done = flush_channel_done;
  int rc = backing_submit(b, &r.op);
  if (rc == 0) {
    rc = wait_req(&r);
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

  ctl(c, "rule fail write count=1 err=ENOSPC");
  assert_int_equal(wait_free(submit_write(c, 30, false)), -ENOSPC);
  assert_int_equal(wait_free(submit_write(c, 31, false)), 0);
  ctl(c, "rule fail write count=1 err=EIO");
  assert_int_equal(wait_free(submit_write(c, 32, true)), -EIO);
  assert_int_equal(wait_free(submit_flush(c)), 0);
  assert_false(atomic_load(&c->e->sync_failed));
}

/* The power-loss model itself: overlapping writes, TRIM, a failed write, and `crash`. */
static void read_at(const char *path, uint64_t off, void *buf, size_t len)
{
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
  close(fd);
}

static void assert_slot(const char *path, uint64_t slot, unsigned id)
{
  char want[BLOCK], got[BLOCK];
  if (id == 0) {
    memset(want, 0, sizeof want);
  } else {
    fill(want, id);
  }
  read_at(path, slot * BLOCK, got, BLOCK);
  if (memcmp(want, got, BLOCK) != 0) {
    uint64_t v;
    memcpy(&v, got, 8);
    fail_msg("%s slot %llu: expected %s %u, found 0x%llx...", path, (unsigned long long)slot,
             id ? "write" : "zeroes", id, (unsigned long long)v);
  }
}

static void test_model_drops_unsynced_writes(void **state)
{
  struct ctx *c = *state;
  char img[128];
  struct treq *a, *b, *t;
  uint64_t k;

  a = submit_write(c, 40, false);
  unsigned ida = a->id;
  assert_int_equal(wait_free(a), 0);
  struct treq *d = submit_write(c, 41, false);
  unsigned idd = d->id;
  assert_int_equal(wait_free(d), 0);
  assert_int_equal(wait_free(submit_flush(c)), 0);
  /* then, without a sync: B overwrites A, a TRIM over D, a write that fails */
  b = submit_write(c, 40, false);
  unsigned idb = b->id;
  assert_int_equal(wait_free(b), 0);
  t = calloc(1, sizeof *t);
  t->c = c;
  t->op.type = BACKING_OP_TRIM;
  t->op.offset = 41 * BLOCK;
  t->op.length = BLOCK;
  assert_int_equal(durability_submit(c->e, &t->op, req_done), 0);
  assert_int_equal(wait_free(t), 0);
  ctl(c, "rule fail write count=1");
  assert_int_equal(wait_free(submit_write(c, 42, false)), -EIO);

  /* now: the live file has B and the trim; the durable state has A and D */
  assert_slot(c->img, 40, idb);
  assert_slot(c->img, 41, 0);
  struct log l = log_get(c);
  k = l.ev[l.n - 1].seq + 1;
  free(l.ev);
  snprintf(img, sizeof img, "%s/image.0", c->dir);
  assert_int_equal(faulty_image_at(c->b, k, img), 0);
  assert_slot(img, 40, ida);
  assert_slot(img, 41, idd);
  assert_slot(img, 42, 0);
  /* a sync makes B and the trim durable */
  assert_int_equal(wait_free(submit_flush(c)), 0);
  l = log_get(c);
  k = l.ev[l.n - 1].seq + 1;
  free(l.ev);
  assert_int_equal(faulty_image_at(c->b, k, img), 0);
  assert_slot(img, 40, idb);
  assert_slot(img, 41, 0);
  /* an unsynced write, then power loss: the image file itself loses it */
  b = submit_write(c, 43, false);
  assert_int_equal(wait_free(b), 0);
  ctl(c, "crash");
  assert_slot(c->img, 40, idb);
  assert_slot(c->img, 43, 0);
  assert_int_equal(faulty_image_at(c->b, UINT64_MAX, img), -EINVAL); /* not reached yet */
}

/* ---- the random workload and its crash points ---- */

#define THREADS 6
#define OPS_PER_THREAD 90

struct worker {
  struct ctx *c;
  unsigned seed;
  uint64_t first_slot; /* slots first_slot .. first_slot + OPS_PER_THREAD - 1 */
  struct wdesc w[OPS_PER_THREAD];
  size_t nw;
};

static void *worker_main(void *arg)
{
  struct worker *wk = arg;
  uint64_t slot = wk->first_slot;

  for (int i = 0; i < OPS_PER_THREAD; i++) {
    unsigned r = (unsigned)rand_r(&wk->seed) % 100;
    if (r < 20) {
      struct treq *f = submit_flush(wk->c);
      (void)wait_free(f);
    } else {
      bool fua = r >= 80;
      struct treq *w = submit_write(wk->c, slot, fua);
      wk->w[wk->nw++] = (struct wdesc){w->id, slot, fua};
      slot++;
      (void)wait_free(w);
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
  ctl(c, "rule delay write ms=3 jitter=1");
  ctl(c, "rule delay flush ms=4 jitter=1");
  for (int i = 0; i < THREADS; i++) {
    wk[i] = (struct worker){.c = c, .seed = seed + (unsigned)i * 7919u,
                            .first_slot = 100 + (uint64_t)i * OPS_PER_THREAD};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &wk[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    memcpy(all + nall, wk[i].w, wk[i].nw * sizeof *all);
    nall += wk[i].nw;
  }
  ctl(c, "clear");
  /* a last write that nothing syncs */
  struct treq *z = submit_write(c, 99, false);
  all[nall++] = (struct wdesc){z->id, 99, false};
  assert_int_equal(wait_free(z), 0);

  struct log l = log_get(c);
  if (getenv("DG_TEST_NO_INVARIANT") == NULL) { /* to show the crash points alone catch bugs */
    check_invariant(&l, all, nall);
  }

  /* What must survive a crash at point k: writes acknowledged with FUA before k, and
   * writes acknowledged before a FLUSH's submission whose acknowledgement is before k. */
  struct model *m = calloc(1, sizeof *m);
  assert_non_null(m);
  model_build(&l, m);
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
      fill(want, all[i].id);
      assert_int_equal(pread(fd, buf, BLOCK, (off_t)(all[i].slot * BLOCK)), BLOCK);
      checks++;
      if (memcmp(buf, want, BLOCK) != 0) {
        fail_msg("crash point %llu: write %u (slot %llu, %s, acknowledged at %llu, required "
                 "from %llu) is not in the image", (unsigned long long)k, all[i].id,
                 (unsigned long long)all[i].slot, all[i].fua ? "FUA" : "flushed",
                 (unsigned long long)ack[i], (unsigned long long)must[i]);
      }
    }
  }
  /* the last write was never synced: the final crash image must not have it, while the
   * live file does (the model drops, it does not just keep everything) */
  assert_int_equal(pread(fd, buf, BLOCK, 99 * BLOCK), BLOCK);
  fill(want, all[nall - 1].id);
  assert_true(memcmp(buf, want, BLOCK) != 0);
  close(fd);
  assert_slot(c->img, 99, all[nall - 1].id);

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

  channels_set(c, 1);
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

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_concurrent_flushes_share_one_sync, setup, teardown),
    cmocka_unit_test_setup_teardown(test_write_between_needs_new_sync, setup, teardown),
    cmocka_unit_test_setup_teardown(test_flush_elided_only_after_a_sync, setup, teardown),
    cmocka_unit_test_setup_teardown(test_fua_writes_group_commit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sync_error_is_sticky, setup, teardown),
    cmocka_unit_test_setup_teardown(test_write_errors_pass_through, setup, teardown),
    cmocka_unit_test_setup_teardown(test_model_drops_unsynced_writes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_overlapping_syncs, setup, teardown),
    cmocka_unit_test_setup_teardown(test_full_channels_queue_the_next_sync, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sync_error_fails_every_channel, setup, teardown),
    cmocka_unit_test_setup_teardown(test_close_waits_for_an_orphan_sync, setup, teardown),
    cmocka_unit_test_setup_teardown(test_file_sync_channels, setup, teardown),
    cmocka_unit_test_setup_teardown(test_crash_points_one_channel, setup, teardown),
    cmocka_unit_test_setup_teardown(test_crash_points_all_channels, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
