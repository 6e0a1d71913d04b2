/* faulty.c: the fault-injecting test backing; see faulty.h for what it does and its control
 * protocol.
 *
 * An operation's path: faulty_submit wraps it in a struct fop (the op passed to the file
 * backing is the fop's own, so the caller's op stays untouched), applies the first matching
 * rule (fail: done at once; stall/delay: onto the held list), and issues it to the file
 * backing (fop_issue: event S). The file backing's completion (fop_inner_done: event D)
 * updates the power-loss model, then calls the caller's done, outside the lock.
 *
 * The model, under fb->lock:
 *   durable_seq  the largest S seq of a FLUSH that completed successfully: every write whose
 *                D seq is below it completed before that sync started, so it is durable.
 *   pending      writes that completed successfully and are not yet in the base image, in
 *                D order, with their data; when not recording, the durable prefix is folded
 *                into PATH.faulty-base at each successful sync.
 * The image after a power loss at event K: the base, plus each pending write w with
 * w.done_seq < K that is durable at K (w.done_seq < m(K), m(K) the largest S seq of a FLUSH
 * whose successful D is below K; or w was a FUA write), applied in D order.
 */
#include "backing/faulty.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backing/file.h"
#include "util/log.h"

#define NEVER UINT64_MAX
#define MAX_RULES 64
#define MAX_PENDING_BYTES (2ull << 30) /* data kept for the model, at most */
#define ZERO_CHUNK (1u << 20)

enum rule_action { ACT_STALL, ACT_DELAY, ACT_FAIL, ACT_STALL_DONE, ACT_DELAY_DONE };

struct rule {
  uint64_t id;
  enum rule_action action;
  unsigned types; /* bit (1 << backing_op_type) */
  bool ranged;
  uint64_t off, len;
  uint64_t skip, count, matched;
  uint64_t ms;
  bool jitter; /* delay: uniform in [0, ms] */
  int err;
};

struct faulty_backing;

struct fop {
  struct backing_op iop; /* what the file backing sees */
  struct backing_op *outer;
  struct faulty_backing *fb;
  uint64_t id;
  uint64_t release_ns;   /* while held: when it is due (NEVER: stalled) */
  int fail;              /* an errno: done(-fail) (before issue: without reaching the file) */
  bool issued;           /* reached the file backing (event S) */
  bool done_rule;        /* a stall-done/delay-done rule holds its completion ... */
  uint64_t done_release; /* ... until then */
  bool completed;        /* held after the file backing completed it, with `result` */
  int result;
  bool frozen;           /* after a crash: held for ever */
  uint64_t sub_seq;      /* seq of its S event */
  struct fop *next;      /* the held list */
};

struct pw { /* a completed write not folded into the base yet */
  uint64_t done_seq;
  enum backing_op_type type;
  bool fua;
  uint64_t off, len;
  void *data; /* WRITE: a copy of what was written; TRIM/WRITE_ZEROES: NULL (zeroes) */
  struct pw *next;
};

struct faulty_backing {
  struct backing base;
  struct backing *inner;
  char *path, *base_path, *ctl_path;
  int base_fd;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* CLOCK_MONOTONIC: held list changes, stop */
  uint64_t next_id;
  struct rule rules[MAX_RULES];
  size_t nrules;
  uint64_t next_rule_id;
  struct fop *held;
  uint64_t seq; /* events so far */
  bool recording;
  uint64_t rec_start, durable_at_rec;
  struct faulty_event *ev;
  size_t nev, evcap;
  struct pw *pw_head, *pw_tail;
  uint64_t npw, pw_bytes;
  uint64_t durable_seq; /* 0: none (no write has a D seq below 0) */
  bool crashed;
  bool model_broken; /* a write could not be kept: image/crash refuse */
  uint64_t ops, syncs, syncs_ok;
  unsigned rand_state; /* for delay jitter */
  bool stopping;
  pthread_t pump, ctl;
  bool pump_started, ctl_started;
  int listen_fd, stop_fd;
};

