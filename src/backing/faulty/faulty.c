/* SPDX-License-Identifier: MIT */
/* faulty.c: the fault-injecting test backing's vtable: submit (rules, the held list, the
 * pump thread), open and close. See faulty.h for what it does and its control protocol,
 * faulty_impl.h for how its files share the work (faulty_power.c: the event log and the
 * power-loss model; faulty_ctl.c: the control commands and socket).
 *
 * An operation's path: faulty_submit wraps it in a struct fop (the op passed to the file
 * backing is the fop's own, so the caller's op stays untouched), applies the first matching
 * rule (fail: done at once; stall/delay: onto the held list), and issues it to the file
 * backing (fop_issue: event S). The file backing's completion (fop_inner_done: event D)
 * updates the power-loss model, then calls the caller's done, outside the lock.
 *
 * The model (faulty_power.c), under fb->lock:
 *   durable_seq  the largest S seq of a FLUSH that completed successfully: every write whose
 *                D seq is below it completed before that sync started, so it is durable.
 *   pending      writes that completed successfully and are not yet in the base image, in
 *                D order, with their data; when not recording, the durable prefix is folded
 *                into PATH.faulty-base at each successful sync.
 * The image after a power loss at event K: the base, plus each pending write w with
 * w.done_seq < K that is durable at K (w.done_seq < m(K), m(K) the largest S seq of a FLUSH
 * whose successful D is below K; or w was a FUA write), applied in D order.
 */
#include "backing/faulty/faulty_impl.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backing/file.h"
#include "util/log.h"
#include "util/mono_cond.h"

static const struct backing_vtable faulty_vtable;

uint64_t faulty_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* READs, BLOCK_STATUS and CACHE change nothing and are not logged. */
static bool is_logged(enum backing_op_type t)
{
  return t == BACKING_OP_WRITE || t == BACKING_OP_TRIM || t == BACKING_OP_WRITE_ZEROES ||
         t == BACKING_OP_FLUSH;
}

/* ---- the data path ---- */

static void fop_inner_done(struct backing_op *iop, int result);

/* Puts f on the held list until release_ns (under the lock). */
static void hold(struct faulty_backing *fb, struct fop *f, uint64_t release_ns)
{
  f->release_ns = release_ns;
  f->next = fb->held;
  fb->held = f;
  pthread_cond_broadcast(&fb->cond);
}

/* The delay a rule asks for, in ns from now; NEVER for a stall. Under the lock. */
static uint64_t rule_release(struct faulty_backing *fb, const struct rule *r)
{
  uint64_t ms = r->ms;

  if (r->action == ACT_STALL || r->action == ACT_STALL_DONE) {
    return NEVER;
  }
  if (r->jitter) {
    ms = (uint64_t)rand_r(&fb->rand_state) % (ms + 1);
  }
  return faulty_now_ns() + ms * 1000000ull;
}

/* Completes f towards the caller with result (event D, the model), without the lock. */
static void fop_complete(struct fop *f, int result)
{
  struct faulty_backing *fb = f->fb;
  struct backing_op *outer = f->outer, *iop = &f->iop;
  enum backing_op_type type = iop->type;

  pthread_mutex_lock(&fb->lock);
  if (fb->crashed) { /* power is off: nothing completes any more */
    pthread_mutex_unlock(&fb->lock);
    free(f);
    return;
  }
  if (is_logged(type)) {
    uint64_t seq = faulty_log_event_locked(fb, FAULTY_EV_DONE, type, f->id, iop->flags,
                                           iop->offset, iop->length, result,
                                           type == BACKING_OP_FLUSH && f->issued ? f->sub_seq
                                                                                 : 0);
    if (f->issued) {
      faulty_model_done_locked(fb, iop, seq, f->sub_seq, result);
    }
  }
  pthread_mutex_unlock(&fb->lock);
  outer->extent_count = iop->extent_count;
  free(f);
  outer->done(outer, result);
}

/* Issues f to the file backing (event S); or completes it with an error when it was
 * released with one. Without the lock. */
static void fop_issue(struct fop *f)
{
  struct faulty_backing *fb = f->fb;
  int rc;

  pthread_mutex_lock(&fb->lock);
  if (fb->crashed) { /* power is off: it never starts, never completes */
    f->frozen = true;
    hold(fb, f, NEVER);
    pthread_mutex_unlock(&fb->lock);
    return;
  }
  if (f->fail != 0) {
    pthread_mutex_unlock(&fb->lock);
    fop_complete(f, -f->fail);
    return;
  }
  if (is_logged(f->iop.type)) {
    f->sub_seq = faulty_log_event_locked(fb, FAULTY_EV_SUBMIT, f->iop.type, f->id,
                                         f->iop.flags, f->iop.offset, f->iop.length, 0, 0);
  }
  if (f->iop.type == BACKING_OP_FLUSH) {
    fb->syncs++;
  }
  f->issued = true;
  pthread_mutex_unlock(&fb->lock);
  rc = backing_submit(fb->inner, &f->iop);
  if (rc < 0) {
    fop_inner_done(&f->iop, rc);
  }
}

