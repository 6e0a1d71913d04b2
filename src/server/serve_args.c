/* SPDX-License-Identifier: MIT */
/* serve_args.c: `diskgate serve`'s command line (getopt_long): see serve_args.h. */
#include "server/serve_args.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backing/format.h"
#include "server/listen.h"
#include "util/cli.h"

static const char serve_usage[] =
  "Usage: diskgate serve [OPTIONS] PATH\n"
  "       diskgate serve --config FILE [--verbose]\n"
  "Serve PATH (a raw, qcow2 or ASIF image file, a block device or partition, a\n"
  "character device, or rbd:POOL/IMAGE[@SNAP]) over NBD until SIGINT, SIGTERM or\n"
  "SIGHUP (under --config, SIGHUP re-reads FILE instead).\n"
  "\n"
  "  --format auto|raw|qcow2|asif\n"
  "                         the image's format (default auto: a regular file is probed\n"
  "                         by its magic; a device or rbd: image is raw). A probed raw\n"
  "                         image refuses writes that would give it a qcow2 or ASIF\n"
  "                         header. An ASIF image (Apple's sparse image) is served\n"
  "                         read-only\n"
  "  --snapshot             writes go to a temporary qcow2 overlay in $TMPDIR (default\n"
  "                         /var/tmp), deleted at exit; the image is opened read-only\n"
  "  --l2-cache-size SIZE   qcow2: bytes of L2 table cache per image, K/M/G suffixes\n"
  "                         (default 8M: covers 64 GiB of 64 KiB clusters)\n"
  "  --export NAME          export name clients ask for, UTF-8 (default: the empty name;\n"
  "                         once)\n"
  "  --listen HOST:PORT     TCP listener; HOST an address or a name, IPv6 as [ADDR]:PORT\n"
  "                         (default 127.0.0.1:10809 when there is no --socket; HOST\n"
  "                         alone means port 10809, :PORT means 127.0.0.1; once)\n"
  "  --socket PATH          Unix socket listener (with --listen, both listen; once)\n"
  "  --read-only            refuse WRITE, TRIM and WRITE_ZEROES (NBD_EPERM)\n"
  "  --force-share          with --read-only: share the image with writers, so it opens\n"
  "                         beside a QEMU process writing it (as qemu-img -U); reads may\n"
  "                         then see changes at any time (files and block devices)\n"
  "  --allow-busy-device    serve a block device writable although the kernel reports\n"
  "                         it in use (mounted, or open exclusively by another process)\n"
  "  --sync full|fsync|none durability of FLUSH and FUA (default full):\n"
  "       full   FLUSH replies after fdatasync (F_FULLFSYNC on macOS) covering every\n"
  "              acknowledged write; FUA writes are durable before their reply\n"
  "       fsync  plain fsync (on macOS it does not flush the drive cache; on Linux it\n"
  "              equals full)\n"
  "       none   FLUSH and FUA are acknowledged without syncing: UNSAFE, acknowledged\n"
  "              data may be lost if the host crashes or loses power\n"
  "  --cache MODE           QEMU's cache modes (default writeback):\n"
  "       writeback     the host page cache; writes are durable once the client sends\n"
  "                     FLUSH or FUA (QEMU, Linux and other clients that flush)\n"
  "       direct        O_DIRECT (QEMU's none); durable at FLUSH or FUA as writeback\n"
  "       writethrough  the page cache, and every WRITE, TRIM and WRITE_ZEROES is\n"
  "                     durable (--sync) before its reply, syncs shared between\n"
  "                     writes: for clients that may never flush (Apple's\n"
  "                     Virtualization.framework)\n"
  "       directsync    writethrough with O_DIRECT\n"
  "  --threads N            I/O threads, 1 to 64 (default: the number of cores)\n"
  "  --engine uring|threads disk I/O engine (default uring; threads is portable)\n"
  "  --handshake-timeout S  seconds a client may take to negotiate (default 10)\n"
  "  --max-handshakes N     connections negotiating at once, at most; when full, the one\n"
  "                         negotiating longest is closed to make room (default 256)\n"
  "  --max-connections N    open connections, at most; when full, the one negotiating\n"
  "                         longest is closed to make room, or else (when none leaves\n"
  "                         within 0.2 s) the new one, before the greeting (default 0:\n"
  "                         no limit)\n"
  "  --unaligned serve|error  requests not aligned to the minimum block size: served by\n"
  "                         read-modify-write (default), or refused with NBD_EINVAL for\n"
  "                         clients that asked for the block size (spec: SHOULD)\n"
  "  --metrics HOST:PORT    serve Prometheus metrics at http://HOST:PORT/metrics\n"
  "                         (per export; docs/metrics.md); off by default\n"
  "  --pid-file PATH        write the process id once the listeners are ready\n"
  "  --ceph-conf PATH       rbd: the cluster's ceph.conf (default: Ceph's search)\n"
  "  --ceph-id NAME         rbd: the client id (default admin)\n"
  "  --tls off|on|require   TLS through NBD_OPT_STARTTLS (default: off, or require\n"
  "                         when credentials are given):\n"
  "       off      no TLS: STARTTLS is refused with NBD_REP_ERR_POLICY\n"
  "       on       TLS offered; clients may also stay in the clear\n"
  "       require  every option but STARTTLS and ABORT is refused until TLS is up\n"
  "  --tls-certificates DIR X.509 credentials: DIR/server-cert.pem, DIR/server-key.pem;\n"
  "                         if DIR/ca-cert.pem exists, clients must present a certificate\n"
  "                         it signed (DIR/ca-crl.pem, if present, lists revoked ones)\n"
  "  --tls-psk FILE         pre-shared keys instead: `username:hexkey` lines\n"
  "  --config FILE          serve the exports of an INI file (diskgate.conf(5)): its\n"
  "                         [server] keys are these options' long names; PATH and the\n"
  "                         other options then go in the file (only --verbose may join)\n"
  "  --control PATH         a control socket (mode 0600) speaking JSON, for diskgate ctl\n"
  "  --verbose              log each connection's start and end (its requests by kind)\n"
  "  --help                 this text\n";


