/* SPDX-License-Identifier: MIT */
/* faulty_impl.h: the fault-injecting backing's state, shared by its files. Internal to
 * src/backing.
 *   faulty.c        the vtable: submit (rules, the held list, the pump thread), open, close
 *   faulty_power.c  the event log and the power-loss model (pending writes, the base image,
 *                   `image K`, `crash`)
 *   faulty_ctl.c    the control protocol (faulty_command) and its Unix socket thread
 * Locking: every field of struct faulty_backing below `lock` is guarded by it; functions
 * named *_locked expect the caller to hold it. */
#ifndef DISKGATE_BACKING_FAULTY_IMPL_H
#define DISKGATE_BACKING_FAULTY_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/backing.h"
#include "backing/faulty/faulty.h"


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

/* ---- faulty.c ---- */

/* CLOCK_MONOTONIC now, in ns (the clock of the event log and of rule delays). Any thread. */
uint64_t faulty_now_ns(void);

/* ---- faulty_power.c: the event log and the power-loss model ---- */

/* Logs one event (kind S/D/M) and returns its seq; the seq advances whether or not the log
 * is recording. Out of memory for the log marks the model void. Under fb->lock. */
uint64_t faulty_log_event_locked(struct faulty_backing *fb, char kind,
                                 enum backing_op_type type, uint64_t id, uint32_t flags,
                                 uint64_t off, uint64_t len, int result, uint64_t aux);

/* The model's part of an issued operation's completion (its D event has seq done_seq; its
 * S event had sub_seq): a successful WRITE/TRIM/WRITE_ZEROES joins the pending writes (a
 * WRITE with a copy of its data), a successful FLUSH (unless --sync none) moves the durable
 * mark to sub_seq; the durable prefix is then folded into the base unless recording. Under
 * fb->lock. */
void faulty_model_done_locked(struct faulty_backing *fb, const struct backing_op *iop,
                              uint64_t done_seq, uint64_t sub_seq, int result);

/* Starts the model: copies `path` (holes kept, mode kept) to fb->base_path, which it opens
 * as fb->base_fd (left open on failure, for faulty_free to close). Returns 0 or -errno, and
 * logs the failure. Main thread, before the threads start. */
int faulty_model_start(struct faulty_backing *fb, const char *path);

/* Frees the pending writes and the event log (not the base file). No other thread may run. */
void faulty_model_free(struct faulty_backing *fb);

/* Writes the image a power loss after the first k events would leave to `path`. Returns 0,
 * -EIO (model void), -EINVAL (k outside the recording) or -errno. Under fb->lock. */
int faulty_image_at_locked(struct faulty_backing *fb, uint64_t k, const char *path);

/* Simulated power loss now: fb->crashed, the base brought to the durable state (plus each
 * other completed write with probability keep/100, drawn with `seed`) and renamed over the
 * image. Returns 0, -EIO (model void) or -errno. Under fb->lock. */
int faulty_crash_locked(struct faulty_backing *fb, unsigned keep, unsigned seed);

/* ---- faulty_ctl.c: the control protocol ---- */

/* Makes the listening Unix socket at `path` (an old socket file there is replaced).
 * Returns the fd or -errno (-ENAMETOOLONG for a path too long for sun_path). */
int faulty_ctl_listen(const char *path);

/* The control thread: serves fb->listen_fd, one client at a time, until fb->stop_fd is
 * readable. After a successful `crash` it kills the process with SIGKILL. */
void *faulty_ctl_main(void *arg);

#endif
