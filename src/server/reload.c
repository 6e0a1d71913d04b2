/* SPDX-License-Identifier: MIT */
/* reload.c: SIGHUP under --config: the config file read again and its difference applied
 * to the export table: see reload.h. */
#include "server/reload.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config_file.h"
#include "server/export_allow.h"
#include "server/export_table.h"
#include "server/serve_exports.h"
#include "server/service.h"
#include "util/log.h"

/* What a reload did, for its summary line. */
struct reload_counts {
  unsigned added, removed, changed, kept, not_applied, failed;
};

/* The names and settings of the exports running now (copies), under the table's lock. */
struct running {
  char **names;
  char **settings;
  size_t n;
};

static void running_free(struct running *r)
{
  for (size_t i = 0; i < r->n; i++) {
    free(r->names[i]);
    free(r->settings[i]);
  }
  free(r->names);
  free(r->settings);
}

static int running_take(struct server *s, struct running *r)
{
  int rc = 0;

  memset(r, 0, sizeof *r);
  pthread_mutex_lock(&s->lock);
  r->names = calloc(s->nexports + 1, sizeof *r->names);
  r->settings = calloc(s->nexports + 1, sizeof *r->settings);
  for (size_t i = 0; r->names != NULL && r->settings != NULL && i < s->nexports; i++) {
    const struct export *e = s->exports[i];
    r->names[i] = strdup(e->name);
    r->settings[i] = strdup(e->settings != NULL ? e->settings : "");
    r->n++;
    if (r->names[i] == NULL || r->settings[i] == NULL) {
      rc = -ENOMEM;
      break;
    }
  }
  pthread_mutex_unlock(&s->lock);
  if (r->names == NULL || r->settings == NULL) {
    rc = -ENOMEM;
  }
  if (rc < 0) {
    running_free(r);
  }
  return rc;
}

/* The index of the export `name` in cf, or cf->nexports. */
static size_t config_index(const struct config_file *cf, const char *name)
{
  size_t i = 0;

  while (i < cf->nexports && strcmp(cf->exports[i].export_name, name) != 0) {
    i++;
  }
  return i;
}

/* An export in both: in place what needs no reopen; a changed path or option is named. */
static void reload_keep(const struct reload *rl, const struct serve_config *ec,
                        const char *settings, struct reload_counts *n)
{
  char now[SERVE_EXPORT_SETTINGS_MAX], why[512], shown[EXPORT_LOG_NAME_MAX];
  struct export_allow *allow = NULL;
  int rc = 0;

  log_escape_str(shown, sizeof shown, ec->export_name);
  serve_export_settings(ec, now, sizeof now);
  bool differs = strcmp(now, settings) != 0;
  if (differs) {
    log_warn("reload: export '%s': its path or options changed; not applied (that needs "
             "its backing reopened: `diskgate ctl remove` and `add`, or a restart)", shown);
    n->not_applied++;
  }
  if (ec->allow != NULL) {
    rc = export_allow_parse(ec->allow, &allow, why, sizeof why);
  }
  if (rc == 0) {
    rc = export_table_update(rl->server, ec->export_name, ec->description, ec->allow, allow);
  }
  if (rc < 0) {
    log_error("reload: export '%s': cannot change it: %s", shown, strerror(-rc));
    n->failed++;
  } else if (rc > 0) {
    log_info("reload: export '%s': %s%s%s changed", shown,
             rc & EXPORT_CHANGED_DESCRIPTION ? "description" : "",
             rc == (EXPORT_CHANGED_DESCRIPTION | EXPORT_CHANGED_ALLOW) ? " and " : "",
             rc & EXPORT_CHANGED_ALLOW ? "allow list" : "");
    n->changed++;
  } else if (!differs) {
    n->kept++;
  }
}

/* An export only in the file: made and published. */
static void reload_add(const struct reload *rl, const struct serve_config *ec,
                       struct reload_counts *n)
{
  char err[LOG_SHOWN_MAX + 640], shown[EXPORT_LOG_NAME_MAX];
  struct export *e = NULL;
  int rc = serve_export_make(ec, rl->engine, &e, err, sizeof err);

  log_escape_str(shown, sizeof shown, ec->export_name);
  if (rc == 0 && (rc = export_table_add(rl->server, e, false, err, sizeof err)) < 0) {
    export_destroy(e);
  }
  if (rc != 0) {
    log_error("reload: export '%s' not added: %s", shown, err);
    n->failed++;
    return;
  }
  log_info("reload: export '%s' added: %s", shown, ec->path_shown);
  n->added++;
}

/* Applies cf to the running table. */
static void reload_diff(const struct reload *rl, const struct config_file *cf,
                        const struct running *run, struct reload_counts *n)
{
  const char *dflt = NULL;
  char shown[EXPORT_LOG_NAME_MAX];

  for (size_t i = 0; i < run->n; i++) { /* first: a name freed may be added again */
    if (config_index(cf, run->names[i]) < cf->nexports) {
      continue;
    }
    if (export_table_remove(rl->server, run->names[i], false, false, NULL) == 0) {
      n->removed++;
    } else {
      log_error("reload: export '%s' not removed",
                log_escape_str(shown, sizeof shown, run->names[i]));
      n->failed++;
    }
  }
  for (size_t i = 0; i < cf->nexports; i++) {
    const struct serve_config *ec = &cf->exports[i];
    size_t j = 0;
    while (j < run->n && strcmp(run->names[j], ec->export_name) != 0) {
      j++;
    }
    if (j < run->n) {
      reload_keep(rl, ec, run->settings[j], n);
    } else {
      reload_add(rl, ec, n);
    }
    dflt = ec->is_default ? ec->export_name : dflt;
  }
  if (export_table_set_default(rl->server, dflt) > 0) {
    log_info("reload: the default export is now %s%s%s", dflt != NULL ? "'" : "",
             dflt != NULL ? log_escape_str(shown, sizeof shown, dflt) : "none",
             dflt != NULL ? "'" : "");
  }
}

void reload_apply(const struct reload *rl)
{
  struct serve_config scratch = {0};
  struct config_file cf = {0};
  struct reload_counts n = {0};
  struct running run;
  char err[CONFIG_ERROR_MAX], shown[LOG_SHOWN_MAX];

  service_notify_reloading();
  log_escape_str(shown, sizeof shown, rl->config_file);
  serve_args_defaults(&scratch);
  if (config_file_read(rl->config_file, &scratch, &cf, err, sizeof err) != 0) {
    log_error("reload: %s; nothing changed", err);
    service_notify_ready();
    return;
  }
  if (running_take(rl->server, &run) < 0) {
    log_error("reload: out of memory; nothing changed");
    config_file_free(&cf);
    service_notify_ready();
    return;
  }
  reload_diff(rl, &cf, &run, &n);
  running_free(&run);
  config_file_free(&cf);
  log_info("reload of %s: %u added, %u removed, %u changed in place, %u unchanged, %u not "
           "applied (need a reopen), %u failed", shown, n.added, n.removed, n.changed, n.kept,
           n.not_applied, n.failed);
  service_notify_ready();
}