static const struct backing_vtable faulty_vtable;

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *type_name(enum backing_op_type t)
{
  switch (t) {
  case BACKING_OP_READ: return "read";
  case BACKING_OP_WRITE: return "write";
  case BACKING_OP_FLUSH: return "flush";
  case BACKING_OP_TRIM: return "trim";
  case BACKING_OP_WRITE_ZEROES: return "zero";
  case BACKING_OP_BLOCK_STATUS: return "status";
  case BACKING_OP_CACHE: return "cache";
  }
  return "?";
}

/* READs, BLOCK_STATUS and CACHE change nothing and are not logged. */
static bool is_logged(enum backing_op_type t)
{
  return t == BACKING_OP_WRITE || t == BACKING_OP_TRIM || t == BACKING_OP_WRITE_ZEROES ||
         t == BACKING_OP_FLUSH;
}

static bool is_mutating(enum backing_op_type t)
{
  return t == BACKING_OP_WRITE || t == BACKING_OP_TRIM || t == BACKING_OP_WRITE_ZEROES;
}

/* ---- small file helpers ---- */

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
  while (len > 0) {
    ssize_t n = pwrite(fd, buf, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -errno;
    }
    if (n == 0) {
      return -ENOSPC;
    }
    buf = (const char *)buf + n;
    len -= (size_t)n;
    off += (uint64_t)n;
  }
  return 0;
}

static int zero_range(int fd, uint64_t off, uint64_t len)
{
  void *zero;
  int rc = 0;

  if (len == 0 ||
      fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0) {
    return 0;
  }
  zero = calloc(1, ZERO_CHUNK);
  if (zero == NULL) {
    return -ENOMEM;
  }
  while (len > 0 && rc == 0) {
    size_t n = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;
    rc = pwrite_all(fd, zero, n, off);
    off += n;
    len -= n;
  }
  free(zero);
  return rc;
}

/* Copies src to dst (truncated to src's size first), keeping holes. */
static int copy_sparse(int src, int dst)
{
  struct stat st;
  off_t pos = 0;
  char *buf;
  int rc = 0;

  if (fstat(src, &st) < 0) {
    return -errno;
  }
  if (ftruncate(dst, 0) < 0 || ftruncate(dst, st.st_size) < 0) {
    return -errno;
  }
  buf = malloc(ZERO_CHUNK);
  if (buf == NULL) {
    return -ENOMEM;
  }
  while (pos < st.st_size && rc == 0) {
    off_t data = lseek(src, pos, SEEK_DATA);
    off_t hole;
    if (data < 0 && errno == ENXIO) {
      break; /* only a hole is left */
    }
    if (data < 0) {
      data = pos; /* no SEEK_DATA here: copy everything */
      hole = st.st_size;
    } else {
      hole = lseek(src, data, SEEK_HOLE);
    }
    if (hole < 0) {
      hole = st.st_size;
    }
    for (off_t p = data; p < hole && rc == 0;) {
      size_t want = (size_t)(hole - p) < ZERO_CHUNK ? (size_t)(hole - p) : ZERO_CHUNK;
      ssize_t n = pread(src, buf, want, p);
      if (n < 0) {
        rc = errno == EINTR ? 0 : -errno;
        continue;
      }
      if (n == 0) {
        break;
      }
      rc = pwrite_all(dst, buf, (size_t)n, (uint64_t)p);
      p += n;
    }
    pos = hole;
  }
  free(buf);
  return rc;
}

static int pw_apply(int fd, const struct pw *w)
{
  return w->data != NULL ? pwrite_all(fd, w->data, (size_t)w->len, w->off)
                         : zero_range(fd, w->off, w->len);
}

/* ---- the event log and the model (under fb->lock) ---- */

static uint64_t log_event(struct faulty_backing *fb, char kind, enum backing_op_type type,
                          uint64_t id, uint32_t flags, uint64_t off, uint64_t len, int result,
                          uint64_t aux)
{
  uint64_t seq = fb->seq++;

  if (fb->recording) {
    if (fb->nev == fb->evcap) {
      size_t cap = fb->evcap ? fb->evcap * 2 : 1024;
      struct faulty_event *ev = realloc(fb->ev, cap * sizeof *ev);
      if (ev == NULL) {
        log_error("faulty: out of memory for the event log; the model is void");
        fb->model_broken = true;
        return seq;
      }
      fb->ev = ev;
      fb->evcap = cap;
    }
    fb->ev[fb->nev++] = (struct faulty_event){
      .seq = seq, .t_ns = now_ns(), .kind = kind, .type = type, .id = id, .flags = flags,
      .offset = off, .length = len, .result = result, .aux = aux,
    };
  }
  return seq;
}

