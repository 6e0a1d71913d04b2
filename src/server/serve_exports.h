/* SPDX-License-Identifier: MIT */
/* serve_exports.h: the exports of a config file (config_file.h) made for serving. Main
 * thread, at start-up. */
#ifndef DISKGATE_SERVER_SERVE_EXPORTS_H
#define DISKGATE_SERVER_SERVE_EXPORTS_H

#include <stddef.h>

#include "io/engine.h"
#include "server/config_file.h"
#include "server/export.h"

/* Makes one export per cf->exports[i], each lazy (export_create_lazy: its backing is
 * opened at the first NBD_OPT_GO naming it, so that a thousand exports start at once and
 * cost memory only when used), with its description, allow list and format. cf must
 * outlive the exports. Returns 0, *out (an array of cf->nexports; free each with
 * export_destroy, then the array) and *dflt (the `default = true` export or NULL); or,
 * after one line on stderr, an exit status (1: memory; 2: a backing kind not built in),
 * with nothing left allocated. */
int serve_exports_open(const struct config_file *cf, struct engine *engine,
                       struct export ***out, struct export **dflt);

/* Logs what is served: one line, and one (debug) per export, warnings for sync = none.
 * Main thread, once start-up has succeeded. */
void serve_exports_log(const struct serve_config *cfg, const struct config_file *cf);

#endif
