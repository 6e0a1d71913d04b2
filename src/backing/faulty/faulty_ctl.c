/* SPDX-License-Identifier: MIT */
/* faulty_ctl.c: the fault-injecting backing's control protocol (see faulty.h for the
 * commands and their replies): command parsing and execution (faulty_command, under
 * fb->lock), and the control thread that serves the Unix socket at $DISKGATE_TEST_FAULTS. */
#include "backing/faulty/faulty_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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

/* `stalled`: the count and list of operations held until released. fb->lock held. */
static void cmd_stalled(struct faulty_backing *fb, struct sbuf *out)
{
  sb_printf(out, "ok %zu", count_stalled(fb));
  for (const struct fop *f = fb->held; f != NULL; f = f->next) {
    if (f->release_ns == NEVER && !f->frozen) {
      sb_printf(out, " %" PRIu64 ":%s:%" PRIu64 ":%" PRIu64 "%s", f->id,
                type_name(f->iop.type), f->iop.offset, f->iop.length,
                f->completed ? ":done" : "");
    }
  }
}

/* `wait-stalled N [MS]`: waits (fb->lock released meanwhile) until N operations are held,
 * at most MS milliseconds (default 10000). fb->lock held. */
static void cmd_wait_stalled(struct faulty_backing *fb, int argc, char **argv,
                             struct sbuf *out)
{
  uint64_t n, ms = 10000;

  if (argc < 2 || !parse_u64(argv[1], &n) || (argc > 2 && !parse_u64(argv[2], &ms))) {
    sb_printf(out, "err usage: wait-stalled N [MS]");
    return;
  }
  uint64_t deadline = faulty_now_ns() + ms * 1000000ull;
  while (count_stalled(fb) < n && !fb->stopping && faulty_now_ns() < deadline) {
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000ull),
                          .tv_nsec = (long)(deadline % 1000000000ull)};
    pthread_cond_timedwait(&fb->cond, &fb->lock, &ts);
  }
  size_t c = count_stalled(fb);
  sb_printf(out, c >= n ? "ok %zu" : "err timeout %zu", c);
}

/* `release all|ID [err=NAME]`: lets held operations go on, or fail with NAME. fb->lock
 * held. */
static void cmd_release(struct faulty_backing *fb, int argc, char **argv, struct sbuf *out)
{
  uint64_t id = 0, n = 0;
  bool all = argc >= 2 && strcmp(argv[1], "all") == 0;
  int err = 0;

  if (argc == 3 && strncmp(argv[2], "err=", 4) == 0) {
    err = parse_errno(argv[2] + 4);
  }
  if (argc < 2 || argc > 3 || (!all && !parse_u64(argv[1], &id)) || (argc == 3 && err == 0)) {
    sb_printf(out, "err usage: release all|ID [err=NAME]");
    return;
  }
  for (struct fop *f = fb->held; f != NULL; f = f->next) {
    if (f->release_ns == NEVER && !f->frozen && (all || f->id == id)) {
      f->release_ns = 0;
      f->fail = err;
      n++;
    }
  }
  pthread_cond_broadcast(&fb->cond);
  sb_printf(out, "ok %" PRIu64, n);
}

/* `image K PATH`: writes the image a power loss after the first K recorded events would
 * leave. fb->lock held. */
static void cmd_image(struct faulty_backing *fb, int argc, char **argv, struct sbuf *out)
{
  uint64_t k;
  int rc;

  if (argc != 3 || !parse_u64(argv[1], &k)) {
    sb_printf(out, "err usage: image K PATH");
  } else if ((rc = faulty_image_at_locked(fb, k, argv[2])) < 0) {
    sb_printf(out, "err %s", rc == -EINVAL ? "K is outside the recorded events (record first)"
                                           : strerror(-rc));
  } else {
    sb_printf(out, "ok");
  }
}

/* `crash [keep=PERCENT] [seed=N]`: simulated power loss; *crashed set when it happened.
 * fb->lock held. */
static void cmd_crash(struct faulty_backing *fb, int argc, char **argv, struct sbuf *out,
                      bool *crashed)
{
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
                         : faulty_crash_locked(fb, (unsigned)keep, (unsigned)seed);
  if (rc == -EINVAL) {
    sb_printf(out, "err usage: crash [keep=PERCENT] [seed=N]");
  } else if (rc < 0) {
    sb_printf(out, "err %s", strerror(-rc));
  } else {
    sb_printf(out, "ok");
    *crashed = true;
  }
}

/* `stats`: operation, sync and pending-write counts. fb->lock held. */
static void cmd_stats(struct faulty_backing *fb, struct sbuf *out)
{
  size_t held = 0;

  for (const struct fop *f = fb->held; f != NULL; f = f->next) {
    held++;
  }
  sb_printf(out,
            "ok ops=%" PRIu64 " held=%zu syncs=%" PRIu64 " syncs_ok=%" PRIu64
            " pending=%" PRIu64 " pending_bytes=%" PRIu64,
            fb->ops, held, fb->syncs, fb->syncs_ok, fb->npw, fb->pw_bytes);
}

/* Runs one command (argv[0..argc), argc > 0) with fb->lock held, its answer into out. */
static void command_dispatch(struct faulty_backing *fb, int argc, char **argv,
                             struct sbuf *out, bool *crashed)
{
  uint64_t v;

  if (strcmp(argv[0], "rule") == 0) {
    cmd_rule(fb, argc, argv, out);
  } else if (strcmp(argv[0], "clear") == 0) {
    fb->nrules = 0;
    sb_printf(out, "ok");
  } else if (strcmp(argv[0], "stalled") == 0) {
    cmd_stalled(fb, out);
  } else if (strcmp(argv[0], "wait-stalled") == 0) {
    cmd_wait_stalled(fb, argc, argv, out);
  } else if (strcmp(argv[0], "release") == 0) {
    cmd_release(fb, argc, argv, out);
  } else if (strcmp(argv[0], "record") == 0) {
    fb->recording = true;
    fb->nev = 0;
    fb->rec_start = fb->seq;
    fb->durable_at_rec = fb->durable_seq;
    sb_printf(out, "ok %" PRIu64, fb->seq);
  } else if (strcmp(argv[0], "seq") == 0) {
    sb_printf(out, "ok %" PRIu64, fb->seq);
  } else if (strcmp(argv[0], "mark") == 0) {
    if (argc != 2 || !parse_u64(argv[1], &v)) {
      sb_printf(out, "err usage: mark VALUE");
    } else {
      sb_printf(out, "ok %" PRIu64,
                faulty_log_event_locked(fb, FAULTY_EV_MARK, BACKING_OP_READ, 0, 0, 0, 0, 0, v));
    }
  } else if (strcmp(argv[0], "events") == 0) {
    cmd_events(fb, out);
  } else if (strcmp(argv[0], "image") == 0) {
    cmd_image(fb, argc, argv, out);
  } else if (strcmp(argv[0], "crash") == 0) {
    cmd_crash(fb, argc, argv, out, crashed);
  } else if (strcmp(argv[0], "stats") == 0) {
    cmd_stats(fb, out);
  } else {
    sb_printf(out, "err unknown command '%s'", argv[0]);
  }
}

/* Runs one command line; sets *crashed when it was a successful `crash`. Returns the
 * answer (malloc'd), or NULL when memory ran out. */
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
  } else {
    command_dispatch(fb, argc, argv, &out, crashed);
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

void *faulty_ctl_main(void *arg)
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

int faulty_ctl_listen(const char *path)
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
