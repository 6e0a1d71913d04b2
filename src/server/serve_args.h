/* SPDX-License-Identifier: MIT */
/* serve_args.h: `diskgate serve`'s command line: its options, their defaults and checks.
 * Main thread. */
#ifndef DISKGATE_SERVER_SERVE_ARGS_H
#define DISKGATE_SERVER_SERVE_ARGS_H

#include <stdbool.h>

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
};

/* Parses `diskgate serve ARGS...` (argv[0] is "serve") into *cfg (zeroed by the caller):
 * defaults first, then each option, then the checks across options (one PATH;
 * --force-share needs --read-only and a file; --snapshot excludes --read-only). Returns -1
 * to go on serving, or an exit status: 0 after --help (the usage on stdout), 2 for a bad command line (one line on
 * stderr naming the problem). Main thread, once (it resets getopt's optind). */
int serve_args_parse(int argc, char **argv, struct serve_config *cfg);

#endif