/* The file backing is done with f: complete it, or hold its completion (stall-done,
 * delay-done rules). */
static void fop_inner_done(struct backing_op *iop, int result)
{
  struct fop *f = (struct fop *)iop;
  struct faulty_backing *fb = f->fb;

  if (f->done_rule) {
    pthread_mutex_lock(&fb->lock);
    f->completed = true;
    f->result = result;
    hold(fb, f, f->done_release);
    pthread_mutex_unlock(&fb->lock);
    return;
  }
  fop_complete(f, result);
}

static bool rule_matches(const struct rule *r, const struct backing_op *op)
{
  if (!(r->types & (1u << op->type))) {
    return false;
  }
  if (r->ranged && !(op->offset < r->off + r->len && r->off < op->offset + op->length)) {
    return false;
  }
  return true;
}

static int faulty_submit(struct backing *b, struct backing_op *op)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  struct fop *f = calloc(1, sizeof *f);
  struct rule *r = NULL;

  if (f == NULL) {
    return -ENOMEM;
  }
  f->outer = op;
  f->fb = fb;
  f->iop.type = op->type;
  f->iop.flags = op->flags;
  f->iop.sync_channel = op->sync_channel;
  f->iop.offset = op->offset;
  f->iop.length = op->length;
  f->iop.buf = op->buf;
  f->iop.extent_max = op->extent_max;
  f->iop.engine = op->engine; /* a loop's ring engine: from other threads it falls back */
  f->iop.nonblocking = op->nonblocking;
  f->iop.fixed_buf = op->fixed_buf; /* the same buffer, registered in the same ring */
  f->iop.done = fop_inner_done;
  pthread_mutex_lock(&fb->lock);
  f->id = ++fb->next_id;
  fb->ops++;
  for (size_t i = 0; i < fb->nrules; i++) {
    struct rule *ri = &fb->rules[i];
    if (ri->count != 0 && ri->matched >= ri->skip + ri->count) {
      continue; /* used up */
    }
    if (rule_matches(ri, op)) {
      if (ri->matched++ >= ri->skip) {
        r = ri;
      }
      break;
    }
  }
  if (fb->crashed) {
    f->frozen = true;
    hold(fb, f, NEVER);
    pthread_mutex_unlock(&fb->lock);
    return 0;
  }
  if (r != NULL) {
    switch (r->action) {
    case ACT_FAIL:
      f->fail = r->err;
      break;
    case ACT_STALL:
    case ACT_DELAY:
      hold(fb, f, rule_release(fb, r));
      pthread_mutex_unlock(&fb->lock);
      return 0;
    case ACT_STALL_DONE:
    case ACT_DELAY_DONE:
      f->done_rule = true;
      f->done_release = rule_release(fb, r);
      break;
    }
  }
  pthread_mutex_unlock(&fb->lock);
  fop_issue(f);
  return 0;
}

static void *pump_main(void *arg)
{
  struct faulty_backing *fb = arg;

  pthread_mutex_lock(&fb->lock);
  while (!fb->stopping) {
    uint64_t now = faulty_now_ns(), earliest = NEVER;
    struct fop *due = NULL, **link = &fb->held;

    while (*link != NULL) {
      struct fop *f = *link;
      if (!f->frozen && !fb->crashed && f->release_ns <= now) {
        *link = f->next;
        f->next = due;
        due = f;
      } else {
        if (!f->frozen && f->release_ns < earliest) {
          earliest = f->release_ns;
        }
        link = &f->next;
      }
    }
    if (due != NULL) {
      pthread_mutex_unlock(&fb->lock);
      /* oldest first: the held list is newest first, and `due` reversed it back */
      while (due != NULL) {
        struct fop *f = due;
        due = f->next;
        f->next = NULL;
        if (f->completed) {
          fop_complete(f, f->fail != 0 ? -f->fail : f->result);
        } else {
          fop_issue(f);
        }
      }
      pthread_mutex_lock(&fb->lock);
      continue;
    }
    if (earliest == NEVER || fb->crashed) {
      pthread_cond_wait(&fb->cond, &fb->lock);
    } else {
      struct timespec ts = {.tv_sec = (time_t)(earliest / 1000000000ull),
                            .tv_nsec = (long)(earliest % 1000000000ull)};
      pthread_cond_timedwait(&fb->cond, &fb->lock, &ts);
    }
  }
  pthread_mutex_unlock(&fb->lock);
  return NULL;
}

bool backing_is_faulty(const struct backing *b)
{
  return b != NULL && b->vt == &faulty_vtable;
}

/* ---- open and close ---- */

static int faulty_refresh_size(struct backing *b, uint64_t *size)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  int rc = backing_refresh_size(fb->inner, size);

  if (rc == 0) {
    fb->base.geo.size = *size;
  }
  return rc;
}