static bool pw_durable_now(const struct faulty_backing *fb, const struct pw *w)
{
  return w->fua || w->done_seq < fb->durable_seq;
}

/* Folds the durable prefix of the pending list into the base (not while recording). */
static void fold(struct faulty_backing *fb)
{
  while (!fb->recording && fb->pw_head != NULL && pw_durable_now(fb, fb->pw_head)) {
    struct pw *w = fb->pw_head;
    int rc = pw_apply(fb->base_fd, w);
    if (rc < 0) {
      log_error("faulty: cannot update %s: %s; the model is void", fb->base_path, strerror(-rc));
      fb->model_broken = true;
    }
    fb->pw_head = w->next;
    if (fb->pw_head == NULL) {
      fb->pw_tail = NULL;
    }
    fb->npw--;
    fb->pw_bytes -= w->data != NULL ? w->len : 0;
    free(w->data);
    free(w);
  }
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
  return now_ns() + ms * 1000000ull;
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
    uint64_t seq = log_event(fb, FAULTY_EV_DONE, type, f->id, iop->flags, iop->offset,
                             iop->length, result,
                             type == BACKING_OP_FLUSH && f->issued ? f->sub_seq : 0);
    if (result == 0 && f->issued && is_mutating(type) && iop->length > 0) {
      struct pw *w = calloc(1, sizeof *w);
      if (w != NULL && type == BACKING_OP_WRITE) {
        if (fb->pw_bytes + iop->length > MAX_PENDING_BYTES ||
            (w->data = malloc((size_t)iop->length)) == NULL) {
          free(w);
          w = NULL;
        } else {
          memcpy(w->data, iop->buf, (size_t)iop->length);
          fb->pw_bytes += iop->length;
        }
      }
      if (w == NULL) {
        log_error("faulty: cannot keep a completed write for the model; the model is void");
        fb->model_broken = true;
      } else {
        w->done_seq = seq;
        w->type = type;
        w->fua = (iop->flags & BACKING_FLAG_FUA) != 0;
        w->off = iop->offset;
        w->len = iop->length;
        if (fb->pw_tail != NULL) {
          fb->pw_tail->next = w;
        } else {
          fb->pw_head = w;
        }
        fb->pw_tail = w;
        fb->npw++;
        fold(fb);
      }
    }
    /* under --sync none the file backing acknowledges a FLUSH without syncing */
    if (type == BACKING_OP_FLUSH && result == 0 && f->issued &&
        fb->base.opts.sync != SYNC_NONE) {
      fb->syncs_ok++;
      if (f->sub_seq > fb->durable_seq) {
        fb->durable_seq = f->sub_seq;
      }
      fold(fb);
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
    f->sub_seq = log_event(fb, FAULTY_EV_SUBMIT, f->iop.type, f->id, f->iop.flags,
                           f->iop.offset, f->iop.length, 0, 0);
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
  f->iop.offset = op->offset;
  f->iop.length = op->length;
  f->iop.buf = op->buf;
  f->iop.extent_max = op->extent_max;
  f->iop.engine = op->engine; /* a loop's ring engine: from other threads it falls back */
  f->iop.nonblocking = op->nonblocking;
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
    uint64_t now = now_ns(), earliest = NEVER;
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

/* ---- the model's images (under fb->lock) ---- */

/* m(k): the largest S seq of a FLUSH whose successful D is among the first k events. */
static uint64_t durable_mark_at(const struct faulty_backing *fb, uint64_t k)
{
  uint64_t m = fb->durable_at_rec;

  for (size_t i = 0; i < fb->nev && fb->ev[i].seq < k; i++) {
    const struct faulty_event *ev = &fb->ev[i];
    if (ev->kind == FAULTY_EV_DONE && ev->type == BACKING_OP_FLUSH && ev->result == 0 &&
        ev->aux > m) {
      m = ev->aux;
    }
  }
  return m;
}

static int image_at_locked(struct faulty_backing *fb, uint64_t k, const char *path)
{
  uint64_t m;
  int fd, rc;

  if (fb->model_broken) {
    return -EIO;
  }
  if (!fb->recording || k < fb->rec_start || k > fb->seq) {
    return -EINVAL;
  }
  m = durable_mark_at(fb, k);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return -errno;
  }
  rc = copy_sparse(fb->base_fd, fd);
  for (const struct pw *w = fb->pw_head; w != NULL && rc == 0; w = w->next) {
    if (w->done_seq < k && (w->fua || w->done_seq < m)) {
      rc = pw_apply(fd, w);
    }
  }
  if (close(fd) < 0 && rc == 0) {
    rc = -errno;
  }
  return rc;
}

int faulty_image_at(struct backing *b, uint64_t k, const char *path)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  int rc;

  pthread_mutex_lock(&fb->lock);
  rc = image_at_locked(fb, k, path);
  pthread_mutex_unlock(&fb->lock);
  return rc;
}

