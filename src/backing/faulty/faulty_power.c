/* SPDX-License-Identifier: MIT */
/* faulty_power.c: the fault-injecting backing's event log and power-loss model; see
 * faulty.c for the model's definition (durable_seq, the pending writes, the image after a
 * power loss at event K) and faulty.h for the commands that use it (record, events, mark,
 * image, crash). Everything here on struct faulty_backing runs under fb->lock, except
 * faulty_model_start and faulty_model_free (no other thread yet, or any more). */
#include "backing/faulty/faulty_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fdio.h"
#include "util/log.h"

static bool is_mutating(enum backing_op_type t)
{
  return t == BACKING_OP_WRITE || t == BACKING_OP_TRIM || t == BACKING_OP_WRITE_ZEROES;
}

/* ---- small file helpers ---- */

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
    rc = fdio_pwrite_full(fd, zero, n, off);
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
      ssize_t n = fdio_pread_full(src, buf, want, (uint64_t)p);
      if (n < 0) {
        rc = (int)n;
        continue;
      }
      if (n == 0) {
        break;
      }
      rc = fdio_pwrite_full(dst, buf, (size_t)n, (uint64_t)p);
      p += n;
    }
    pos = hole;
  }
  free(buf);
  return rc;
}

static int pw_apply(int fd, const struct pw *w)
{
  return w->data != NULL ? fdio_pwrite_full(fd, w->data, (size_t)w->len, w->off)
                         : zero_range(fd, w->off, w->len);
}

/* ---- the event log and the model (under fb->lock) ---- */

uint64_t faulty_log_event_locked(struct faulty_backing *fb, char kind,
                                 enum backing_op_type type, uint64_t id, uint32_t flags,
                                 uint64_t off, uint64_t len, int result, uint64_t aux)
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
      .seq = seq, .t_ns = faulty_now_ns(), .kind = kind, .type = type, .id = id, .flags = flags,
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
      char shown[LOG_SHOWN_MAX];
      log_error("faulty: cannot update %s: %s; the model is void",
                log_escape_str(shown, sizeof shown, fb->base_path), strerror(-rc));
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

void faulty_model_done_locked(struct faulty_backing *fb, const struct backing_op *iop,
                              uint64_t done_seq, uint64_t sub_seq, int result)
{
  enum backing_op_type type = iop->type;

  if (result == 0 && is_mutating(type) && iop->length > 0) {
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
      w->done_seq = done_seq;
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
  if (type == BACKING_OP_FLUSH && result == 0 && fb->base.opts.sync != SYNC_NONE) {
    fb->syncs_ok++;
    if (sub_seq > fb->durable_seq) {
      fb->durable_seq = sub_seq;
    }
    fold(fb);
  }
}

int faulty_model_start(struct faulty_backing *fb, const char *path)
{
  struct stat st;
  int src, rc;

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
    char shown[LOG_SHOWN_MAX], base_shown[LOG_SHOWN_MAX];
    log_error("faulty: cannot copy %s to %s: %s", log_escape_str(shown, sizeof shown, path),
              log_escape_str(base_shown, sizeof base_shown, fb->base_path), strerror(-rc));
  }
  return rc;
}

void faulty_model_free(struct faulty_backing *fb)
{
  while (fb->pw_head != NULL) {
    struct pw *w = fb->pw_head;
    fb->pw_head = w->next;
    free(w->data);
    free(w);
  }
  free(fb->ev);
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

int faulty_image_at_locked(struct faulty_backing *fb, uint64_t k, const char *path)
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
  rc = faulty_image_at_locked(fb, k, path);
  pthread_mutex_unlock(&fb->lock);
  return rc;
}

/* Power loss now: freeze, bring the base up to the durable state, put it in the image's
 * place. Each completed write that is not durable survives with probability keep/100 (a
 * disk may have written any subset of what it was not asked to make durable). Under the
 * lock. */
int faulty_crash_locked(struct faulty_backing *fb, unsigned keep, unsigned seed)
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
    char shown[LOG_SHOWN_MAX];
    log_warn("faulty: simulated power loss: %s now holds what was durable (%" PRIu64
             " events, durable up to seq %" PRIu64 "); of the other completed writes %" PRIu64
             " kept, %" PRIu64 " dropped",
             log_escape_str(shown, sizeof shown, fb->path), fb->seq, fb->durable_seq, kept,
             dropped);
  }
  return rc;
}

uint64_t faulty_mark(struct backing *b, uint64_t value)
{
  struct faulty_backing *fb = (struct faulty_backing *)b;
  uint64_t seq;

  pthread_mutex_lock(&fb->lock);
  seq = faulty_log_event_locked(fb, FAULTY_EV_MARK, BACKING_OP_READ, 0, 0, 0, 0, 0, value);
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