static void faulty_free(struct faulty_backing *fb)
{
  while (fb->held != NULL) { /* only frozen ones (after a crash) can be left */
    struct fop *f = fb->held;
    fb->held = f->next;
    free(f);
  }
  faulty_model_free(fb);
  if (fb->base_fd >= 0) {
    close(fb->base_fd);
    if (!fb->crashed) {
      unlink(fb->base_path);
    }
  }
  if (fb->listen_fd >= 0) {
    close(fb->listen_fd);
    unlink(fb->ctl_path);
  }
  if (fb->stop_fd >= 0) {
    close(fb->stop_fd);
  }
  backing_close(fb->inner);
  free(fb->base.description);
  free(fb->path);
  free(fb->base_path);
  free(fb->ctl_path);
  free(fb);
}

static void faulty_close(struct backing *b)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  uint64_t one = 1;

  pthread_mutex_lock(&fb->lock);
  fb->stopping = true;
  pthread_cond_broadcast(&fb->cond);
  pthread_mutex_unlock(&fb->lock);
  if (write(fb->stop_fd, &one, sizeof one) < 0) {
    log_warn("faulty: cannot wake the control thread: %s", strerror(errno));
  }
  if (fb->ctl_started) {
    pthread_join(fb->ctl, NULL);
  }
  if (fb->pump_started) {
    pthread_join(fb->pump, NULL);
  }
  pthread_mutex_destroy(&fb->lock);
  pthread_cond_destroy(&fb->cond);
  faulty_free(fb);
}

static const struct backing_vtable faulty_vtable = {
  .kind = "faulty",
  .submit = faulty_submit,
  .refresh_size = faulty_refresh_size,
  .close = faulty_close,
};

int backing_faulty_open(const char *path, const struct backing_options *opts,
                        struct backing **out)
{
  const char *ctl = getenv("DISKGATE_TEST_FAULTS");
  struct faulty_backing *fb;
  struct stat st;
  int rc;

  if (ctl == NULL || ctl[0] == '\0') {
    log_error("faulty: the fault-injecting backing is for tests only; set "
              "DISKGATE_TEST_FAULTS to its control socket path to use it");
    return -ENOTSUP;
  }
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    char shown[LOG_SHOWN_MAX];
    log_error("faulty: %s: only regular files can be wrapped",
              log_escape_str(shown, sizeof shown, path));
    return -EINVAL;
  }
  fb = calloc(1, sizeof *fb);
  if (fb == NULL) {
    return -ENOMEM;
  }
  fb->base_fd = fb->listen_fd = fb->stop_fd = -1;
  rc = backing_file_open(path, opts, &fb->inner);
  if (rc < 0) {
    free(fb);
    return rc;
  }
  fb->base.vt = &faulty_vtable;
  fb->base.geo = fb->inner->geo;
  fb->base.geo.can_fua = false;
  fb->base.opts = *opts;
  fb->path = strdup(path);
  fb->ctl_path = strdup(ctl);
  fb->base.description = strdup(fb->inner->description != NULL ? fb->inner->description : "");
  if (fb->path != NULL && asprintf(&fb->base_path, "%s.faulty-base", path) < 0) {
    fb->base_path = NULL;
  }
  if (fb->path == NULL || fb->ctl_path == NULL || fb->base.description == NULL ||
      fb->base_path == NULL) {
    faulty_free(fb);
    return -ENOMEM;
  }
  rc = faulty_model_start(fb, path);
  if (rc < 0) {
    faulty_free(fb);
    return rc;
  }
  fb->stop_fd = eventfd(0, EFD_CLOEXEC);
  fb->listen_fd = faulty_ctl_listen(ctl);
  if (fb->stop_fd < 0 || fb->listen_fd < 0) {
    rc = fb->stop_fd < 0 ? -errno : fb->listen_fd;
    char shown[LOG_SHOWN_MAX];
    log_error("faulty: cannot listen on %s: %s", log_escape_str(shown, sizeof shown, ctl),
              strerror(-rc));
    if (fb->listen_fd < 0) {
      fb->listen_fd = -1;
    }
    faulty_free(fb);
    return rc == -ENOMEM ? rc : -EADDRINUSE;
  }
  fb->rand_state = (unsigned)getpid() ^ (unsigned)faulty_now_ns();
  pthread_mutex_init(&fb->lock, NULL);
  rc = mono_cond_init(&fb->cond);
  assert(rc == 0); /* glibc's pthread_cond_init cannot fail, and CLOCK_MONOTONIC is valid */
  fb->pump_started = pthread_create(&fb->pump, NULL, pump_main, fb) == 0;
  fb->ctl_started = fb->pump_started && pthread_create(&fb->ctl, NULL, faulty_ctl_main, fb) == 0;
  if (!fb->ctl_started) {
    faulty_close(&fb->base);
    return -ENOMEM;
  }
  char shown[LOG_SHOWN_MAX], ctl_shown[LOG_SHOWN_MAX];
  log_warn("faulty: serving %s through the fault-injecting test backing (control %s)",
           log_escape_str(shown, sizeof shown, path),
           log_escape_str(ctl_shown, sizeof ctl_shown, ctl));
  *out = &fb->base;
  return 0;
}