enum {
  OPT_EXPORT = 256, OPT_LISTEN, OPT_SOCKET, OPT_READ_ONLY, OPT_SYNC, OPT_CACHE, OPT_THREADS,
  OPT_ENGINE, OPT_PID_FILE, OPT_CEPH_CONF, OPT_CEPH_ID, OPT_HELP, OPT_VERBOSE,
  OPT_HS_TIMEOUT, OPT_MAX_HS, OPT_UNALIGNED, OPT_TLS, OPT_TLS_CERTS, OPT_TLS_PSK,
  OPT_FORCE_SHARE, OPT_MAX_CONNS,
  OPT_ALLOW_BUSY, OPT_FORMAT, OPT_SNAPSHOT, OPT_L2_CACHE, OPT_METRICS, OPT_CONFIG,
  OPT_CONTROL,
};

static const struct option longopts[] = {
  {"export", required_argument, NULL, OPT_EXPORT},
  {"listen", required_argument, NULL, OPT_LISTEN},
  {"socket", required_argument, NULL, OPT_SOCKET},
  {"metrics", required_argument, NULL, OPT_METRICS},
  {"read-only", no_argument, NULL, OPT_READ_ONLY},
  {"force-share", no_argument, NULL, OPT_FORCE_SHARE},
  {"allow-busy-device", no_argument, NULL, OPT_ALLOW_BUSY},
  {"sync", required_argument, NULL, OPT_SYNC},
  {"cache", required_argument, NULL, OPT_CACHE},
  {"threads", required_argument, NULL, OPT_THREADS},
  {"engine", required_argument, NULL, OPT_ENGINE},
  {"pid-file", required_argument, NULL, OPT_PID_FILE},
  {"ceph-conf", required_argument, NULL, OPT_CEPH_CONF},
  {"ceph-id", required_argument, NULL, OPT_CEPH_ID},
  {"handshake-timeout", required_argument, NULL, OPT_HS_TIMEOUT},
  {"max-handshakes", required_argument, NULL, OPT_MAX_HS},
  {"max-connections", required_argument, NULL, OPT_MAX_CONNS},
  {"unaligned", required_argument, NULL, OPT_UNALIGNED},
  {"tls", required_argument, NULL, OPT_TLS},
  {"tls-certificates", required_argument, NULL, OPT_TLS_CERTS},
  {"tls-psk", required_argument, NULL, OPT_TLS_PSK},
  {"format", required_argument, NULL, OPT_FORMAT},
  {"snapshot", no_argument, NULL, OPT_SNAPSHOT},
  {"l2-cache-size", required_argument, NULL, OPT_L2_CACHE},
  {"config", required_argument, NULL, OPT_CONFIG},
  {"control", required_argument, NULL, OPT_CONTROL},
  {"verbose", no_argument, NULL, OPT_VERBOSE},
  {"help", no_argument, NULL, OPT_HELP},
  {NULL, 0, NULL, 0},
};

