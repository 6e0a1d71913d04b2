/* SPDX-License-Identifier: MIT */
/* dur_harness.c: see dur_harness.h. */
#include "dur_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- set-up ---- */

int harness_setup(void **state)
{
  return harness_setup_cache(state, CACHE_WRITEBACK);
}

int harness_setup_writethrough(void **state)
{
  return harness_setup_cache(state, CACHE_WRITETHROUGH);
}

int harness_setup_directsync(void **state)
{
  return harness_setup_cache(state, CACHE_DIRECTSYNC);
}

int harness_setup_cache(void **state, enum cache_mode cache)
{
  struct ctx *c = calloc(1, sizeof *c);
  struct backing_options opts = {.sync = SYNC_FULL, .cache = cache};
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
  assert_int_equal(export_create("t", spec, c->b, false, SYNC_FULL, &c->e), 0);
  c->write_through = cache_mode_writes_through(cache);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  free(faulty_command(c->b, "record"));
  *state = c;
  return 0;
}

int harness_teardown(void **state)
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
void harness_ctl(struct ctx *c, const char *fmt, ...)
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
void harness_channels_set(struct ctx *c, uint32_t n)
{
  assert_true(c->b->geo.sync_channels >= n);
  c->b->geo.sync_channels = n;
}

/* The faulty backing's id of the oldest stalled operation (from its `stalled` reply:
 * "ok N ID:TYPE:OFF:LEN[:done] ..."). */
uint64_t harness_stalled_oldest(struct ctx *c)
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

void harness_req_done(struct backing_op *op, int result)
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
void harness_flush_channel_done(struct backing_op *op, int result)
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
void harness_fill(void *buf, unsigned id)
{
  uint64_t v = 0xd1500000000ull | id;
  for (size_t i = 0; i < BLOCK / 8; i++) {
    memcpy((char *)buf + i * 8, &v, 8);
  }
}

struct treq *harness_submit_write(struct ctx *c, uint64_t slot, bool fua)
{
  struct treq *r = calloc(1, sizeof *r);

  assert_non_null(r);
  assert_int_equal(posix_memalign(&r->op.buf, 4096, BLOCK), 0);
  r->c = c;
  r->id = new_id(c);
  r->fua = fua;
  harness_fill(r->op.buf, r->id);
  r->op.type = BACKING_OP_WRITE;
  r->op.offset = slot * BLOCK;
  r->op.length = BLOCK;
  r->op.flags = fua ? BACKING_FLAG_FUA : 0;
  faulty_mark(c->b, MARK(M_WSUB, r->id));
  assert_int_equal(durability_submit(c->e, &r->op, harness_req_done), 0);
  return r;
}

struct treq *harness_submit_flush(struct ctx *c)
{
  struct treq *r = calloc(1, sizeof *r);

  assert_non_null(r);
  r->c = c;
  r->id = new_id(c);
  r->op.type = BACKING_OP_FLUSH;
  faulty_mark(c->b, MARK(M_FSUB, r->id));
  assert_int_equal(durability_submit(c->e, &r->op, harness_req_done), 0);
  return r;
}

int harness_wait_req(struct treq *r)
{
  struct ctx *c = r->c;
  pthread_mutex_lock(&c->lock);
  while (!r->done) {
    pthread_cond_wait(&c->cond, &c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return r->result;
}

bool harness_is_done(struct treq *r)
{
  pthread_mutex_lock(&r->c->lock);
  bool d = r->done;
  pthread_mutex_unlock(&r->c->lock);
  return d;
}

void harness_req_free(struct treq *r)
{
  free(r->op.buf);
  free(r);
}

int harness_wait_free(struct treq *r)
{
  int rc = harness_wait_req(r);
  harness_req_free(r);
  return rc;
}

/* ---- the event log ---- */


struct log harness_log_get(struct ctx *c)
{
  struct log l;
  assert_int_equal(faulty_events(c->b, &l.ev, &l.n), 0);
  return l;
}

size_t harness_count_events(const struct log *l, char kind, enum backing_op_type type)
{
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) {
    n += l->ev[i].kind == kind && l->ev[i].type == type;
  }
  return n;
}


/* m(k): the largest S seq of a sync whose successful D is before k; 0 when none. */
uint64_t harness_durable_mark(const struct log *l, uint64_t k)
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



/* The FLUSH requests of the log: submit and acknowledgement marks. */
void harness_model_build(const struct log *l, struct model *m)
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


void harness_check_invariant(const struct log *l, const struct wdesc *writes, size_t nwrites)
{
  struct model *m = calloc(1, sizeof *m);

  assert_non_null(m);
  harness_model_build(l, m);
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
      uint64_t dm = harness_durable_mark(l, w->ack);
      if (!(dm > w->done)) {
        fail_msg("FUA or write-through write %u (slot %llu, done at %llu) acknowledged at %llu "
                 "before a sync started after it completed", w->id, (unsigned long long)w->slot,
                 (unsigned long long)w->done, (unsigned long long)w->ack);
      }
    }
  }
  for (size_t j = 0; j < m->nf; j++) {
    const struct frec *f = &m->f[j];
    if (!f->ok) {
      continue;
    }
    uint64_t dm = harness_durable_mark(l, f->ack);
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

/* ---- the image ---- */

static void read_at(const char *path, uint64_t off, void *buf, size_t len)
{
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
  close(fd);
}

void harness_assert_slot(const char *path, uint64_t slot, unsigned id)
{
  char want[BLOCK], got[BLOCK];
  if (id == 0) {
    memset(want, 0, sizeof want);
  } else {
    harness_fill(want, id);
  }
  read_at(path, slot * BLOCK, got, BLOCK);
  if (memcmp(want, got, BLOCK) != 0) {
    uint64_t v;
    memcpy(&v, got, 8);
    fail_msg("%s slot %llu: expected %s %u, found 0x%llx...", path, (unsigned long long)slot,
             id ? "write" : "zeroes", id, (unsigned long long)v);
  }
}
