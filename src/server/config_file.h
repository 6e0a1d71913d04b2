/* SPDX-License-Identifier: MIT */
/* config_file.h: `diskgate serve --config FILE` (diskgate.conf(5)): an INI file read with
 * libinih. [server] takes the server options' long names (serve_args.h decides which);
 * each [export NAME] section takes `path`, the per-export options' long names,
 * `description`, `default` and `allow`. */
#ifndef DISKGATE_SERVER_CONFIG_FILE_H
#define DISKGATE_SERVER_CONFIG_FILE_H

#include <stddef.h>

#include "server/serve_args.h"

/* What a config file holds: the exports, each a serve_config (path, export_name, opts,
 * format, snapshot, description, is_default, allow, line); their strings are owned here. */
struct config_file {
  struct serve_config *exports;
  size_t nexports;
  char **strings; /* every value kept, freed by config_file_free */
  size_t nstrings;
  size_t cap_strings;
  size_t cap_exports;
};

/* Bytes of an error line config_file_read or config_file_export give, at most. */
#define CONFIG_ERROR_MAX (LOG_SHOWN_MAX * 2 + 512)

/* Reads `path`: its [server] keys into *server (which holds the command line's --config
 * and --verbose), its exports into *out (zeroed by the caller). Each export's path must
 * exist now (its backing is opened at the first NBD_OPT_GO naming it). Returns 0, or 2
 * and ONE line in err "FILE:LINE: KEY: problem" (unknown section or key, a key given
 * twice, a duplicate export name, a missing path, a bad value, two defaults, no export);
 * *out is then freed. Main thread. */
int config_file_read(const char *path, struct serve_config *server, struct config_file *out,
                     char *err, size_t errsize);

/* Makes *out (zeroed by the caller) hold one export, `name`, from n key/value pairs as an
 * [export NAME] section would take them (`path`, the per-export options, `description`,
 * `default`, `allow`): the same checks, the same messages without FILE:LINE. Returns 0, or
 * 2 and the line "KEY: problem" in err (*out is then freed). Any one thread. */
int config_file_export(const char *name, const char *const *keys, const char *const *values,
                       size_t n, struct config_file *out, char *err, size_t errsize);

/* Frees what config_file_read kept. The exports made from it must be gone. */
void config_file_free(struct config_file *cf);

#endif
