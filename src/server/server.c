/* SPDX-License-Identifier: MIT */
/* server.c: the connection list, one thread per connection, and draining on shutdown. */
#include "server/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/admit.h"
#include "server/conn.h"
#include "server/conn_loop.h"
#include "server/export_table.h"
#include "io/loop.h"
#include "server/tls.h"
#include "util/log.h"
#include "util/mono_cond.h"

int server_init(struct server *s)
{
  int rc;

  memset(s, 0, sizeof *s);
  s->handshake_timeout_s = 10;
  s->max_handshakes = 256;
  s->max_inflight = 128;
  atomic_init(&s->stopping, false);
  pthread_mutex_init(&s->lock, NULL);
  rc = mono_cond_init(&s->cond);
  if (rc < 0) {
    pthread_mutex_destroy(&s->lock);
  }
  return rc;
}

static void set_recv_timeout(int fd, unsigned seconds)
{
  struct timeval tv = {.tv_sec = seconds, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* At shutdown, before a TCP connection is closed: waits up to SERVER_SHUTDOWN_LINGER_MS
 * until the peer has acknowledged every byte sent (SIOCOUTQ 0). Requests that arrived
 * after the signal stay unread, and closing a TCP socket with unread data resets the
 * connection, which discards what is still in the send queue: replies the client would
 * then never get. A Unix socket's close leaves what was sent readable by the peer.
 * Connection thread, after its last reply was sent. */
static void conn_linger(int fd)
{
  int domain = AF_UNIX;
  socklen_t len = sizeof domain;

  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain == AF_UNIX) {
    return;
  }
  for (int ms = 0; ms < SERVER_SHUTDOWN_LINGER_MS; ms++) {
    int outq = 0;
    if (ioctl(fd, SIOCOUTQ, &outq) < 0 || outq == 0) {
      return;
    }
    usleep(1000);
  }
}

/* The end of a connection to a removed export (export_table.h): EOF after its last reply,
 * then what it sent that was not read is discarded, so that the close does not reset the
 * connection (a Unix socket's peer then reads ECONNRESET instead of EOF; a TCP reset drops
 * replies not acknowledged yet). Reading stopped with SHUT_RD: the peer can add nothing
 * over a Unix socket, and at most CONN_END_DISCARD_MAX bytes are read. Connection thread. */
#define CONN_END_DISCARD_MAX (64u << 20)
static void conn_end_removed(int fd)
{
  char sink[16384];
  size_t discarded = 0;
  ssize_t n;

  shutdown(fd, SHUT_WR);
  conn_linger(fd);
  while (discarded < CONN_END_DISCARD_MAX &&
         (n = recv(fd, sink, sizeof sink, MSG_DONTWAIT)) > 0) {
    discarded += (size_t)n;
  }
}

static void *conn_main(void *arg)
{
  struct conn *c = arg;
  struct server *s = c->server;
  int rc = handshake_run(c);

  pthread_mutex_lock(&s->lock);
  if (c->handshaking) { /* not when admit_commit has done it */
    s->nhandshaking--;
    c->handshaking = false;
  }
  if (rc == 0 && c->metrics_on) {
    c->metrics_export = c->export; /* counted from now on by scrapes (metrics.h) */
  }
  if (c->handshake_evicted != 0 && rc < 0) {
    rc = c->handshake_evicted == 1 ? -ETIMEDOUT : -ECONNABORTED;
  }
  pthread_mutex_unlock(&s->lock);
  if (rc == 0) {
    set_recv_timeout(c->transport.fd, 0); /* no idle timeout once negotiated */
    log_debug("%s: transmission on export '%s'", c->peer, c->export->log_name);
    if (s->nloops == 0 || transport_is_tls(&c->transport) ||
        conn_loop_serve(s->loops, s->nloops, c) < 0) {
      conn_transmission_run(c); /* the thread path: TLS, --engine threads, or no loop */
    }
    char counts[192];
    /* --verbose: each connection's end too, with its requests by kind ("flushes=0": the
     * client never asked for durability; docs/apple.md) */
    log_debug("%s: connection closed: %s", c->peer,
              txn_counts_format(&c->counts, counts, sizeof counts));
  } else if (rc == -ETIMEDOUT) {
    log_info("%s: handshake not finished within %u s; closing", c->peer,
             s->handshake_timeout_s);
  } else if (rc == -ECONNRESET && c->handshake_cut != NULL && !atomic_load(&s->stopping)) {
    /* the peer's close, not the server's shutdown (deadline, eviction and stop changed rc
     * above or set stopping): one line */
    log_info("%s: peer closed the connection in the middle of %s%s; closing", c->peer,
             c->handshake_cut[0] == '\0' ? "an option header" : "the data of ",
             c->handshake_cut);
  } else if (rc == -ECONNRESET) {
    log_debug("%s: peer closed during the handshake", c->peer);
  } else if (rc == -EBADMSG) { /* transport.h: only a TLS read returns it */
    log_warn("%s: TLS error during option haggling (%s); closing", c->peer,
             transport_read_error(&c->transport, rc));
  }
  /* With TLS, close_notify before the TCP close (spec "TLS support"; spec rule 33), unless a
   * reply could not be sent: the peer is gone. Both connection threads are done here. */
  transport_close(&c->transport, !c->send_failed);
  if (atomic_load(&s->stopping) && !c->send_failed) {
    conn_linger(c->transport.fd);
  } else if (c->export != NULL && atomic_load(&c->export->removing) && !c->send_failed) {
    conn_end_removed(c->transport.fd);
  }
  pthread_mutex_lock(&s->lock);
  if (c->prev != NULL) {
    c->prev->next = c->next;
  } else {
    s->conns = c->next;
  }
  if (c->next != NULL) {
    c->next->prev = c->prev;
  }
  s->nconns--;
  if (c->metrics_export != NULL) { /* its counts stay with the export: totals never drop */
    metrics_counts_fold(&c->metrics_export->metrics.closed, &c->metrics);
  }
  export_table_put_locked(s, c->export); /* a removal may be waiting for it */
  close(c->transport.fd); /* under the lock: drain never shuts down a reused fd */
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  txn_pool_destroy(&c->pool);
  free(c);
  return NULL;
}

int server_conn_start(struct server *s, int fd, const char *peer)
{
  struct conn *c;
  pthread_attr_t attr;
  pthread_t tid;
  int rc;

  pthread_mutex_lock(&s->lock);
  if (atomic_load(&s->stopping)) {
    pthread_mutex_unlock(&s->lock);
    close(fd);
    return -ESHUTDOWN;
  }
  rc = admit_make_room(s, peer);
  if (rc < 0) {
    pthread_mutex_unlock(&s->lock);
    close(fd);
    return rc; /* -EUSERS, -ETIMEDOUT: logged by the accept guard, once per spell */
  }
  pthread_mutex_unlock(&s->lock);
  c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(fd);
    return -ENOMEM;
  }
  transport_init(&c->transport, fd);
  c->server = s;
  c->metrics_on = s->metrics_on;
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  txn_pool_init(&c->pool);
  set_recv_timeout(fd, s->handshake_timeout_s);

  pthread_mutex_lock(&s->lock);
  c->next = s->conns;
  if (s->conns != NULL) {
    s->conns->prev = c;
  }
  s->conns = c;
  s->nconns++;
  s->nhandshaking++;
  c->handshaking = true;
  clock_gettime(CLOCK_MONOTONIC, &c->handshake_deadline);
  c->handshake_deadline.tv_sec += s->handshake_timeout_s;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  rc = pthread_create(&tid, &attr, conn_main, c);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    s->conns = c->next;
    if (c->next != NULL) {
      c->next->prev = NULL;
    }
    s->nconns--;
    s->nhandshaking--;
    pthread_mutex_unlock(&s->lock);
    close(fd);
    txn_pool_destroy(&c->pool);
    free(c);
    return -rc;
  }
  pthread_mutex_unlock(&s->lock);
  return 0;
}

