/* SPDX-License-Identifier: MIT */
/* export_table.h: the server's export table, changed while it serves (docs/gateway.md
 * "Changing exports"): exports added (`ctl add`, a reload), removed with their clients
 * drained (`ctl remove`, a reload), and looked up by the handshake. The table
 * (server->exports, server->nexports, server->default_export) and each export's `refs`,
 * `removed`, `operator_description` and `allow` change only under server->lock; an export
 * is freed once it left the table and no reference is held.
 *
 * Removal (export_table_remove): the export leaves the table at once (no new client
 * reaches it, NBD_OPT_LIST no longer shows it) and its connections stop reading: each
 * answers the next request it reads with NBD_ESHUTDOWN (doc/proto.md "Terminating the
 * transmission phase"; spec rule 32) and ends once every request read before was finished
 * and replied to, so its client sees the replies, NBD_ESHUTDOWN, then EOF. A connection
 * whose replies are not read for SERVER_SHUTDOWN_SEND_S is closed; with `force` every
 * connection is closed at once (replies not sent yet are dropped; requests in the backing
 * still finish before the backing closes). Then the export's last sync, and its backing
 * closes. Other exports' clients are not touched. */
#ifndef DISKGATE_SERVER_EXPORT_TABLE_H
#define DISKGATE_SERVER_EXPORT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "server/export.h"
#include "server/server.h"

/* Who asks for an export: the client's address (NULL or AF_UNIX: a Unix socket client)
 * and TLS names (NULL-terminated, or NULL), for the export's allow list. */
struct export_peer {
  const struct sockaddr *addr;
  const char *const *tls_names;
};

/* Why export_table_get found nothing. */
enum export_miss {
  EXPORT_MISS_NONE,    /* found */
  EXPORT_MISS_UNKNOWN, /* no export has that name (and no default for the empty name) */
  EXPORT_MISS_REFUSED, /* the export's allow list refuses the peer */
};

/* An export's line in NBD_OPT_LIST: copies, owned by the array. */
struct export_listing {
  char *name;
  char *description;
};

/* How a removal ended (export_table_remove with wait). */
struct export_removal {
  unsigned connections; /* connections the export had when it was removed */
  unsigned cut;         /* closed before their replies were all sent (slow, or force) */
  long ms;              /* milliseconds from removal to the backing's close */
};

/* Looks up the export `name` (`length` bytes, not NUL-terminated; the empty name reaches
 * the default export when no export has it) for `peer` (NULL: no allow list check) and
 * takes a reference on it. Returns it, or NULL and *miss. Any thread. */
struct export *export_table_get(struct server *s, const uint8_t *name, size_t length,
                                const struct export_peer *peer, enum export_miss *miss);

/* Releases a reference export_table_get took (or a connection's, at its end). NULL is a
 * no-op. Any thread, not holding s->lock. */
void export_table_put(struct server *s, struct export *e);

/* The same under s->lock (the caller holds it). */
void export_table_put_locked(struct server *s, struct export *e);

/* The exports `peer` may see, in table order, as copies: *out (free with
 * export_table_listing_free) and *n. Returns 0 or -ENOMEM. Any thread. */
int export_table_list(struct server *s, const struct export_peer *peer,
                      struct export_listing **out, size_t *n);

/* Frees what export_table_list returned. */
void export_table_listing_free(struct export_listing *l, size_t n);

/* Copies e's description (export_description) into buf (NUL-terminated, cut to size).
 * Any thread. */
void export_table_describe(struct server *s, const struct export *e, char *buf, size_t size);

/* Publishes e (made with export_create_lazy, not in any table) under its name; with
 * `is_default` it becomes the export the empty name reaches. Returns 0 (the table owns e),
 * or -EEXIST (the name is taken), -EBUSY (a default exists: err names it), -ESHUTDOWN
 * (the server is stopping) or -ENOMEM, with the reason in err; e is then not taken. Any
 * thread. */
int export_table_add(struct server *s, struct export *e, bool is_default, char *err,
                     size_t errsize);

/* Removes the export `name` as the header describes, on a thread of its own. With `wait`
 * the caller waits until its backing is closed and gets *result (may be NULL); without,
 * it returns at once (one log line says when the removal ends). Returns 0, or -ENOENT (no
 * such export), -ENOMEM / -EAGAIN (no thread: the export stays). Any thread but a
 * connection's; not holding s->lock. */
int export_table_remove(struct server *s, const char *name, bool force, bool wait,
                        struct export_removal *result);

/* Changes, in place, what needs no reopen of the export `name`: its operator description
 * (`description`, copied; NULL: the backing's) and allow list (`allow`, taken, with its
 * text `allow_text`, copied; NULL: every client). Returns a mask of what changed
 * (EXPORT_CHANGED_*), or -ENOENT (allow is then freed) / -ENOMEM (nothing changed). Any
 * thread. */
#define EXPORT_CHANGED_DESCRIPTION 1
#define EXPORT_CHANGED_ALLOW 2
int export_table_update(struct server *s, const char *name, const char *description,
                        const char *allow_text, struct export_allow *allow);

/* Makes the export `name` the default (NULL: none). Returns 1 when that changed it, 0
 * when it already was, -ENOENT. Any thread. */
int export_table_set_default(struct server *s, const char *name);

/* Waits until every removal in progress has closed its backing. Main thread, at shutdown,
 * after the connections were drained (server_conns_drain). */
void export_table_wait_removals(struct server *s);

/* The number of exports in the table. Any thread. */
size_t export_table_count(struct server *s);

#endif
