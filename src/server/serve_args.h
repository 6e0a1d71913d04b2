/* SPDX-License-Identifier: MIT */
/* serve_args.h: `diskgate serve`'s command line: its options, their defaults and checks.
 * Main thread. */
#ifndef DISKGATE_SERVER_SERVE_ARGS_H
#define DISKGATE_SERVER_SERVE_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "backing/backing.h"
#include "backing/format.h"
#include "io/engine.h"
#include "server/tls.h"
#include "util/log.h"

/* What the command line asks for. Strings point into argv. */
struct serve_config {
  const char *path;
  char path_shown[LOG_SHOWN_MAX]; /* path escaped for messages (log_escape_str) */
  const char *export_name;
  const char *listen_addr;
  const char *socket_path;
  const char *metrics_addr;  /* --metrics HOST:PORT, or NULL */
  const char *pid_file;
  struct backing_options opts; /* opts.l2_cache_size: --l2-cache-size (0: the default) */
  enum image_format format;    /* --format (IMAGE_FORMAT_AUTO: probe) */
  bool snapshot;               /* --snapshot: writes go to a temporary qcow2 overlay */
  enum engine_kind engine;
  unsigned threads;
  unsigned handshake_timeout;
  unsigned max_handshakes;
  unsigned max_connections;  /* 0: no limit */
  bool unaligned_error;      /* --unaligned error */
  enum tls_mode tls;
  bool tls_given;            /* --tls was on the command line */
  const char *tls_cert_dir;
  const char *tls_psk_file;
  const char *config_file;   /* --config FILE (then no PATH on the command line) */
  const char *control_path;  /* --control PATH (control.h), or NULL */
  unsigned nonconfig_options; /* options other than --config and --verbose given */
  /* [export NAME] sections of a config file only (config_file.h) */
  const char *description;   /* NBD_OPT_LIST's and NBD_INFO_DESCRIPTION's text, or NULL */
  bool is_default;           /* default = true: the export the empty name reaches */
  const char *allow;         /* allow = (export_allow.h), or NULL: every client */
  unsigned line;             /* the section's line in the file */
};

/* Where a config file key belongs (serve_args_key_scope). */
enum serve_key_scope {
  SERVE_KEY_UNKNOWN, /* no such option, or one for the command line only (export, config) */
  SERVE_KEY_SERVER,  /* [server]: every server option, including ones added later */
  SERVE_KEY_EXPORT,  /* [export NAME]: the per-export options */
};

/* The defaults, before any option is applied. Main thread. */
void serve_args_defaults(struct serve_config *cfg);

/* The scope of the long option `name` (without "--"): the table getopt_long reads decides
 * it, so an option added to the command line is a [server] key with no more code. */
enum serve_key_scope serve_args_key_scope(const char *name);

/* Applies the long option `name` (scope not UNKNOWN) with `value` as the command line would
 * (a flag option takes true/false/yes/no/on/off/1/0). `value` must outlive cfg. Returns 0,
 * or -EINVAL and the reason in err (one line, escaped). Main thread. */
int serve_args_apply_key(struct serve_config *cfg, const char *name, const char *value,
                         char *err, size_t errsize);

/* The first getopt_long value serve_args_export_options gives (entry i has this + i). */
#define SERVE_ARGS_EXPORT_OPTION_VAL 0x1000

/* Copies the per-export options (SERVE_KEY_EXPORT) of the command line's table into out
 * (at most cap - 1, then the all-zero end), for `diskgate ctl add`: entry i returns
 * SERVE_ARGS_EXPORT_OPTION_VAL + i from getopt_long. Returns how many. Any thread. */
size_t serve_args_export_options(struct option *out, size_t cap);

/* Parses a config file boolean (true/yes/on/1, false/no/off/0). Returns 0 or -EINVAL. */
int serve_args_parse_bool(const char *text, bool *out);

/* The checks across an export's options (--force-share needs --read-only and a file,
 * --snapshot excludes --read-only and --force-share) for the export of `path`. Returns -1
 * when they pass, else 2 and the reason in err (one line). Main thread. */
int serve_args_check_export(const struct serve_config *cfg, const char *path, char *err,
                            size_t errsize);

/* Parses `diskgate serve ARGS...` (argv[0] is "serve") into *cfg (zeroed by the caller):
 * defaults first, then each option, then the checks across options (one PATH;
 * --force-share needs --read-only and a file; --snapshot excludes --read-only). Returns -1
 * to go on serving, or an exit status: 0 after --help (the usage on stdout), 2 for a bad command line (one line on
 * stderr naming the problem). Main thread, once (it resets getopt's optind). */
int serve_args_parse(int argc, char **argv, struct serve_config *cfg);

#endif