unsigned server_reap_handshakes(struct server *s)
{
  struct timespec now;
  unsigned n = 0;

  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_lock(&s->lock);
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    bool late = now.tv_sec > c->handshake_deadline.tv_sec ||
                (now.tv_sec == c->handshake_deadline.tv_sec &&
                 now.tv_nsec >= c->handshake_deadline.tv_nsec);
    if (c->handshaking && c->handshake_evicted == 0 && late) {
      c->handshake_evicted = 1;
      shutdown(c->transport.fd, SHUT_RDWR); /* its thread wakes, logs and ends */
      n++;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* Waits up to `seconds` for every connection thread to end. Returns true when none is
 * left. Under s->lock. */
static bool conns_wait(struct server *s, int seconds)
{
  struct timespec deadline;

  mono_cond_deadline(&deadline, seconds * 1000L);
  while (s->nconns > 0) {
    if (pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT) {
      return s->nconns == 0;
    }
  }
  return true;
}

/* The export a handshake thread is still opening (export_attach), or NULL. */
static const struct export *export_attaching(const struct server *s)
{
  for (size_t i = 0; i < s->nexports; i++) {
    if (atomic_load(&s->exports[i]->attaching)) {
      return s->exports[i];
    }
  }
  return NULL;
}

bool server_conn_cut_if_quiet(struct conn *c)
{
  if (c->drain_cut) {
    return false;
  }
  if (!c->handshaking && atomic_load(&c->backing_busy) > 0) {
    c->drain_quiet = false;
    return false;
  }
  if (!c->drain_quiet) {
    c->drain_quiet = true;
    clock_gettime(CLOCK_MONOTONIC, &c->drain_quiet_since);
    return false;
  }
  if (mono_ms_since(&c->drain_quiet_since) < SERVER_SHUTDOWN_SEND_S * 1000L) {
    return false;
  }
  c->drain_cut = true;
  shutdown(c->transport.fd, SHUT_RDWR);
  return true;
}

/* One drain tick (about a second apart): closes each connection that has had nothing in
 * the backing (or been negotiating) for SERVER_SHUTDOWN_SEND_S: its replies are not being
 * read. Under s->lock. */
static void drain_cut_quiet(struct server *s)
{
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    if (server_conn_cut_if_quiet(c) && !c->handshaking) {
      log_warn("%s: replies not read within %d s of shutdown; dropping them", c->peer,
               SERVER_SHUTDOWN_SEND_S);
    }
  }
}

/* SERVER_SHUTDOWN_DRAIN_S have passed: closes every connection left, in one log line.
 * Under s->lock. */
static void drain_give_up(struct server *s)
{
  unsigned busy = 0;

  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    busy += !c->handshaking && atomic_load(&c->backing_busy) > 0;
    c->drain_cut = true;
    shutdown(c->transport.fd, SHUT_RDWR);
  }
  log_error("shutdown: %u connection%s still had requests in the backing %d s after the "
            "signal; closing %s without their replies", busy, busy == 1 ? "" : "s",
            SERVER_SHUTDOWN_DRAIN_S, busy == 1 ? "it" : "them");
}

