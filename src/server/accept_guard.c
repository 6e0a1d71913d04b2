/* SPDX-License-Identifier: MIT */
/* accept_guard.c: see accept_guard.h. */
#include "server/accept_guard.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/log_spell.h"

#define QUIET_TEXT LOG_TEXT_OF(ACCEPT_GUARD_QUIET_S)

static int reserve_open(void)
{
  return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void accept_guard_init(struct accept_guard *g)
{
  memset(g, 0, sizeof *g);
  g->reserve = reserve_open();
}

/* What to raise for each kind of failure: the only advice a log line can give. */
static const char *hint_of(int err)
{
  switch (err) {
  case EMFILE:
    return "this process's limit on open files is reached (diskgate raised its soft limit to "
           "the hard limit at start): raise the hard limit (ulimit -Hn, LimitNOFILE= in a "
           "systemd unit)";
  case ENFILE:
    return "the system's table of open files is full: raise fs.file-max (sysctl)";
  case EAGAIN:
    return "no thread could be started for a connection: raise the limit on processes "
           "(ulimit -u, LimitNPROC=, kernel.threads-max)";
  case EUSERS:
    return "every open connection is past negotiation: wait for one to end, or raise "
           "--max-connections";
  case ETIMEDOUT:
    return "the connections leaving did not end within 1 s: clients that do not read "
           "their last replies, or a handshake stuck opening a backing that does not answer";
  default:
    return "out of memory for a new connection";
  }
}

/* True for the refusals at the limit the operator set (admit.h), not the system's. */
static bool at_limit(int err)
{
  return err == EUSERS || err == ETIMEDOUT;
}

/* What stops the accepts: the limit the operator set, or the system's error. */
static const char *what_of(int err)
{
  return at_limit(err) ? "at the connection limit (--max-connections)" : strerror(err);
}

/* A failure of kind `err` now: the start of a spell, or more of the current one. */
static void spell_note(struct accept_guard *g, int err)
{
  if (log_spell_note(&g->spell)) {
    log_warn("accept: %s; new connections are %s until it passes (%s)", what_of(err),
             at_limit(err) ? "closed before the greeting" : "closed at once",
             hint_of(err));
    g->err = err;
    g->refused = 0;
  }
}

/* Logs the end of the spell: `stopped`, the server stopping, or ACCEPT_GUARD_QUIET_S
 * seconds without a failure (a limit the operator set may still be reached then). */
static void spell_end(struct accept_guard *g, bool stopped)
{
  if (at_limit(g->err)) {
    log_info("accept: %lu connection%s refused at the connection limit (--max-connections) "
             "%s", g->refused, g->refused == 1 ? " was" : "s were",
             stopped ? "before the server stopped" : "(none in the last " QUIET_TEXT " s)");
  } else {
    log_info("accept: %s %s; %lu connection%s closed at once while it lasted", strerror(g->err),
             stopped ? "until the server stopped" : "no longer", g->refused,
             g->refused == 1 ? " was" : "s were");
  }
  g->err = 0;
  (void)log_spell_end(&g->spell);
}

void accept_guard_refuse(struct accept_guard *g, int lfd, int err)
{
  int fd;

  assert(err == EMFILE || err == ENFILE);
  spell_note(g, err);
  if (g->reserve < 0) { /* accept_guard_tick, earlier in this pass, could not take it again */
    usleep(100000);
    return;
  }
  close(g->reserve);
  g->reserve = -1;
  fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    g->refused++;
  } else {
    log_msg(LOG_DEBUG, "accept with the reserve descriptor: %s", strerror(errno));
  }
  g->reserve = reserve_open();
}

void accept_guard_start_failed(struct accept_guard *g, int rc)
{
  if (rc == -EAGAIN || rc == -ENOMEM || at_limit(-rc)) {
    spell_note(g, -rc);
    g->refused++;
  }
}

void accept_guard_tick(struct accept_guard *g)
{
  if (g->reserve < 0) {
    g->reserve = reserve_open();
  }
  if (log_spell_quiet(&g->spell, ACCEPT_GUARD_QUIET_S)) {
    spell_end(g, false);
  }
}

void accept_guard_finish(struct accept_guard *g)
{
  if (g->err != 0) {
    spell_end(g, true);
  }
  if (g->reserve >= 0) {
    close(g->reserve);
    g->reserve = -1;
  }
}