/* Power loss now: freeze, bring the base up to the durable state, put it in the image's
 * place. Each completed write that is not durable survives with probability keep/100 (a
 * disk may have written any subset of what it was not asked to make durable). Under the
 * lock. */
static int crash_locked(struct faulty_backing *fb, unsigned keep, unsigned seed)
{
  uint64_t kept = 0, dropped = 0;
  int rc = 0;

  if (fb->model_broken) {
    return -EIO;
  }
  fb->crashed = true;
  for (const struct pw *w = fb->pw_head; w != NULL && rc == 0; w = w->next) {
    if (pw_durable_now(fb, w)) {
      rc = pw_apply(fb->base_fd, w);
    } else if (keep > 0 && (unsigned)rand_r(&seed) % 100 < keep) {
      rc = pw_apply(fb->base_fd, w);
      kept++;
    } else {
      dropped++;
    }
  }
  if (rc == 0 && rename(fb->base_path, fb->path) < 0) {
    rc = -errno;
  }
  if (rc == 0) {
    log_warn("faulty: simulated power loss: %s now holds what was durable (%" PRIu64
             " events, durable up to seq %" PRIu64 "); of the other completed writes %" PRIu64
             " kept, %" PRIu64 " dropped",
             fb->path, fb->seq, fb->durable_seq, kept, dropped);
  }
  return rc;
}

uint64_t faulty_mark(struct backing *b, uint64_t value)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  uint64_t seq;

  pthread_mutex_lock(&fb->lock);
  seq = log_event(fb, FAULTY_EV_MARK, BACKING_OP_READ, 0, 0, 0, 0, 0, value);
  pthread_mutex_unlock(&fb->lock);
  return seq;
}

int faulty_events(struct backing *b, struct faulty_event **out, size_t *count)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  int rc = 0;

  pthread_mutex_lock(&fb->lock);
  *count = fb->nev;
  *out = malloc((fb->nev ? fb->nev : 1) * sizeof **out);
  if (*out == NULL) {
    rc = -ENOMEM;
  } else if (fb->nev > 0) {
    memcpy(*out, fb->ev, fb->nev * sizeof **out);
  }
  pthread_mutex_unlock(&fb->lock);
  return rc;
}

bool backing_is_faulty(const struct backing *b)
{
  return b != NULL && b->vt == &faulty_vtable;
}

/* ---- control commands ---- */

struct sbuf {
  char *s;
  size_t len, cap;
  bool oom;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *sb, const char *fmt,
                                                             ...)
{
  va_list ap;
  int n;

  if (sb->oom) {
    return;
  }
  for (;;) {
    size_t room = sb->cap - sb->len;
    va_start(ap, fmt);
    n = vsnprintf(sb->s != NULL ? sb->s + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      sb->oom = true;
      return;
    }
    if ((size_t)n < room) {
      sb->len += (size_t)n;
      return;
    }
    size_t cap = (sb->cap + (size_t)n + 1) * 2;
    char *s = realloc(sb->s, cap);
    if (s == NULL) {
      sb->oom = true;
      return;
    }
    sb->s = s;
    sb->cap = cap;
  }
}

static bool parse_u64(const char *text, uint64_t *out)
{
  char *end;

  if (text == NULL || *text == '\0' || *text == '-') {
    return false;
  }
  errno = 0;
  *out = strtoull(text, &end, 0);
  return errno == 0 && *end == '\0';
}

