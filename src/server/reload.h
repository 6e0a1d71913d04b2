/* SPDX-License-Identifier: MIT */
/* reload.h: SIGHUP under --config re-reads the config file and makes the running export
 * table match it (docs/gateway.md "Reloading the config"): exports only in the file are
 * added, exports only in the server (also those `ctl add` made) are removed as `ctl
 * remove` removes them (export_table.h), and for an export in both its description, allow
 * list and the default export change in place. A change of path or of a per-export option
 * needs the backing reopened, which would close the export's connections: it is not
 * applied, and one line names the export (`ctl remove` then `ctl add`, or a restart,
 * applies it). [server] keys are read at start-up only. A file with a mistake changes
 * nothing and logs the one line config_file_read gives. No export's clients notice another
 * export's change. */
#ifndef DISKGATE_SERVER_RELOAD_H
#define DISKGATE_SERVER_RELOAD_H

#include "io/engine.h"
#include "server/server.h"

/* What a reload needs: the server, the file and the engine new exports use. */
struct reload {
  struct server *server;
  const char *config_file;
  struct engine *engine;
};

/* Re-reads r->config_file and applies the difference, logging each change and one summary
 * line; sd_notify RELOADING=1, then READY=1. Main thread (listen_run, on SIGHUP); it does
 * not wait for removals to drain. */
void reload_apply(const struct reload *r);

#endif
