/* SPDX-License-Identifier: MIT */
/* export.c: see export.h. */
#include "server/export.h"
#include "server/export_allow.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nbd/option.h"
#include "nbd/proto.h"
#include "server/durability.h"
#include "util/log.h"

/* Seconds after a failed attach during which later attaches fail at once. */
#define EXPORT_ATTACH_RETRY_S 1

/* Everything but the backing and its geometry. Returns 0 or -ENOMEM / -ENAMETOOLONG. */
static int export_alloc(const char *name, const char *spec, bool read_only,
                        enum sync_mode sync, struct export **out)
{
  struct export *e;

  if (strlen(name) > NBD_MAX_STRING) {
    return -ENAMETOOLONG;
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) {
    return -ENOMEM;
  }
  e->name = strdup(name);
  e->description = strdup("");
  e->spec = strdup(spec);
  log_escape(e->log_name, sizeof e->log_name, name, strlen(name));
  log_escape_str(e->log_spec, sizeof e->log_spec, spec);
  if (e->name == NULL || e->description == NULL || e->spec == NULL ||
      durability_export_open(e) < 0) {
    free(e->name);
    free(e->description);
    free(e->spec);
    free(e);
    return -ENOMEM;
  }
  static atomic_uint_least64_t next_id = 1;
  e->id = atomic_fetch_add(&next_id, 1);
  e->read_only = read_only;
  e->sync = sync;
  e->max_payload = DG_MAX_PAYLOAD;
  e->min_block = 1;
  e->preferred_block = 4096;
  atomic_init(&e->sync_failed, false);
  atomic_init(&e->attached, false);
  atomic_init(&e->attaching, false);
  atomic_init(&e->removing, false);
  pthread_mutex_init(&e->attach_lock, NULL);
  fence_init(&e->fence);
  *out = e;
  return 0;
}

/* Takes the open backing b: description, block sizes (doc/proto.md "Block size
 * constraints"). Returns 0 or -ENOMEM (b is then not taken). Before `attached` is set. */
static int export_take_backing(struct export *e, struct backing *b)
{
  const struct backing_geometry *geo = &b->geo;
  char *description = strdup(b->description != NULL ? b->description : "");

  if (description == NULL) {
    return -ENOMEM;
  }
  if (strlen(description) > NBD_MAX_STRING) {
    description[NBD_MAX_STRING] = '\0'; /* what NBD_INFO_DESCRIPTION and LIST may carry */
  }
  free(e->description);
  e->description = description;
  e->backing = b;
  e->read_only = e->read_only || b->opts.read_only; /* an RBD snapshot is read-only */
  /* The minimum is the backing's logical block size, so partition tables and file systems
   * made through the export stay valid (case C07); 1 when the size is not a multiple of
   * it, so the last bytes stay addressable. Unaligned requests are served anyway. */
  e->min_block = geo->logical_block_size;
  if (e->min_block == 0 || geo->size % e->min_block != 0) {
    e->min_block = 1;
  }
  e->preferred_block = geo->physical_block_size;
  if (e->preferred_block < 512 || e->preferred_block < e->min_block) {
    e->preferred_block = e->min_block > 512 ? e->min_block : 512;
  }
  if (!nbd_block_size_valid(e->min_block, e->preferred_block, e->max_payload)) {
    e->min_block = 1;
    e->preferred_block = 4096;
  }
  return 0;
}

int export_create(const char *name, const char *spec, struct backing *backing,
                  bool read_only, enum sync_mode sync, struct export **out)
{
  struct export *e;
  int rc = export_alloc(name, spec, read_only, sync, &e);

  if (rc < 0) {
    return rc;
  }
  rc = export_take_backing(e, backing);
  if (rc < 0) {
    e->backing = NULL;
    export_destroy(e);
    return rc;
  }
  atomic_store_explicit(&e->attached, true, memory_order_release);
  *out = e;
  return 0;
}

int export_create_lazy(const char *name, const char *spec, const struct backing_options *opts,
                       bool read_only, enum sync_mode sync, struct export **out)
{
  struct export *e;
  int rc = export_alloc(name, spec, read_only, sync, &e);

  if (rc < 0) {
    return rc;
  }
  e->opts = *opts;
  /* copies: a config's strings or a ctl request's go before the export does */
  e->opts.ceph_conf = opts->ceph_conf != NULL ? strdup(opts->ceph_conf) : NULL;
  e->opts.ceph_id = opts->ceph_id != NULL ? strdup(opts->ceph_id) : NULL;
  if ((opts->ceph_conf != NULL && e->opts.ceph_conf == NULL) ||
      (opts->ceph_id != NULL && e->opts.ceph_id == NULL)) {
    export_destroy(e);
    return -ENOMEM;
  }
  *out = e;
  return 0;
}

const char *export_description(const struct export *e)
{
  if (e->operator_description != NULL) {
    return e->operator_description;
  }
  return export_is_attached(e) ? e->description : "";
}

bool export_is_attached(const struct export *e)
{
  return atomic_load_explicit(&e->attached, memory_order_acquire);
}