static int parse_errno(const char *text)
{
  static const struct { const char *name; int value; } names[] = {
    {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT},
    {"ENOMEM", ENOMEM}, {"EINVAL", EINVAL}, {"EPERM", EPERM}, {"ENOTSUP", ENOTSUP},
  };
  uint64_t v;

  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcmp(text, names[i].name) == 0) {
      return names[i].value;
    }
  }
  return parse_u64(text, &v) && v > 0 && v < 4096 ? (int)v : 0;
}

static unsigned parse_types(const char *text)
{
  unsigned mask = 0;
  char buf[128], *save = NULL;

  if (strlen(text) >= sizeof buf) {
    return 0;
  }
  strcpy(buf, text);
  for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(t, "any") == 0) {
      mask |= (1u << (BACKING_OP_CACHE + 1)) - 1;
    } else if (strcmp(t, "read") == 0) {
      mask |= 1u << BACKING_OP_READ;
    } else if (strcmp(t, "write") == 0) {
      mask |= 1u << BACKING_OP_WRITE;
    } else if (strcmp(t, "flush") == 0) {
      mask |= 1u << BACKING_OP_FLUSH;
    } else if (strcmp(t, "trim") == 0) {
      mask |= 1u << BACKING_OP_TRIM;
    } else if (strcmp(t, "zero") == 0) {
      mask |= 1u << BACKING_OP_WRITE_ZEROES;
    } else if (strcmp(t, "status") == 0) {
      mask |= 1u << BACKING_OP_BLOCK_STATUS;
    } else if (strcmp(t, "cache") == 0) {
      mask |= 1u << BACKING_OP_CACHE;
    } else {
      return 0;
    }
  }
  return mask;
}

static size_t count_stalled(const struct faulty_backing *fb)
{
  size_t n = 0;
  for (const struct fop *f = fb->held; f != NULL; f = f->next) {
    n += f->release_ns == NEVER && !f->frozen;
  }
  return n;
}

/* "rule ACTION TYPES [key=value...]" (argv[0] is "rule"). Under the lock. */
static void cmd_rule(struct faulty_backing *fb, int argc, char **argv, struct sbuf *out)
{
  struct rule r = {.err = EIO, .ms = 1000};

  if (argc < 3) {
    sb_printf(out, "err usage: rule stall|delay|fail|stall-done|delay-done TYPES [off=N] "
                   "[len=N] [skip=N] [count=N] [ms=N] [jitter=1] [err=NAME]");
    return;
  }
  if (strcmp(argv[1], "stall") == 0) {
    r.action = ACT_STALL;
  } else if (strcmp(argv[1], "delay") == 0) {
    r.action = ACT_DELAY;
  } else if (strcmp(argv[1], "fail") == 0) {
    r.action = ACT_FAIL;
  } else if (strcmp(argv[1], "stall-done") == 0) {
    r.action = ACT_STALL_DONE;
  } else if (strcmp(argv[1], "delay-done") == 0) {
    r.action = ACT_DELAY_DONE;
  } else {
    sb_printf(out, "err unknown action '%s'", argv[1]);
    return;
  }
  r.types = parse_types(argv[2]);
  if (r.types == 0) {
    sb_printf(out, "err bad operation types '%s'", argv[2]);
    return;
  }
  bool have_off = false, have_len = false;
  for (int i = 3; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    bool ok;
    if (eq == NULL) {
      sb_printf(out, "err expected key=value, got '%s'", argv[i]);
      return;
    }
    *eq++ = '\0';
    if (strcmp(argv[i], "off") == 0) {
      ok = parse_u64(eq, &r.off);
      have_off = true;
    } else if (strcmp(argv[i], "len") == 0) {
      ok = parse_u64(eq, &r.len) && r.len > 0;
      have_len = true;
    } else if (strcmp(argv[i], "skip") == 0) {
      ok = parse_u64(eq, &r.skip);
    } else if (strcmp(argv[i], "count") == 0) {
      ok = parse_u64(eq, &r.count);
    } else if (strcmp(argv[i], "ms") == 0) {
      ok = parse_u64(eq, &r.ms) && r.ms <= 3600000;
    } else if (strcmp(argv[i], "err") == 0) {
      r.err = parse_errno(eq);
      ok = r.err != 0;
    } else if (strcmp(argv[i], "jitter") == 0) {
      uint64_t v;
      ok = parse_u64(eq, &v) && v <= 1;
      r.jitter = v == 1;
    } else {
      sb_printf(out, "err unknown key '%s'", argv[i]);
      return;
    }
    if (!ok) {
      sb_printf(out, "err bad value for %s: '%s'", argv[i], eq);
      return;
    }
  }
  if (have_off || have_len) {
    r.ranged = true;
    if (!have_len) {
      r.len = UINT64_MAX - r.off;
    }
    if (r.len > UINT64_MAX - r.off) {
      r.len = UINT64_MAX - r.off;
    }
  }
  if (fb->nrules == MAX_RULES) {
    sb_printf(out, "err too many rules (clear them)");
    return;
  }
  r.id = ++fb->next_rule_id;
  fb->rules[fb->nrules++] = r;
  sb_printf(out, "ok %" PRIu64, r.id);
}

