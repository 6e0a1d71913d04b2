/* SPDX-License-Identifier: MIT */
/* export.h: an export, what a client reaches by name: a backing plus its policy (read-only,
 * sync mode) and what the server advertises for it (transmission flags, block sizes).
 * Source: doc/proto.md, "Transmission flags" and "Block size constraints".
 * An export is made on the main thread (at start-up or reload) or the control thread
 * (`ctl add`), then published in the server's export table (export_table.h) and read
 * concurrently by every connection; afterwards only the atomic fields change, a lazy
 * export's backing and geometry (set once by export_attach under attach_lock), and the
 * fields marked "under the server's lock". */
#ifndef DISKGATE_SERVER_EXPORT_H
#define DISKGATE_SERVER_EXPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "backing/backing.h"
#include "backing/format.h"
#include "server/export_open.h"
#include "server/fence.h"
#include "server/metrics.h"
#include "util/log.h"

/* Bytes of export.log_name: the name escaped (log_escape), cut with "..." to fit */
#define EXPORT_LOG_NAME_MAX 256u

struct group_commit; /* server/durability.c */
struct export_allow;

struct export {
  char *name;              /* NBD export name (a key, never a path: case C18) */
  char log_name[EXPORT_LOG_NAME_MAX]; /* name escaped for log lines (log_escape) */
  uint64_t id;             /* unique in the process: no two exports made share it */
  char *description;       /* NBD_INFO_DESCRIPTION; "" until attached; <= NBD_MAX_STRING */
  /* `description =` (config file, ctl add), owned, or NULL: then the backing's. Under the
   * server's lock (a reload changes it): read it through export_table_describe. */
  char *operator_description;
  /* `allow =` (export_allow.h), owned; NULL: every client. Under the server's lock (a
   * reload changes it). */
  struct export_allow *allow;
  char *allow_text;        /* what `allow =` said, owned, or NULL; under the server's lock */
  char *settings;          /* what a reload compares (serve_export_settings), owned; or NULL */
  /* export_table.c, under the server's lock: references held (connections that selected
   * it, option handlers using it) and whether it left the table */
  unsigned refs;
  bool removed;
  /* set once it left the table: connections stop reading and answer the next request
   * NBD_ESHUTDOWN (conn_reading_stopped) */
  atomic_bool removing;
  /* The backing: NULL until attached. Read it only after export_attach returned 0 on the
   * same thread (its acquire pairs with the attaching thread's release). */
  struct backing *backing;
  bool read_only;
  /* The image's format was probed and found raw: a WRITE that would give it a known
   * image header is refused (format_write_makes_header; QEMU's guard, CVE-2008-2004).
   * Set with the backing. */
  bool probed_raw;
  enum image_format format; /* --format, for a lazy export's attach */
  bool snapshot;            /* --snapshot, for a lazy export's attach */
  char describe[EXPORT_STACK_TEXT_MAX]; /* what is served ("qcow2 image (probed)", the
                                           overlay); "" until attached */
  enum sync_mode sync;
  uint32_t min_block;      /* bytes: NBD_INFO_BLOCK_SIZE minimum (case C07); set at attach */
  uint32_t preferred_block;/* bytes; set at attach */
  uint32_t max_payload;    /* bytes: advertised and enforced for READ/WRITE */
  atomic_bool sync_failed; /* a sync failed: later FLUSHes fail (server/durability.c) */
  struct fence fence;      /* orders overlapping writes across connections (case C12) */
  struct group_commit *group_commit; /* server/durability.c's state, owned */
  struct metrics_export metrics; /* counts of its closed connections, its syncs (metrics.h) */
  /* What the operator named (a file, a device, rbd:...), owned: ctl list shows it, and a
   * lazy export (a costly backing, a Ceph image) opens it with opts at its first attach. */
  char *spec;
  char log_spec[LOG_SHOWN_MAX]; /* spec escaped for log lines (log_escape_str) */
  struct backing_options opts;
  atomic_bool attached;
  atomic_bool attaching;   /* export_attach is inside backing_open (shutdown may give up on it) */
  pthread_mutex_t attach_lock;
  int attach_error;               /* -errno of the last failed attach, under attach_lock */
  struct timespec attach_failed_at; /* CLOCK_MONOTONIC, under attach_lock */
};

/* Makes an export over an open backing (ownership passes to the export), opened from
 * `spec` (recorded: e->spec); it is attached from the start. Returns 0 and *out, or
 * -ENOMEM / -ENAMETOOLONG (name over 4096 bytes). Main thread. */
int export_create(const char *name, const char *spec, struct backing *backing,
                  bool read_only, enum sync_mode sync, struct export **out);

/* Makes an export whose backing (spec, opened with opts; opts' strings are copied; then stacked as e->format and e->snapshot say, which the caller sets before any
 * connection: export_open.h) is opened only by the first export_attach: for backings that are costly to open,
 * such as a Ceph image (nothing expensive happens before some client's NBD_OPT_GO).
 * Returns 0 and *out, or -ENOMEM / -ENAMETOOLONG. Main thread. */
int export_create_lazy(const char *name, const char *spec, const struct backing_options *opts,
                       bool read_only, enum sync_mode sync, struct export **out);

/* Opens the backing of a lazy export if it is not open yet (idempotent; a no-op for
 * exports made by export_create). Called by the handshake when NBD_OPT_GO, NBD_OPT_INFO
 * or NBD_OPT_EXPORT_NAME names the export, before anything that needs its size; any
 * connection thread; concurrent callers wait for the one that opens. A failed open is
 * logged, and for one second after it later calls fail at once with the same error (a
 * flood of clients does not become a flood of cluster connections).
 * Returns 0 (e->backing is usable on this thread from now on) or backing_open's -errno. */
int export_attach(struct export *e);

/* The description clients are told (NBD_OPT_LIST, NBD_INFO_DESCRIPTION): the operator's,
 * else the backing's once attached, else "". Any thread holding the server's lock (the
 * operator's changes on reload), or before the export is published. */
const char *export_description(const struct export *e);

/* True once the backing is open. Any thread. */
bool export_is_attached(const struct export *e);

/* The 16-bit transmission flags for a client, given whether it negotiated structured
 * replies (SEND_DF is set exactly then: spec rule 29). Only once attached. */
uint16_t export_transmission_flags(const struct export *e, bool structured_replies);

/* Frees the group-commit state, closes the backing (if attached) and frees.
 * Main thread (or the thread retiring a removed export: export_table.h), after every
 * connection using it is gone. */
void export_destroy(struct export *e);

#endif
