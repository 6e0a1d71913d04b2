/* SPDX-License-Identifier: MIT */
/* serve_exports.h: the exports of a config file (config_file.h) made for serving. Main
 * thread, at start-up. */
#ifndef DISKGATE_SERVER_SERVE_EXPORTS_H
#define DISKGATE_SERVER_SERVE_EXPORTS_H

#include <stddef.h>

#include "io/engine.h"
#include "server/config_file.h"
#include "server/export.h"

/* Makes the lazy export (export_create_lazy) of ec, one export's options, over opts (its
 * backing options with the engine set) and the spec's check `info` (backing_spec_check:
 * a costly kind's libraries are loaded now; an RBD snapshot is read-only unless under
 * --snapshot), with ec's format and --snapshot. Returns 0 and *out, or an exit status
 * after one line on stderr (a library missing, memory). */
int serve_export_create_lazy(const struct serve_config *ec, const struct backing_options *opts,
                             const struct backing_spec_info *info, struct export **out);

/* Bytes of serve_export_settings' text, at most. */
#define SERVE_EXPORT_SETTINGS_MAX (2 * 4096 + 512)

/* What a reload compares to decide that an export needs reopening: ec's path and
 * per-export options as text (one `key=value` line each), into buf (cut to size). */
void serve_export_settings(const struct serve_config *ec, char *buf, size_t size);

/* Makes the lazy export of ec (one [export NAME] section, or a ctl add request): its
 * backing kind checked, its description, allow list and settings (serve_export_settings)
 * kept as its own copies. Returns 0 and *out (not yet in any table), or an exit status (1:
 * memory, a library missing; 2: a backing kind not built in) and the line in err. Main
 * thread or the control thread. */
int serve_export_make(const struct serve_config *ec, struct engine *engine,
                      struct export **out, char *err, size_t errsize);

/* Makes one export per cf->exports[i], each lazy (export_create_lazy: its backing is
 * opened at the first NBD_OPT_GO naming it, so that a thousand exports start at once and
 * cost memory only when used), with its description, allow list and format. Returns 0, *out (an array of cf->nexports; free each with
 * export_destroy, then the array) and *dflt (the `default = true` export or NULL); or,
 * after one line on stderr, an exit status (1: memory; 2: a backing kind not built in),
 * with nothing left allocated. */
int serve_exports_open(const struct config_file *cf, struct engine *engine,
                       struct export ***out, struct export **dflt);

/* Logs what is served: one line, and one (debug) per export, warnings for sync = none.
 * Main thread, once start-up has succeeded. */
void serve_exports_log(const struct serve_config *cfg, const struct config_file *cf);

#endif