/* --l2-cache-size's bounds, bytes: one 64 KiB table at least; at most what covers
 * 512 TiB of 64 KiB clusters. */
#define SERVE_L2_CACHE_MIN (64ull << 10)
#define SERVE_L2_CACHE_MAX (64ull << 30)

/* One line naming the problem, exit status 2. `arg`, a value from the command line, is
 * escaped (one line, printable ASCII, whatever it holds). */
/* While serve_args_apply_key runs: where the message goes instead of stderr. Main thread. */
static char *usage_redirect;
static size_t usage_redirect_size;

/* bad_usage for a message already made safe (cli_option_error escapes what it quotes). */
static int bad_usage_text(const char *text)
{
  if (usage_redirect != NULL) {
    snprintf(usage_redirect, usage_redirect_size, "%s", text);
    return 2;
  }
  fprintf(stderr, "diskgate serve: %s (see diskgate serve --help)\n", text);
  return 2;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int bad_usage(const char *fmt, const char *arg)
{
  char shown[LOG_SHOWN_MAX], text[LOG_SHOWN_MAX + 256];

  snprintf(text, sizeof text, fmt, log_escape_str(shown, sizeof shown, arg));
  return bad_usage_text(text);
}
#pragma GCC diagnostic pop

/* The line for an empty value of an option whose value names a file, a user or an address,
 * which an empty value cannot (`--socket ''` was taken for the working directory, `--listen
 * ''` for 127.0.0.1:10809); NULL for the other options. (An empty --pid-file is
 * pid_file_check's to refuse.) */
static const char *empty_value_error(int c)
{
  switch (c) {
  case OPT_LISTEN:
    return "--listen needs HOST:PORT, not an empty address";
  case OPT_SOCKET:
    return "--socket needs a path, not an empty name";
  case OPT_TLS_CERTS:
    return "--tls-certificates needs a directory, not an empty name";
  case OPT_TLS_PSK:
    return "--tls-psk needs a path, not an empty name";
  case OPT_CONTROL:
    return "--control needs a path, not an empty name";
  case OPT_CEPH_CONF:
    return "--ceph-conf needs a path, not an empty name";
  case OPT_CEPH_ID:
    return "--ceph-id needs a Ceph user name, not an empty one";
  default:
    return NULL;
  }
}

void serve_args_defaults(struct serve_config *cfg)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  cfg->opts.sync = SYNC_FULL;
  cfg->opts.cache = CACHE_WRITEBACK;
  cfg->engine = ENGINE_URING;
  cfg->threads = cores > 0 && cores <= 64 ? (unsigned)cores : 2;
  cfg->handshake_timeout = 10;
  cfg->max_handshakes = 256;
}

/* --export, --listen, --socket, --metrics (c): what clients connect to, each at most once. Returns -1
 * or an exit status. */
static int option_apply_address(struct serve_config *cfg, int c, const char *value)
{
  char host[256];
  unsigned port;

  switch (c) {
  case OPT_EXPORT:
    if (cfg->export_name != NULL) {
      return bad_usage("%s given twice (one export per server)", "--export");
    }
    if (strlen(value) > 4096) {
      return bad_usage("export name longer than 4096 bytes%s", "");
    }
    if (cli_utf8_check(value) < 0) { /* the name goes to clients, which expect UTF-8 */
      return bad_usage("--export needs a UTF-8 name, not '%s'", value);
    }
    cfg->export_name = value;
    return -1;
  case OPT_LISTEN:
    if (listen_parse_address(value, host, sizeof host, &port) < 0) {
      return bad_usage("--listen '%s' is not HOST:PORT (IPv6 as [ADDR]:PORT, port 0-65535)",
                       value);
    }
    if (cfg->listen_addr != NULL) {
      return bad_usage("%s given twice (one TCP listener per server, and one --socket)",
                       "--listen");
    }
    cfg->listen_addr = value;
    return -1;
  case OPT_METRICS: {
    const char *colon = strrchr(value, ':');
    if (colon == NULL || colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        listen_parse_address(value, host, sizeof host, &port) < 0) {
      return bad_usage("--metrics '%s' is not HOST:PORT (IPv6 as [ADDR]:PORT, port 0-65535)",
                       value);
    }
    if (cfg->metrics_addr != NULL) {
      return bad_usage("%s given twice (one metrics listener per server)", "--metrics");
    }
    cfg->metrics_addr = value;
    return -1;
  }
  default:
    assert(c == OPT_SOCKET);
    if (cfg->socket_path != NULL) {
      return bad_usage("%s given twice (one Unix socket per server, and one --listen)",
                       "--socket");
    }
    cfg->socket_path = value;
    return -1;
  }
}