enum server_drain server_conns_drain(struct server *s)
{
  enum server_drain result = SERVER_DRAIN_DONE;
  const struct export *stuck;
  struct timespec t0;
  long given_up_ms = -1;

  /* Reading stops at once: the readers check `stopping` before they start a request, and
   * SHUT_RD wakes those blocked in a read. Replies still go out. */
  atomic_store(&s->stopping, true);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_mutex_lock(&s->lock);
  tls_readers_stop(); /* first: a TLS reader must not take the EOF below for an attack */
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    shutdown(c->transport.fd, SHUT_RD);
  }
  while (!conns_wait(s, 1)) {
    long ms = mono_ms_since(&t0);
    if (given_up_ms < 0 && ms >= SERVER_SHUTDOWN_DRAIN_S * 1000L) {
      drain_give_up(s);
      result = SERVER_DRAIN_DROPPED;
      given_up_ms = ms;
      continue;
    }
    if (given_up_ms < 0) {
      drain_cut_quiet(s);
    }
    /* Every connection left is shut down and ends as soon as its thread runs, except a
     * thread blocked in the backing (after the give-up) or a handshake thread inside a
     * lazy export's backing_open (export_attach): librados may wait minutes for a cluster
     * that does not answer, and cannot be interrupted. Such threads are given
     * SERVER_SHUTDOWN_SEND_S more seconds, then abandoned. */
    stuck = export_attaching(s);
    if (stuck != NULL && ms >= 2 * SERVER_SHUTDOWN_SEND_S * 1000L) {
      log_warn("export '%s': still opening %s (the cluster does not answer); exiting "
               "without waiting for it", stuck->log_name, stuck->log_spec);
      pthread_mutex_unlock(&s->lock);
      return SERVER_DRAIN_ATTACHING;
    }
    if (given_up_ms >= 0 && ms - given_up_ms >= SERVER_SHUTDOWN_SEND_S * 1000L) {
      log_error("shutdown: exiting with %u connection thread%s still blocked in the backing",
                s->nconns, s->nconns == 1 ? "" : "s");
      pthread_mutex_unlock(&s->lock);
      return SERVER_DRAIN_ABANDONED;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return result;
}

void server_destroy(struct server *s)
{
  for (size_t i = 0; i < s->nexports; i++) {
    export_destroy(s->exports[i]);
  }
  free(s->exports);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
}
