/* SPDX-License-Identifier: MIT */
/* export_table.c: the export table changed while serving, and removals drained on a
 * thread of their own: see export_table.h. */
#include "server/export_table.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/conn.h"
#include "server/export_allow.h"
#include "util/log.h"
#include "util/mono_cond.h"

/* A removal in progress: under s->lock, but `e`, which only its thread touches. */
struct removal {
  struct server *server;
  struct export *e;
  bool force;
  bool waited;  /* a caller waits: it frees this */
  bool done;
  struct export_removal result;
};

/* The index of e in the table, or s->nexports. Under s->lock. */
static size_t table_index(const struct server *s, const struct export *e)
{
  size_t i = 0;

  while (i < s->nexports && s->exports[i] != e) {
    i++;
  }
  return i;
}

/* The export named `name` (length bytes) in the table, or NULL. Under s->lock. */
static struct export *table_find(const struct server *s, const uint8_t *name, size_t length)
{
  for (size_t i = 0; i < s->nexports; i++) {
    struct export *e = s->exports[i];
    if (strlen(e->name) == length && memcmp(e->name, name, length) == 0) {
      return e;
    }
  }
  return NULL;
}

static bool peer_permits(const struct export *e, const struct export_peer *peer)
{
  return peer == NULL || export_allow_permits(e->allow, peer->addr, peer->tls_names);
}

struct export *export_table_get(struct server *s, const uint8_t *name, size_t length,
                                const struct export_peer *peer, enum export_miss *miss)
{
  struct export *e;

  pthread_mutex_lock(&s->lock);
  e = table_find(s, name, length);
  if (e == NULL && length == 0) {
    e = s->default_export;
  }
  *miss = e == NULL ? EXPORT_MISS_UNKNOWN : EXPORT_MISS_NONE;
  if (e != NULL && !peer_permits(e, peer)) {
    *miss = EXPORT_MISS_REFUSED;
    e = NULL;
  }
  if (e != NULL) {
    e->refs++;
  }
  pthread_mutex_unlock(&s->lock);
  return e;
}

void export_table_put_locked(struct server *s, struct export *e)
{
  if (e == NULL) {
    return;
  }
  assert(e->refs > 0);
  if (--e->refs == 0 && e->removed) {
    pthread_cond_broadcast(&s->cond); /* its removal waits for this */
  }
}

void export_table_put(struct server *s, struct export *e)
{
  if (e == NULL) {
    return;
  }
  pthread_mutex_lock(&s->lock);
  export_table_put_locked(s, e);
  pthread_mutex_unlock(&s->lock);
}

void export_table_describe(struct server *s, const struct export *e, char *buf, size_t size)
{
  pthread_mutex_lock(&s->lock);
  snprintf(buf, size, "%s", export_description(e));
  pthread_mutex_unlock(&s->lock);
}

void export_table_listing_free(struct export_listing *l, size_t n)
{
  for (size_t i = 0; l != NULL && i < n; i++) {
    free(l[i].name);
    free(l[i].description);
  }
  free(l);
}

int export_table_list(struct server *s, const struct export_peer *peer,
                      struct export_listing **out, size_t *n)
{
  struct export_listing *l;
  size_t k = 0;
  int rc = 0;

  pthread_mutex_lock(&s->lock);
  l = calloc(s->nexports + 1, sizeof *l);
  for (size_t i = 0; l != NULL && i < s->nexports; i++) {
    const struct export *e = s->exports[i];
    if (!peer_permits(e, peer)) {
      continue; /* a client not allowed must not learn the export exists */
    }
    l[k].name = strdup(e->name);
    l[k].description = strdup(export_description(e));
    if (l[k++].name == NULL || l[k - 1].description == NULL) {
      rc = -ENOMEM;
      break;
    }
  }
  pthread_mutex_unlock(&s->lock);
  if (l == NULL || rc < 0) {
    export_table_listing_free(l, k);
    return -ENOMEM;
  }
  *out = l;
  *n = k;
  return 0;
}