/* Parses SIZE: decimal bytes with an optional K, M or G suffix (powers of 1024), as QEMU's
 * l2-cache-size takes it. Returns 0 and *out, or -EINVAL (empty, not a number, another
 * suffix, or past 2^64). */
static int size_parse(const char *text, uint64_t *out)
{
  uint64_t v = 0;
  const char *p = text;
  unsigned shift = 0;

  if (*p < '0' || *p > '9') {
    return -EINVAL;
  }
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) {
      return -EINVAL;
    }
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (*p != '\0') {
    static const char suffixes[] = "KkMmGg";
    const char *at = strchr(suffixes, *p);
    shift = at != NULL ? 10 * (unsigned)((at - suffixes) / 2 + 1) : 0;
    if (shift == 0 || p[1] != '\0' || v > (UINT64_MAX >> shift)) {
      return -EINVAL;
    }
  }
  *out = v << shift;
  return 0;
}

/* The options whose value is a number or one of a few words (c; value not empty).
 * Returns -1, 0 when c is none of them, or an exit status (2). */
static int option_apply_setting(struct serve_config *cfg, int c, const char *value)
{
  switch (c) {
  case OPT_SYNC:
    return sync_mode_parse(value, &cfg->opts.sync) < 0
               ? bad_usage("--sync takes full, fsync or none, not '%s'", value) : -1;
  case OPT_CACHE:
    return cache_mode_parse(value, &cfg->opts.cache) < 0
               ? bad_usage("--cache takes writeback, direct, writethrough or directsync, "
                           "not '%s'", value) : -1;
  case OPT_THREADS:
    return cli_parse_unsigned(value, 1, 64, &cfg->threads) < 0
               ? bad_usage("--threads takes a number from 1 to 64, not '%s'", value) : -1;
  case OPT_ENGINE:
    return engine_kind_parse(value, &cfg->engine) < 0
               ? bad_usage("--engine takes uring or threads, not '%s'", value) : -1;
  case OPT_HS_TIMEOUT:
    return cli_parse_unsigned(value, 1, 3600, &cfg->handshake_timeout) < 0
               ? bad_usage("--handshake-timeout takes seconds from 1 to 3600, not '%s'", value)
               : -1;
  case OPT_UNALIGNED:
    if (strcmp(value, "serve") != 0 && strcmp(value, "error") != 0) {
      return bad_usage("--unaligned takes serve or error, not '%s'", value);
    }
    cfg->unaligned_error = strcmp(value, "error") == 0;
    return -1;
  case OPT_MAX_HS:
    return cli_parse_unsigned(value, 1, 100000, &cfg->max_handshakes) < 0
               ? bad_usage("--max-handshakes takes a number from 1 to 100000, not '%s'", value)
               : -1;
  case OPT_MAX_CONNS:
    return cli_parse_unsigned(value, 0, 1000000, &cfg->max_connections) < 0
               ? bad_usage("--max-connections takes a number from 0 (no limit) to 1000000, "
                           "not '%s'", value)
               : -1;
  case OPT_FORMAT:
    return image_format_parse(value, &cfg->format) < 0
               ? bad_usage("--format takes auto, raw, qcow2 or asif, not '%s'", value) : -1;
  case OPT_L2_CACHE:
    if (size_parse(value, &cfg->opts.l2_cache_size) < 0 ||
        cfg->opts.l2_cache_size < SERVE_L2_CACHE_MIN ||
        cfg->opts.l2_cache_size > SERVE_L2_CACHE_MAX) {
      return bad_usage("--l2-cache-size takes bytes from 64K to 64G (suffixes K, M, G), "
                       "not '%s'", value);
    }
    return -1;
  case OPT_TLS:
    cfg->tls_given = true;
    return tls_mode_parse(value, &cfg->tls) < 0
               ? bad_usage("--tls takes off, on or require, not '%s'", value) : -1;
  default:
    return 0;
  }
}

