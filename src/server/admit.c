/* SPDX-License-Identifier: MIT */
/* admit.c: see admit.h. */
#include "server/admit.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "util/log.h"
#include "util/log_spell.h"
#include "util/mono_cond.h"

#define ADMIT_QUIET_TEXT LOG_TEXT_OF(ADMIT_QUIET_S)

/* The connection that has been negotiating longest and is not already told to close, or
 * NULL. Under s->lock. */
static struct conn *oldest_negotiating(const struct server *s)
{
  struct conn *oldest = NULL;

  for (struct conn *o = s->conns; o != NULL; o = o->next) {
    if (o->handshaking && o->handshake_evicted == 0) {
      oldest = o; /* the list is newest first: the last match is the oldest */
    }
  }
  return oldest;
}

/* Connections that will end without anything more from their clients, whose threads have
 * not ended yet: told to close (by the handshake deadline or to make room), and, with
 * `ending`, those past their last request (admit_ending; one whose client does not read
 * its replies may take long). Under s->lock. */
static unsigned conns_leaving(const struct server *s, bool ending)
{
  unsigned n = 0;

  for (const struct conn *c = s->conns; c != NULL; c = c->next) {
    n += c->handshake_evicted != 0 || (ending && c->ending);
  }
  return n;
}

/* Closes the negotiating connection `c` to make room for the one from `peer`, at the limit
 * `limit` (s->max_handshakes or s->max_connections): `limit` connections are `what`, and
 * `c` is the `whom`. Its thread wakes and ends without a line of its own: the first closure
 * of a spell is logged here, and the count when the spell is over. Under s->lock. */
static void close_to_make_room(struct server *s, struct conn *c, const char *peer,
                               unsigned limit, const char *what, const char *whom)
{
  assert(c->handshaking && c->handshake_evicted == 0);
  c->handshake_evicted = 2;
  shutdown(c->transport.fd, SHUT_RDWR);
  if (log_spell_note(&s->room_spell)) {
    log_warn("%s: %u connection%s %s; closing the %s (%s) to make room (further such "
             "closures are counted, and logged once none has happened for %d s)", peer, limit,
             limit == 1 ? " is" : "s are", what, whom, c->peer, ADMIT_QUIET_S);
  }
}

int admit_make_room(struct server *s, const char *peer)
{
  struct timespec deadline, grace;
  bool late = false; /* past the grace: connections past their last request no longer
                        count as leaving, so a negotiating one is closed instead */

  if (s->nhandshaking >= s->max_handshakes) {
    struct conn *oldest = oldest_negotiating(s);
    if (oldest != NULL) {
      close_to_make_room(s, oldest, peer, s->max_handshakes, "negotiating", "oldest");
    }
  }
  if (s->max_connections == 0) {
    return 0;
  }
  mono_cond_deadline(&deadline, ADMIT_WAIT_MS);
  mono_cond_deadline(&grace, ADMIT_GRACE_MS);
  while (s->nconns >= s->max_connections) {
    if (s->nconns - conns_leaving(s, !late) >= s->max_connections) {
      struct conn *oldest = oldest_negotiating(s);
      if (oldest != NULL) {
        close_to_make_room(s, oldest, peer, s->max_connections, "open (--max-connections)",
                           "oldest still negotiating");
      } else if (late && conns_leaving(s, true) == 0) {
        return -EUSERS; /* every connection is past negotiation, and none is leaving */
      }
      /* Otherwise one may be about to leave (its client sent NBD_CMD_DISC and connected
       * again at once, ahead of the server's reading it): admit_ending and each end wake
       * this. */
    }
    if (pthread_cond_timedwait(&s->cond, &s->lock, late ? &deadline : &grace) == ETIMEDOUT &&
        s->nconns >= s->max_connections) {
      if (late) {
        return conns_leaving(s, true) != 0 ? -ETIMEDOUT : -EUSERS;
      }
      late = true;
    }
  }
  return 0;
}

void admit_ending(struct conn *c)
{
  struct server *s = c->server;

  pthread_mutex_lock(&s->lock);
  c->ending = true;
  pthread_cond_broadcast(&s->cond); /* admit_make_room may wait for it now */
  pthread_mutex_unlock(&s->lock);
}

int admit_commit(struct conn *c)
{
  struct server *s = c->server;
  int rc = 0;

  pthread_mutex_lock(&s->lock);
  if (c->handshake_evicted != 0) {
    rc = -ECONNABORTED;
  } else if (c->handshaking) {
    c->handshaking = false;
    s->nhandshaking--;
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* Logs the end of the current spell of closures, `why` it ended. Under s->lock. */
static void spell_end(struct server *s, const char *why)
{
  unsigned long n = log_spell_end(&s->room_spell);

  log_info("%lu connection%s still negotiating %s closed to make room %s", n,
           n == 1 ? "" : "s", n == 1 ? "was" : "were", why);
}

void admit_tick(struct server *s)
{
  pthread_mutex_lock(&s->lock);
  if (log_spell_quiet(&s->room_spell, ADMIT_QUIET_S)) {
    spell_end(s, "(none in the last " ADMIT_QUIET_TEXT " s)");
  }
  pthread_mutex_unlock(&s->lock);
}

void admit_finish(struct server *s)
{
  pthread_mutex_lock(&s->lock);
  if (s->room_spell.count != 0) {
    spell_end(s, "before the server stopped");
  }
  pthread_mutex_unlock(&s->lock);
}
