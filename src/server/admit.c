/* admit.c: see admit.h. */
#include "server/admit.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "util/log.h"

#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)
#define ADMIT_QUIET_TEXT TEXT(ADMIT_QUIET_S)

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

/* Connections told to close (by the handshake deadline or to make room) whose threads have
 * not ended yet. Under s->lock. */
static unsigned conns_leaving(const struct server *s)
{
  unsigned n = 0;

  for (const struct conn *c = s->conns; c != NULL; c = c->next) {
    n += c->handshake_evicted != 0;
  }
  return n;
}

/* Closes the negotiating connection `c` to make room for the one from `peer`, at the limit
 * `limit` (s->max_handshakes or s->max_connections): `limit` connections are `what`, and
 * `c` is the `whom`. Its thread wakes, logs and ends. Logs the first closure of a spell.
 * Under s->lock. */
static void close_to_make_room(struct server *s, struct conn *c, const char *peer,
                               unsigned limit, const char *what, const char *whom)
{
  assert(c->handshaking && c->handshake_evicted == 0);
  c->handshake_evicted = 2;
  shutdown(c->transport.fd, SHUT_RDWR);
  if (s->room_closed == 0) {
    log_warn("%s: %u connection%s %s; closing the %s (%s) to make room (further such "
             "closures are counted, and logged once none has happened for %d s)", peer, limit,
             limit == 1 ? " is" : "s are", what, whom, c->peer, ADMIT_QUIET_S);
  }
  s->room_closed++;
  clock_gettime(CLOCK_MONOTONIC, &s->room_last);
}

int admit_make_room(struct server *s, const char *peer)
{
  struct timespec deadline;

  if (s->nhandshaking >= s->max_handshakes) {
    struct conn *oldest = oldest_negotiating(s);
    if (oldest != NULL) {
      close_to_make_room(s, oldest, peer, s->max_handshakes, "negotiating", "oldest");
    }
  }
  if (s->max_connections == 0) {
    return 0;
  }
  clock_gettime(CLOCK_REALTIME, &deadline); /* s->cond uses the default clock */
  deadline.tv_nsec += (long)ADMIT_WAIT_MS % 1000 * 1000000L;
  deadline.tv_sec += ADMIT_WAIT_MS / 1000 + deadline.tv_nsec / 1000000000L;
  deadline.tv_nsec %= 1000000000L;
  while (s->nconns >= s->max_connections) {
    if (s->nconns - conns_leaving(s) >= s->max_connections) {
      struct conn *oldest = oldest_negotiating(s);
      if (oldest == NULL) {
        return -EUSERS; /* every connection that stays is past negotiation */
      }
      close_to_make_room(s, oldest, peer, s->max_connections, "open (--max-connections)",
                         "oldest still negotiating");
    }
    /* Signalled by each connection that ends (server.c). */
    if (pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT) {
      return s->nconns < s->max_connections ? 0 : -EUSERS;
    }
  }
  return 0;
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
  log_info("%lu connection%s still negotiating %s closed to make room %s", s->room_closed,
           s->room_closed == 1 ? "" : "s", s->room_closed == 1 ? "was" : "were", why);
  s->room_closed = 0;
}

void admit_tick(struct server *s)
{
  struct timespec now;

  pthread_mutex_lock(&s->lock);
  if (s->room_closed != 0) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - s->room_last.tv_sec >= ADMIT_QUIET_S) {
      spell_end(s, "(none in the last " ADMIT_QUIET_TEXT " s)");
    }
  }
  pthread_mutex_unlock(&s->lock);
}

void admit_finish(struct server *s)
{
  pthread_mutex_lock(&s->lock);
  if (s->room_closed != 0) {
    spell_end(s, "until the server stopped");
  }
  pthread_mutex_unlock(&s->lock);
}