static void cmd_events(struct faulty_backing *fb, struct sbuf *out)
{
  sb_printf(out, "ok %zu", fb->nev);
  for (size_t i = 0; i < fb->nev; i++) {
    const struct faulty_event *ev = &fb->ev[i];
    sb_printf(out, "\n%" PRIu64 " %" PRIu64 " %c %" PRIu64 " %s %" PRIu32 " %" PRIu64
                   " %" PRIu64 " %d %" PRIu64,
              ev->seq, ev->t_ns, ev->kind, ev->id,
              ev->kind == FAULTY_EV_MARK ? "mark" : type_name(ev->type), ev->flags, ev->offset,
              ev->length, ev->result, ev->aux);
  }
}

/* Runs one command; sets *crashed when it was a successful `crash`. */
static char *command_run(struct faulty_backing *fb, const char *line, bool *crashed)
{
  struct sbuf out = {0};
  char *copy = strdup(line), *argv[16], *save = NULL;
  int argc = 0;

  *crashed = false;
  if (copy == NULL) {
    return NULL;
  }
  for (char *t = strtok_r(copy, " \t\r\n", &save); t != NULL && argc < 16;
       t = strtok_r(NULL, " \t\r\n", &save)) {
    argv[argc++] = t;
  }
  pthread_mutex_lock(&fb->lock);
  if (argc == 0) {
    sb_printf(&out, "err empty command");
  } else if (strcmp(argv[0], "rule") == 0) {
    cmd_rule(fb, argc, argv, &out);
  } else if (strcmp(argv[0], "clear") == 0) {
    fb->nrules = 0;
    sb_printf(&out, "ok");
  } else if (strcmp(argv[0], "stalled") == 0) {
    sb_printf(&out, "ok %zu", count_stalled(fb));
    for (const struct fop *f = fb->held; f != NULL; f = f->next) {
      if (f->release_ns == NEVER && !f->frozen) {
        sb_printf(&out, " %" PRIu64 ":%s:%" PRIu64 ":%" PRIu64 "%s", f->id,
                  type_name(f->iop.type), f->iop.offset, f->iop.length,
                  f->completed ? ":done" : "");
      }
    }
  } else if (strcmp(argv[0], "wait-stalled") == 0) {
    uint64_t n, ms = 10000;
    if (argc < 2 || !parse_u64(argv[1], &n) || (argc > 2 && !parse_u64(argv[2], &ms))) {
      sb_printf(&out, "err usage: wait-stalled N [MS]");
    } else {
      uint64_t deadline = now_ns() + ms * 1000000ull;
      while (count_stalled(fb) < n && !fb->stopping && now_ns() < deadline) {
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull),
                              .tv_nsec = (long)(deadline % 1000000000ull)};
        pthread_cond_timedwait(&fb->cond, &fb->lock, &ts);
      }
      size_t c = count_stalled(fb);
      sb_printf(&out, c >= n ? "ok %zu" : "err timeout %zu", c);
    }
  } else if (strcmp(argv[0], "release") == 0) {
    uint64_t id = 0, n = 0;
    bool all = argc >= 2 && strcmp(argv[1], "all") == 0;
    int err = 0;
    if (argc == 3 && strncmp(argv[2], "err=", 4) == 0) {
      err = parse_errno(argv[2] + 4);
    }
    if (argc < 2 || argc > 3 || (!all && !parse_u64(argv[1], &id)) || (argc == 3 && err == 0)) {
      sb_printf(&out, "err usage: release all|ID [err=NAME]");
    } else {
      for (struct fop *f = fb->held; f != NULL; f = f->next) {
        if (f->release_ns == NEVER && !f->frozen && (all || f->id == id)) {
          f->release_ns = 0;
          f->fail = err;
          n++;
        }
      }
      pthread_cond_broadcast(&fb->cond);
      sb_printf(&out, "ok %" PRIu64, n);
    }
  } else if (strcmp(argv[0], "record") == 0) {
    fb->recording = true;
    fb->nev = 0;
    fb->rec_start = fb->seq;
    fb->durable_at_rec = fb->durable_seq;
    sb_printf(&out, "ok %" PRIu64, fb->seq);
  } else if (strcmp(argv[0], "seq") == 0) {
    sb_printf(&out, "ok %" PRIu64, fb->seq);
  } else if (strcmp(argv[0], "mark") == 0) {
    uint64_t v;
    if (argc != 2 || !parse_u64(argv[1], &v)) {
      sb_printf(&out, "err usage: mark VALUE");
    } else {
      sb_printf(&out, "ok %" PRIu64,
                log_event(fb, FAULTY_EV_MARK, BACKING_OP_READ, 0, 0, 0, 0, 0, v));
    }
  } else if (strcmp(argv[0], "events") == 0) {
    cmd_events(fb, &out);
  } else if (strcmp(argv[0], "image") == 0) {
    uint64_t k;
    int rc;
    if (argc != 3 || !parse_u64(argv[1], &k)) {
      sb_printf(&out, "err usage: image K PATH");
    } else if ((rc = image_at_locked(fb, k, argv[2])) < 0) {
      sb_printf(&out, "err %s", rc == -EINVAL ? "K is outside the recorded events (record first)"
                                              : strerror(-rc));
    } else {
      sb_printf(&out, "ok");
    }
  } else if (strcmp(argv[0], "crash") == 0) {
    uint64_t keep = 0, seed = 1;
    bool ok = argc <= 3;
    for (int i = 1; i < argc && ok; i++) {
      if (strncmp(argv[i], "keep=", 5) == 0) {
        ok = parse_u64(argv[i] + 5, &keep) && keep <= 100;
      } else if (strncmp(argv[i], "seed=", 5) == 0) {
        ok = parse_u64(argv[i] + 5, &seed);
      } else {
        ok = false;
      }
    }
    int rc = !ok         ? -EINVAL
             : fb->crashed ? -EALREADY
                           : crash_locked(fb, (unsigned)keep, (unsigned)seed);
    if (rc == -EINVAL) {
      sb_printf(&out, "err usage: crash [keep=PERCENT] [seed=N]");
    } else if (rc < 0) {
      sb_printf(&out, "err %s", strerror(-rc));
    } else {
      sb_printf(&out, "ok");
      *crashed = true;
    }
  } else if (strcmp(argv[0], "stats") == 0) {
    size_t held = 0;
    for (const struct fop *f = fb->held; f != NULL; f = f->next) {
      held++;
    }
    sb_printf(&out,
              "ok ops=%" PRIu64 " held=%zu syncs=%" PRIu64 " syncs_ok=%" PRIu64
              " pending=%" PRIu64 " pending_bytes=%" PRIu64,
              fb->ops, held, fb->syncs, fb->syncs_ok, fb->npw, fb->pw_bytes);
  } else {
    sb_printf(&out, "err unknown command '%s'", argv[0]);
  }
  pthread_mutex_unlock(&fb->lock);
  free(copy);
  if (out.oom) {
    free(out.s);
    return NULL;
  }
  return out.s;
}