/* Where the value of an option naming a file, a directory or a user goes (kept as given:
 * the opens check it); NULL for the other options. */
static const char **option_path_slot(struct serve_config *cfg, int c)
{
  switch (c) {
  case OPT_PID_FILE:
    return &cfg->pid_file;
  case OPT_CEPH_CONF:
    return &cfg->opts.ceph_conf;
  case OPT_CEPH_ID:
    return &cfg->opts.ceph_id;
  case OPT_TLS_CERTS:
    return &cfg->tls_cert_dir;
  case OPT_TLS_PSK:
    return &cfg->tls_psk_file;
  case OPT_CONTROL:
    return &cfg->control_path;
  default:
    return NULL;
  }
}

/* Applies option c (getopt_long's return) with its value optarg. Returns -1 to go on, or
 * an exit status. */
static int option_apply(struct serve_config *cfg, int c, char **argv)
{
  const char **slot;
  int status;

  switch (c) {
  case OPT_EXPORT:
  case OPT_LISTEN:
  case OPT_SOCKET:
  case OPT_METRICS:
    return option_apply_address(cfg, c, optarg);
  case OPT_READ_ONLY:
    cfg->opts.read_only = true;
    return -1;
  case OPT_FORCE_SHARE:
    cfg->opts.force_share = true;
    return -1;
  case OPT_ALLOW_BUSY:
    cfg->opts.allow_busy = true;
    return -1;
  case OPT_SNAPSHOT:
    cfg->snapshot = true;
    return -1;
  case OPT_VERBOSE:
    log_set_level(LOG_DEBUG);
    return -1;
  case OPT_CONFIG:
    cfg->config_file = optarg;
    return -1;
  case OPT_HELP:
    fputs(serve_usage, stdout);
    return 0;
  default:
    slot = option_path_slot(cfg, c);
    if (slot != NULL) {
      *slot = optarg;
      return -1;
    }
    status = c == '?' || c == ':' ? 0 : option_apply_setting(cfg, c, optarg);
    if (status == 0) {
      char msg[512];
      return bad_usage_text(cli_option_error(longopts, argv[optind - 1], optopt, msg,
                                             sizeof msg));
    }
    return status;
  }
}

static int check_export(const struct serve_config *cfg, const char *path)
{
  if (cfg->opts.force_share && !cfg->opts.read_only) {
    return bad_usage("--force-share needs --read-only (a writable server always locks the "
                     "image)%s", "");
  }
  if (cfg->opts.force_share && strncmp(path, "rbd:", 4) == 0) {
    return bad_usage("--force-share is for files and block devices, not %s", path);
  }
  if (cfg->opts.allow_busy && strncmp(path, "rbd:", 4) == 0) {
    return bad_usage("--allow-busy-device is for block devices, not %s", path);
  }
  if (cfg->snapshot && cfg->opts.read_only) {
    return bad_usage("--snapshot keeps writes in a temporary overlay; with --read-only there "
                     "are none%s", "");
  }
  if (cfg->snapshot && cfg->opts.force_share) {
    return bad_usage("--snapshot locks the image as a reader; it cannot share it with "
                     "writers (--force-share)%s", "");
  }
  return -1;
}

/* After the options: exactly one PATH, and the checks that span options. Returns -1 or an
 * exit status (2). */
static int config_finish(struct serve_config *cfg, int argc, char **argv)
{
  if (cfg->config_file != NULL) {
    if (cfg->nonconfig_options > 0 || optind < argc) {
      return bad_usage("with --config, PATH and the options go in the file (only --verbose "
                       "may join it)%s", "");
    }
    return -1;
  }
  if (optind >= argc) {
    return bad_usage("missing PATH to serve%s", "");
  }
  if (optind + 1 < argc) {
    return bad_usage("unexpected argument '%s' (one PATH per server)", argv[optind + 1]);
  }
  int status = check_export(cfg, argv[optind]);
  if (status >= 0) {
    return status;
  }
  cfg->path = argv[optind];
  log_escape_str(cfg->path_shown, sizeof cfg->path_shown, cfg->path);
  if (cfg->export_name == NULL) {
    cfg->export_name = ""; /* the default export */
  }
  if (!cfg->tls_given && (cfg->tls_cert_dir != NULL || cfg->tls_psk_file != NULL)) {
    cfg->tls = TLS_MODE_REQUIRE; /* credentials alone mean TLS, as qemu-nbd's --tls-creds */
  }
  return -1;
}