static bool retry_too_soon(const struct timespec *failed_at)
{
  struct timespec now;

  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec - failed_at->tv_sec < EXPORT_ATTACH_RETRY_S ||
         (now.tv_sec - failed_at->tv_sec == EXPORT_ATTACH_RETRY_S &&
          now.tv_nsec < failed_at->tv_nsec);
}

/* Opens a lazy export's spec and stacks its format (and --snapshot's overlay) over it,
 * logging a failure in one line. Returns 0 and *out (setting e->probed_raw and
 * e->describe), or -errno. Under attach_lock. */
static int export_attach_open(struct export *e, struct backing **out)
{
  struct backing_options base_opts;
  struct export_stack_args a = {.spec = e->spec,
                                .spec_shown = e->log_spec,
                                .format = e->format,
                                .snapshot = e->snapshot,
                                .opts = &e->opts};
  char why[EXPORT_STACK_TEXT_MAX];
  struct backing *child;
  bool probed_raw;
  int rc;

  atomic_store(&e->attaching, true);
  rc = export_stack_base_options(&e->opts, e->snapshot, e->spec, e->format, &base_opts);
  if (rc == 0) {
    rc = backing_open(e->spec, &base_opts, &child);
  }
  atomic_store(&e->attaching, false);
  if (rc < 0) {
    log_error("export '%s': cannot open %s: %s (clients get NBD_REP_ERR_UNKNOWN; retried "
              "at the next NBD_OPT_GO)", e->log_name, e->log_spec, strerror(-rc));
    return rc;
  }
  rc = export_stack_open(&a, child, out, &probed_raw, e->describe, why, sizeof why);
  if (rc < 0) {
    log_error("export '%s': %s (clients get NBD_REP_ERR_UNKNOWN; retried at the next "
              "NBD_OPT_GO)", e->log_name, why);
    return rc;
  }
  e->probed_raw = probed_raw;
  return 0;
}

int export_attach(struct export *e)
{
  struct backing *b;
  int rc = 0;

  if (export_is_attached(e)) {
    return 0;
  }
  pthread_mutex_lock(&e->attach_lock);
  if (atomic_load_explicit(&e->attached, memory_order_relaxed)) {
    rc = 0;
  } else if (e->attach_error < 0 && retry_too_soon(&e->attach_failed_at)) {
    rc = e->attach_error;
  } else {
    log_info("export '%s': opening %s (first NBD_OPT_GO)", e->log_name, e->log_spec);
    rc = export_attach_open(e, &b);
    if (rc == 0) {
      rc = export_take_backing(e, b);
      if (rc < 0) {
        log_error("export '%s': %s", e->log_name, strerror(-rc));
        backing_close(b);
      }
    }
    if (rc == 0) {
      e->attach_error = 0;
      log_info("export '%s': %s attached, %llu bytes, %s%s", e->log_name, e->log_spec,
               (unsigned long long)e->backing->geo.size, e->describe,
               e->read_only ? ", read-only" : "");
      if (e->backing->start_note[0] != '\0') {
        log_info("export '%s': %s", e->log_name, e->backing->start_note);
      }
      atomic_store_explicit(&e->attached, true, memory_order_release);
    } else {
      e->attach_error = rc;
      clock_gettime(CLOCK_MONOTONIC, &e->attach_failed_at);
    }
  }
  pthread_mutex_unlock(&e->attach_lock);
  return rc;
}

uint16_t export_transmission_flags(const struct export *e, bool structured_replies)
{
  const struct backing_geometry *geo = &e->backing->geo;
  uint16_t flags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH;

  assert(e->backing != NULL);
  if (e->read_only) {
    flags |= NBD_FLAG_READ_ONLY;
  } else {
    flags |= NBD_FLAG_SEND_FUA;
    if (geo->can_trim) {
      flags |= NBD_FLAG_SEND_TRIM;
    }
    if (geo->can_zero) {
      flags |= NBD_FLAG_SEND_WRITE_ZEROES;
      if (geo->can_fast_zero) {
        flags |= NBD_FLAG_SEND_FAST_ZERO; /* spec rule 28: only with SEND_WRITE_ZEROES */
      }
    }
  }
  flags |= NBD_FLAG_SEND_CACHE; /* a backing without prefetch treats it as a no-op */
  if (geo->rotational) {
    flags |= NBD_FLAG_ROTATIONAL;
  }
  if (geo->can_multi_conn) {
    flags |= NBD_FLAG_CAN_MULTI_CONN;
  }
  if (structured_replies) {
    flags |= NBD_FLAG_SEND_DF;
  }
  return flags;
}

void export_destroy(struct export *e)
{
  if (e == NULL) {
    return;
  }
  durability_export_close(e);
  backing_close(e->backing);
  fence_destroy(&e->fence);
  pthread_mutex_destroy(&e->attach_lock);
  free(e->spec);
  free((char *)e->opts.ceph_conf); /* export_create_lazy's copies; NULL otherwise */
  free((char *)e->opts.ceph_id);
  free(e->name);
  free(e->operator_description);
  free(e->settings);
  free(e->allow_text);
  export_allow_free(e->allow);
  free(e->description);
  free(e);
}