char *faulty_command(struct backing *b, const char *line)
{
  bool crashed;
  return command_run((struct faulty_backing *)b, line, &crashed);
}

/* ---- the control socket ---- */

static int write_all(int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -errno;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Waits until fd is readable; false when stopping. */
static bool wait_readable(struct faulty_backing *fb, int fd)
{
  struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = fb->stop_fd, .events = POLLIN}};

  for (;;) {
    int n = poll(p, 2, -1);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return n > 0 && !(p[1].revents & POLLIN);
  }
}

static void serve_client(struct faulty_backing *fb, int c)
{
  char buf[8192];
  size_t have = 0;

  while (wait_readable(fb, c)) {
    ssize_t n = recv(c, buf + have, sizeof buf - 1 - have, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    have += (size_t)n;
    char *nl;
    while ((nl = memchr(buf, '\n', have)) != NULL) {
      bool crashed;
      *nl = '\0';
      char *reply = command_run(fb, buf, &crashed);
      const char *text = reply != NULL ? reply : "err out of memory";
      int rc = write_all(c, text, strlen(text));
      if (rc == 0) {
        rc = write_all(c, "\n", 1);
      }
      free(reply);
      if (crashed) {
        kill(getpid(), SIGKILL); /* power is off: no shutdown, no last sync */
        pause();
      }
      if (rc < 0) {
        return;
      }
      have -= (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, have);
    }
    if (have == sizeof buf - 1) {
      return; /* a line that long is not a command */
    }
  }
}

static void *ctl_main(void *arg)
{
  struct faulty_backing *fb = arg;

  while (wait_readable(fb, fb->listen_fd)) {
    int c = accept4(fb->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      continue;
    }
    serve_client(fb, c);
    close(c);
  }
  return NULL;
}

static int listen_control(const char *path)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  struct stat st;
  int fd;

  if (strlen(path) >= sizeof sa.sun_path) {
    return -ENAMETOOLONG;
  }
  strcpy(sa.sun_path, path);
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
    unlink(path);
  }
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -errno;
  }
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4) < 0) {
    int rc = -errno;
    close(fd);
    return rc;
  }
  return fd;
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
  while (fb->pw_head != NULL) {
    struct pw *w = fb->pw_head;
    fb->pw_head = w->next;
    free(w->data);
    free(w);
  }
  free(fb->ev);
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
  pthread_condattr_t ca;
  int src, rc;

  struct stat st;

  if (ctl == NULL || ctl[0] == '\0') {
    log_error("faulty: the fault-injecting backing is for tests only; set "
              "DISKGATE_TEST_FAULTS to its control socket path to use it");
    return -ENOTSUP;
  }
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    log_error("faulty: %s: only regular files can be wrapped", path);
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
  /* The model's starting point: the image as it is now. */
  fb->base_fd = open(fb->base_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  src = open(path, O_RDONLY | O_CLOEXEC);
  rc = fb->base_fd < 0 || src < 0 ? -errno : copy_sparse(src, fb->base_fd);
  if (rc == 0) {
    if (fstat(src, &st) == 0 && fchmod(fb->base_fd, st.st_mode & 07777) < 0) {
      rc = -errno;
    }
  }
  if (src >= 0) {
    close(src);
  }
  if (rc < 0) {
    log_error("faulty: cannot copy %s to %s: %s", path, fb->base_path, strerror(-rc));
    faulty_free(fb);
    return rc;
  }
  fb->stop_fd = eventfd(0, EFD_CLOEXEC);
  fb->listen_fd = listen_control(ctl);
  if (fb->stop_fd < 0 || fb->listen_fd < 0) {
    rc = fb->stop_fd < 0 ? -errno : fb->listen_fd;
    log_error("faulty: cannot listen on %s: %s", ctl, strerror(-rc));
    if (fb->listen_fd < 0) {
      fb->listen_fd = -1;
    }
    faulty_free(fb);
    return rc == -ENOMEM ? rc : -EADDRINUSE;
  }
  fb->rand_state = (unsigned)getpid() ^ (unsigned)now_ns();
  pthread_mutex_init(&fb->lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&fb->cond, &ca);
  pthread_condattr_destroy(&ca);
  fb->pump_started = pthread_create(&fb->pump, NULL, pump_main, fb) == 0;
  fb->ctl_started = fb->pump_started && pthread_create(&fb->ctl, NULL, ctl_main, fb) == 0;
  if (!fb->ctl_started) {
    faulty_close(&fb->base);
    return -ENOMEM;
  }
  log_warn("faulty: serving %s through the fault-injecting test backing (control %s)", path,
           ctl);
  *out = &fb->base;
  return 0;
}
