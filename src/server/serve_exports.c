/* SPDX-License-Identifier: MIT */
/* serve_exports.c: a config file's exports made for serving: see serve_exports.h. */
#include "server/serve_exports.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/export_allow.h"
#include "server/tls.h"
#include "util/cli.h"
#include "util/log.h"

/* serve_export_create_lazy's work: the line in err, no "diskgate serve: " prefix. */
static int export_create_one(const struct serve_config *ec, const struct backing_options *opts,
                             const struct backing_spec_info *info, struct export **out,
                             char *err, size_t errsize)
{
  char why[512], shown[LOG_SHOWN_MAX];
  /* a costly kind's libraries (librbd: backing/rbd_lib.h) load now: a missing one fails here */
  int rc = info->costly ? backing_spec_load(ec->path, why, sizeof why) : 0;

  if (rc < 0) {
    snprintf(err, errsize, "%s: %s", ec->path_shown,
             rc == -ELIBACC ? log_escape_str(shown, sizeof shown, why) : strerror(-rc));
    return cli_startup_status(rc);
  }
  /* under --snapshot an RBD snapshot is the read-only base of a writable overlay */
  rc = export_create_lazy(ec->export_name, ec->path, opts,
                          ec->opts.read_only || (info->read_only && !ec->snapshot),
                          ec->opts.sync, out);
  if (rc < 0) {
    snprintf(err, errsize, "%s", strerror(-rc));
    return 1;
  }
  (*out)->format = ec->format;
  (*out)->snapshot = ec->snapshot;
  return 0;
}

int serve_export_create_lazy(const struct serve_config *ec, const struct backing_options *opts,
                             const struct backing_spec_info *info, struct export **out)
{
  char err[LOG_SHOWN_MAX + 640];
  int status = export_create_one(ec, opts, info, out, err, sizeof err);

  if (status != 0) {
    fprintf(stderr, "diskgate serve: %s\n", err);
  }
  return status;
}

void serve_export_settings(const struct serve_config *ec, char *buf, size_t size)
{
  const struct backing_options *o = &ec->opts;

  snprintf(buf, size, "path=%s\nread-only=%d\nforce-share=%d\nallow-busy-device=%d\n"
           "sync=%s\ncache=%s\nformat=%d\nsnapshot=%d\nl2-cache-size=%llu\nceph-conf=%s\n"
           "ceph-id=%s\n", ec->path, o->read_only, o->force_share, o->allow_busy,
           sync_mode_name(o->sync), cache_mode_name(o->cache), (int)ec->format, ec->snapshot,
           (unsigned long long)o->l2_cache_size, o->ceph_conf != NULL ? o->ceph_conf : "",
           o->ceph_id != NULL ? o->ceph_id : "");
}

int serve_export_make(const struct serve_config *ec, struct engine *engine,
                      struct export **out, char *err, size_t errsize)
{
  struct backing_options opts = ec->opts;
  struct backing_spec_info info = {0};
  char why[512], settings[SERVE_EXPORT_SETTINGS_MAX];
  int rc = backing_spec_check(ec->path, &info);
  int status;

  opts.engine = engine;
  if (rc == -EINVAL || rc == -ENOTSUP) {
    snprintf(err, errsize, "export '%s': %s: %s", ec->export_name, ec->path_shown,
             rc == -EINVAL ? "expected rbd:POOL[/NAMESPACE]/IMAGE[@SNAP]"
                           : "unknown backing kind (not built into this diskgate)");
    return 2;
  }
  status = export_create_one(ec, &opts, &info, out, err, errsize);
  if (status != 0) {
    return status;
  }
  serve_export_settings(ec, settings, sizeof settings);
  (*out)->settings = strdup(settings);
  if (ec->description != NULL) {
    (*out)->operator_description = strdup(ec->description);
  }
  rc = (*out)->settings == NULL || (ec->description != NULL &&
                                    (*out)->operator_description == NULL) ? -ENOMEM : 0;
  if (rc == 0 && ec->allow != NULL) {
    (*out)->allow_text = strdup(ec->allow);
    rc = (*out)->allow_text == NULL ? -ENOMEM
                                    : export_allow_parse(ec->allow, &(*out)->allow, why, sizeof why);
  }
  if (rc < 0) {
    export_destroy(*out);
    *out = NULL;
    snprintf(err, errsize, "%s", strerror(-rc));
    return 1;
  }
  return 0;
}

int serve_exports_open(const struct config_file *cf, struct engine *engine,
                       struct export ***out, struct export **dflt)
{
  struct export **exports = calloc(cf->nexports, sizeof *exports);
  int status = 0;

  *dflt = NULL;
  if (exports == NULL) {
    fprintf(stderr, "diskgate serve: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < cf->nexports && status == 0; i++) {
    char err[LOG_SHOWN_MAX + 640];
    status = serve_export_make(&cf->exports[i], engine, &exports[i], err, sizeof err);
    if (status != 0) {
      fprintf(stderr, "diskgate serve: %s\n", err);
    }
    if (status == 0 && cf->exports[i].is_default) {
      *dflt = exports[i];
    }
  }
  if (status != 0) {
    for (size_t i = 0; i < cf->nexports; i++) {
      if (exports[i] != NULL) {
        export_destroy(exports[i]);
      }
    }
    free(exports);
    *dflt = NULL;
    return status;
  }
  *out = exports;
  return 0;
}

void serve_exports_log(const struct serve_config *cfg, const struct config_file *cf)
{
  char shown[LOG_SHOWN_MAX];

  log_info("serving %zu export%s from %s (each opened at its first NBD_OPT_GO), engine %s, "
           "%u thread%s", cf->nexports, cf->nexports == 1 ? "" : "s",
           log_escape_str(shown, sizeof shown, cfg->config_file),
           engine_kind_name(cfg->engine), cfg->threads, cfg->threads == 1 ? "" : "s");
  for (size_t i = 0; i < cf->nexports; i++) {
    const struct serve_config *ec = &cf->exports[i];
    log_debug("export '%s': %s, sync %s, cache %s%s%s%s", log_escape_str(shown, sizeof shown,
              ec->export_name), ec->path_shown, sync_mode_name(ec->opts.sync),
              cache_mode_name(ec->opts.cache), ec->opts.read_only ? ", read-only" : "",
              ec->is_default ? ", default" : "", ec->allow != NULL ? ", allow list" : "");
    if (ec->opts.sync == SYNC_NONE && !ec->opts.read_only) {
      log_warn("export '%s' is UNSAFE (sync = none): FLUSH and FUA are acknowledged without "
               "syncing", log_escape_str(shown, sizeof shown, ec->export_name));
    }
  }
  if (cfg->tls != TLS_MODE_OFF) {
    log_info("%s", tls_server_describe());
  }
}