size_t export_table_count(struct server *s)
{
  pthread_mutex_lock(&s->lock);
  size_t n = s->nexports;
  pthread_mutex_unlock(&s->lock);
  return n;
}

int export_table_add(struct server *s, struct export *e, bool is_default, char *err,
                     size_t errsize)
{
  int rc = 0;

  pthread_mutex_lock(&s->lock);
  if (atomic_load(&s->stopping)) {
    snprintf(err, errsize, "the server is stopping");
    rc = -ESHUTDOWN;
  } else if (table_find(s, (const uint8_t *)e->name, strlen(e->name)) != NULL) {
    snprintf(err, errsize, "an export named '%s' exists already", e->log_name);
    rc = -EEXIST;
  } else if (is_default && s->default_export != NULL) {
    snprintf(err, errsize, "export '%s' is the default already", s->default_export->log_name);
    rc = -EBUSY;
  } else if (s->nexports == s->cap_exports) {
    size_t cap = s->cap_exports > 0 ? 2 * s->cap_exports : 16;
    struct export **n = realloc(s->exports, cap * sizeof *n);
    if (n == NULL) {
      snprintf(err, errsize, "out of memory");
      rc = -ENOMEM;
    } else {
      s->exports = n;
      s->cap_exports = cap;
    }
  }
  if (rc == 0) {
    s->exports[s->nexports++] = e;
    if (is_default) {
      s->default_export = e;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* Closes r's connections whose replies are not being read (server_conn_cut_if_quiet), or
 * all of them once `all`, counting them. Under s->lock. */
static void removal_cut(struct server *s, struct removal *r, bool all)
{
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    if (c->export != r->e) {
      continue;
    }
    if (all && !c->drain_cut) {
      c->drain_cut = true;
      shutdown(c->transport.fd, SHUT_RDWR);
      r->result.cut++;
    } else if (!all && server_conn_cut_if_quiet(c)) {
      r->result.cut++;
    }
  }
}

/* Stops reading on every connection of r's export (SHUT_RD wakes a blocked read; what a
 * client sent before is still read, and its next request is answered NBD_ESHUTDOWN), and
 * counts them. Under s->lock. */
static void removal_stop_reading(struct server *s, struct removal *r)
{
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    if (c->export == r->e && !c->removal_stopped) { /* again each tick: a GO may have just
                                                        selected it */
      c->removal_stopped = true;
      r->result.connections++;
      c->drain_quiet = false;
      shutdown(c->transport.fd, SHUT_RD);
    }
  }
}

static void *removal_main(void *arg)
{
  struct removal *r = arg;
  struct server *s = r->server;
  struct export *e = r->e;
  struct timespec t0, deadline;
  char name[EXPORT_LOG_NAME_MAX];
  bool gave_up = false;

  snprintf(name, sizeof name, "%s", e->log_name);

  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_mutex_lock(&s->lock);
  removal_stop_reading(s, r);
  if (r->force) {
    removal_cut(s, r, true);
  }
  while (e->refs > 0) {
    mono_cond_deadline(&deadline, 1000);
    (void)pthread_cond_timedwait(&s->cond, &s->lock, &deadline);
    if (!gave_up && mono_ms_since(&t0) >= SERVER_SHUTDOWN_DRAIN_S * 1000L) {
      log_error("export '%s': requests still in the backing %d s after its removal; closing "
                "its connections without their replies", e->log_name, SERVER_SHUTDOWN_DRAIN_S);
      gave_up = true;
    }
    removal_stop_reading(s, r);
    removal_cut(s, r, gave_up);
  }
  pthread_mutex_unlock(&s->lock);
  export_destroy(e); /* its last sync, then the backing closes */
  pthread_mutex_lock(&s->lock);
  r->result.ms = mono_ms_since(&t0);
  log_info("export '%s' removed: %u connection%s closed (%u before all replies were "
           "sent), %ld ms", name, r->result.connections, r->result.connections == 1 ? "" : "s",
           r->result.cut, r->result.ms);
  r->done = true;
  s->nremovals--;
  pthread_cond_broadcast(&s->cond);
  bool free_it = !r->waited;
  pthread_mutex_unlock(&s->lock);
  if (free_it) {
    free(r);
  }
  return NULL;
}

/* Takes e out of the table: not found, not listed, not the default any more. Under
 * s->lock. */
static void table_take_out(struct server *s, struct export *e)
{
  size_t i = table_index(s, e);

  assert(i < s->nexports);
  memmove(&s->exports[i], &s->exports[i + 1], (s->nexports - i - 1) * sizeof *s->exports);
  s->nexports--;
  if (s->default_export == e) {
    s->default_export = NULL;
  }
  e->removed = true;
  atomic_store(&e->removing, true);
}

int export_table_remove(struct server *s, const char *name, bool force, bool wait,
                        struct export_removal *result)
{
  struct removal *r = calloc(1, sizeof *r);
  pthread_attr_t attr;
  pthread_t tid;
  int rc;

  if (r == NULL) {
    return -ENOMEM;
  }
  r->server = s;
  r->force = force;
  r->waited = wait;
  pthread_mutex_lock(&s->lock);
  r->e = table_find(s, (const uint8_t *)name, strlen(name));
  if (r->e == NULL) {
    pthread_mutex_unlock(&s->lock);
    free(r);
    return -ENOENT;
  }
  log_info("export '%s': removing%s", r->e->log_name,
           force ? " (force: its connections close at once)" : "");
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  rc = -pthread_create(&tid, &attr, removal_main, r);
  pthread_attr_destroy(&attr);
  if (rc < 0) {
    pthread_mutex_unlock(&s->lock);
    log_warn("export '%s': cannot start its removal: %s; it stays", r->e->log_name,
             strerror(-rc));
    free(r);
    return rc;
  }
  table_take_out(s, r->e); /* under the lock: the thread starts once it is out */
  s->nremovals++;
  while (wait && !r->done) {
    pthread_cond_wait(&s->cond, &s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  if (wait) {
    if (result != NULL) {
      *result = r->result;
    }
    free(r);
  }
  return 0;
}

/* a == b for two optional strings */
static bool text_same(const char *a, const char *b)
{
  return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int export_table_update(struct server *s, const char *name, const char *description,
                        const char *allow_text, struct export_allow *allow)
{
  char *d = description != NULL ? strdup(description) : NULL;
  char *a = allow_text != NULL ? strdup(allow_text) : NULL;
  struct export *e;
  int changed = 0;

  if ((description != NULL && d == NULL) || (allow_text != NULL && a == NULL)) {
    free(d);
    free(a);
    export_allow_free(allow);
    return -ENOMEM;
  }
  pthread_mutex_lock(&s->lock);
  e = table_find(s, (const uint8_t *)name, strlen(name));
  if (e != NULL) {
    changed |= text_same(e->operator_description, d) ? 0 : EXPORT_CHANGED_DESCRIPTION;
    changed |= text_same(e->allow_text, a) ? 0 : EXPORT_CHANGED_ALLOW;
    /* swapped: the old ones are freed below, outside the lock */
    char *old_d = e->operator_description, *old_a = e->allow_text;
    struct export_allow *old_allow = e->allow;
    e->operator_description = d;
    e->allow_text = a;
    e->allow = allow;
    d = old_d;
    a = old_a;
    allow = old_allow;
  }
  pthread_mutex_unlock(&s->lock);
  free(d);
  free(a);
  export_allow_free(allow);
  return e != NULL ? changed : -ENOENT;
}

int export_table_set_default(struct server *s, const char *name)
{
  struct export *e = NULL;
  int rc;

  pthread_mutex_lock(&s->lock);
  if (name != NULL) {
    e = table_find(s, (const uint8_t *)name, strlen(name));
  }
  if (name != NULL && e == NULL) {
    rc = -ENOENT;
  } else {
    rc = s->default_export != e;
    s->default_export = e;
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

void export_table_wait_removals(struct server *s)
{
  pthread_mutex_lock(&s->lock);
  while (s->nremovals > 0) {
    pthread_cond_wait(&s->cond, &s->lock);
  }
  pthread_mutex_unlock(&s->lock);
}