int serve_args_parse(int argc, char **argv, struct serve_config *cfg)
{
  int c;

  serve_args_defaults(cfg);
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    char vmsg[512];
    if (c != '?' && c != ':' &&
        cli_value_option_error(longopts, argv, optind, optarg, c, vmsg, sizeof vmsg) != NULL) {
      return bad_usage_text(vmsg); /* `--export --read-only`: the name was forgotten */
    }
    const char *empty = optarg != NULL && *optarg == '\0' ? empty_value_error(c) : NULL;
    if (empty != NULL) {
      return bad_usage_text(empty);
    }
    if (c != OPT_CONFIG && c != OPT_VERBOSE) {
      cfg->nonconfig_options++;
    }
    int status = option_apply(cfg, c, argv);
    if (status >= 0) {
      return status;
    }
  }
  return config_finish(cfg, argc, argv);
}

/* Options a config file's [export NAME] section takes (the rest of longopts, but for those
 * in cli_only, belong in [server]). */
static const char *const export_keys[] = {
  "read-only", "force-share", "allow-busy-device", "sync", "cache", "format", "snapshot",
  "l2-cache-size", "ceph-conf", "ceph-id", NULL,
};
static const char *const cli_only_keys[] = {"export", "config", "help", NULL};

static bool name_in(const char *const *list, const char *name)
{
  for (size_t i = 0; list[i] != NULL; i++) {
    if (strcmp(list[i], name) == 0) {
      return true;
    }
  }
  return false;
}

enum serve_key_scope serve_args_key_scope(const char *name)
{
  for (size_t i = 0; longopts[i].name != NULL; i++) {
    if (strcmp(longopts[i].name, name) == 0) {
      return name_in(cli_only_keys, name) ? SERVE_KEY_UNKNOWN
             : name_in(export_keys, name) ? SERVE_KEY_EXPORT
                                          : SERVE_KEY_SERVER;
    }
  }
  return SERVE_KEY_UNKNOWN;
}

size_t serve_args_export_options(struct option *out, size_t cap)
{
  size_t n = 0;

  for (size_t i = 0; longopts[i].name != NULL && n + 1 < cap; i++) {
    if (name_in(export_keys, longopts[i].name)) {
      out[n] = longopts[i];
      out[n].flag = NULL;
      out[n].val = SERVE_ARGS_EXPORT_OPTION_VAL + (int)n;
      n++;
    }
  }
  memset(&out[n], 0, sizeof out[n]);
  return n;
}

int serve_args_parse_bool(const char *text, bool *out)
{
  static const char *const yes[] = {"true", "yes", "on", "1", NULL};
  static const char *const no[] = {"false", "no", "off", "0", NULL};

  if (name_in(yes, text) || name_in(no, text)) {
    *out = name_in(yes, text);
    return 0;
  }
  return -EINVAL;
}

int serve_args_apply_key(struct serve_config *cfg, const char *name, const char *value,
                         char *err, size_t errsize)
{
  const struct option *o = NULL;
  int status;

  for (size_t i = 0; longopts[i].name != NULL && o == NULL; i++) {
    o = strcmp(longopts[i].name, name) == 0 ? &longopts[i] : NULL;
  }
  assert(o != NULL);
  if (o->has_arg == no_argument) {
    bool on;
    if (serve_args_parse_bool(value, &on) < 0) {
      snprintf(err, errsize, "takes true or false");
      return -EINVAL;
    }
    if (!on) {
      return 0;
    }
  } else if (*value == '\0') {
    const char *empty = empty_value_error(o->val);
    snprintf(err, errsize, "%s", empty != NULL ? empty : "needs a value");
    return -EINVAL;
  }
  usage_redirect = err;
  usage_redirect_size = errsize;
  optarg = (char *)value;
  status = option_apply(cfg, o->val, NULL);
  usage_redirect = NULL;
  return status >= 0 ? -EINVAL : 0;
}

int serve_args_check_export(const struct serve_config *cfg, const char *path, char *err,
                            size_t errsize)
{
  int status;

  usage_redirect = err;
  usage_redirect_size = errsize;
  status = check_export(cfg, path);
  usage_redirect = NULL;
  return status;
}
