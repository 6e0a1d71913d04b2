/* serve.c: `diskgate serve [OPTIONS] PATH`: parses the command line (getopt_long), opens the
 * backing and the export, binds the listeners, prints one URI per listener (doc/uri.md),
 * then accepts until SIGINT/SIGTERM/SIGHUP, drains the connections and exits 0. */
#include "server/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "backing/backing.h"
#include "io/engine.h"
#include "nbd/proto.h"
#include "nbd/uri.h"
#include "server/accept_guard.h"
#include "server/export.h"
#include "server/listen.h"
#include "server/loop.h"
#include "server/pid_file.h"
#include "server/server.h"
#include "server/tls.h"
#include "server/tls_psk.h"
#include "util/cli.h"
#include "util/fd_budget.h"
#include "util/log.h"

static const char serve_usage[] =
  "Usage: diskgate serve [OPTIONS] PATH\n"
  "Serve PATH (a raw image file, a block device or partition, a character device, or\n"
  "rbd:POOL/IMAGE[@SNAP]) over NBD until SIGINT, SIGTERM or SIGHUP.\n"
  "\n"
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
  "  --sync full|fsync|none durability of FLUSH and FUA (default full):\n"
  "       full   FLUSH replies after fdatasync (F_FULLFSYNC on macOS) covering every\n"
  "              acknowledged write; FUA writes are durable before their reply\n"
  "       fsync  plain fsync (on macOS it does not flush the drive cache; on Linux it\n"
  "              equals full)\n"
  "       none   FLUSH and FUA are acknowledged without syncing: UNSAFE, acknowledged\n"
  "              data may be lost if the host crashes or loses power\n"
  "  --cache direct|writeback  O_DIRECT or the host page cache (default writeback)\n"
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
  "  --verbose              log each connection that reaches transmission: start, end\n"
  "  --help                 this text\n";

struct serve_config {
  const char *path;
  char path_shown[LOG_SHOWN_MAX]; /* path escaped for messages (log_escape_str) */
  const char *export_name;
  const char *listen_addr;
  const char *socket_path;
  const char *pid_file;
  struct backing_options opts;
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

enum {
  OPT_EXPORT = 256, OPT_LISTEN, OPT_SOCKET, OPT_READ_ONLY, OPT_SYNC, OPT_CACHE, OPT_THREADS,
  OPT_ENGINE, OPT_PID_FILE, OPT_CEPH_CONF, OPT_CEPH_ID, OPT_HELP, OPT_VERBOSE,
  OPT_HS_TIMEOUT, OPT_MAX_HS, OPT_UNALIGNED, OPT_TLS, OPT_TLS_CERTS, OPT_TLS_PSK,
  OPT_FORCE_SHARE, OPT_MAX_CONNS,
};

/* One line naming the problem, exit status 2. `arg`, a value from the command line, is
 * escaped (one line, printable ASCII, whatever it holds). */
static int bad_usage(const char *fmt, const char *arg)
{
  char shown[LOG_SHOWN_MAX];

  fprintf(stderr, "diskgate serve: ");
  fprintf(stderr, fmt, log_escape_str(shown, sizeof shown, arg));
  fprintf(stderr, " (see diskgate serve --help)\n");
  return 2;
}

/* bad_usage for a message already made safe (cli_option_error escapes what it quotes). */
static int bad_usage_text(const char *text)
{
  fprintf(stderr, "diskgate serve: %s (see diskgate serve --help)\n", text);
  return 2;
}

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
  case OPT_CEPH_CONF:
    return "--ceph-conf needs a path, not an empty name";
  case OPT_CEPH_ID:
    return "--ceph-id needs a Ceph user name, not an empty one";
  default:
    return NULL;
  }
}

/* Returns -1 to continue, or an exit status. */
static int parse_args(int argc, char **argv, struct serve_config *cfg)
{
  static const struct option longopts[] = {
    {"export", required_argument, NULL, OPT_EXPORT},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"read-only", no_argument, NULL, OPT_READ_ONLY},
    {"force-share", no_argument, NULL, OPT_FORCE_SHARE},
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
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
  };
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int c;

  cfg->opts.sync = SYNC_FULL;
  cfg->opts.cache = CACHE_WRITEBACK;
  cfg->engine = ENGINE_URING;
  cfg->threads = cores > 0 && cores <= 64 ? (unsigned)cores : 2;
  cfg->handshake_timeout = 10;
  cfg->max_handshakes = 256;
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
    switch (c) {
    case OPT_EXPORT:
      if (cfg->export_name != NULL) {
        return bad_usage("%s given twice (one export per server)", "--export");
      }
      if (strlen(optarg) > 4096) {
        return bad_usage("export name longer than 4096 bytes%s", "");
      }
      if (cli_utf8_check(optarg) < 0) { /* the name goes to clients, which expect UTF-8 */
        return bad_usage("--export needs a UTF-8 name, not '%s'", optarg);
      }
      cfg->export_name = optarg;
      break;
    case OPT_LISTEN: {
      char host[256];
      unsigned port;
      if (listen_parse_address(optarg, host, sizeof host, &port) < 0) {
        return bad_usage("--listen '%s' is not HOST:PORT (IPv6 as [ADDR]:PORT, port 0-65535)",
                         optarg);
      }
      if (cfg->listen_addr != NULL) {
        return bad_usage("%s given twice (one TCP listener per server, and one --socket)",
                         "--listen");
      }
      cfg->listen_addr = optarg;
      break;
    }
    case OPT_SOCKET:
      if (cfg->socket_path != NULL) {
        return bad_usage("%s given twice (one Unix socket per server, and one --listen)",
                         "--socket");
      }
      cfg->socket_path = optarg;
      break;
    case OPT_READ_ONLY:
      cfg->opts.read_only = true;
      break;
    case OPT_FORCE_SHARE:
      cfg->opts.force_share = true;
      break;
    case OPT_SYNC:
      if (sync_mode_parse(optarg, &cfg->opts.sync) < 0) {
        return bad_usage("--sync takes full, fsync or none, not '%s'", optarg);
      }
      break;
    case OPT_CACHE:
      if (cache_mode_parse(optarg, &cfg->opts.cache) < 0) {
        return bad_usage("--cache takes direct or writeback, not '%s'", optarg);
      }
      break;
    case OPT_THREADS:
      if (cli_parse_unsigned(optarg, 1, 64, &cfg->threads) < 0) {
        return bad_usage("--threads takes a number from 1 to 64, not '%s'", optarg);
      }
      break;
    case OPT_ENGINE:
      if (engine_kind_parse(optarg, &cfg->engine) < 0) {
        return bad_usage("--engine takes uring or threads, not '%s'", optarg);
      }
      break;
    case OPT_PID_FILE:
      cfg->pid_file = optarg;
      break;
    case OPT_CEPH_CONF:
      cfg->opts.ceph_conf = optarg;
      break;
    case OPT_CEPH_ID:
      cfg->opts.ceph_id = optarg;
      break;
    case OPT_HS_TIMEOUT:
      if (cli_parse_unsigned(optarg, 1, 3600, &cfg->handshake_timeout) < 0) {
        return bad_usage("--handshake-timeout takes seconds from 1 to 3600, not '%s'", optarg);
      }
      break;
    case OPT_UNALIGNED:
      if (strcmp(optarg, "serve") != 0 && strcmp(optarg, "error") != 0) {
        return bad_usage("--unaligned takes serve or error, not '%s'", optarg);
      }
      cfg->unaligned_error = strcmp(optarg, "error") == 0;
      break;
    case OPT_MAX_HS:
      if (cli_parse_unsigned(optarg, 1, 100000, &cfg->max_handshakes) < 0) {
        return bad_usage("--max-handshakes takes a number from 1 to 100000, not '%s'", optarg);
      }
      break;
    case OPT_MAX_CONNS:
      if (cli_parse_unsigned(optarg, 0, 1000000, &cfg->max_connections) < 0) {
        return bad_usage("--max-connections takes a number from 0 (no limit) to 1000000, "
                         "not '%s'", optarg);
      }
      break;
    case OPT_TLS:
      if (tls_mode_parse(optarg, &cfg->tls) < 0) {
        return bad_usage("--tls takes off, on or require, not '%s'", optarg);
      }
      cfg->tls_given = true;
      break;
    case OPT_TLS_CERTS:
      cfg->tls_cert_dir = optarg;
      break;
    case OPT_TLS_PSK:
      cfg->tls_psk_file = optarg;
      break;
    case OPT_VERBOSE:
      log_set_level(LOG_DEBUG);
      break;
    case OPT_HELP:
      fputs(serve_usage, stdout);
      return 0;
    default: {
      char msg[512];
      return bad_usage_text(cli_option_error(longopts, argv[optind - 1], optopt, msg, sizeof msg));
    }
    }
  }
  if (optind >= argc) {
    return bad_usage("missing PATH to serve%s", "");
  }
  if (optind + 1 < argc) {
    return bad_usage("unexpected argument '%s' (one PATH per server)", argv[optind + 1]);
  }
  if (cfg->opts.force_share && !cfg->opts.read_only) {
    return bad_usage("--force-share needs --read-only (a writable server always locks the "
                     "image)%s", "");
  }
  if (cfg->opts.force_share && strncmp(argv[optind], "rbd:", 4) == 0) {
    return bad_usage("--force-share is for files and block devices, not %s", argv[optind]);
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

/* Loads the TLS credentials. Returns 0, or after one line naming the problem an exit
 * status (cli_startup_status: 1 when memory or files ran out, else 2). */
static int setup_tls(const struct serve_config *cfg)
{
  char err[4400];
  int rc = tls_server_setup(cfg->tls, cfg->tls_cert_dir, cfg->tls_psk_file, err, sizeof err);

  if (rc < 0) {
    char shown[sizeof err + 64];
    fprintf(stderr, "diskgate serve: %s\n", log_escape_str(shown, sizeof shown, err)); /* paths */
    return cli_startup_status(rc);
  }
  return 0;
}

/* With --tls require, clients must use nbds:// (doc/uri.md): "nbd://" and "nbd+unix://"
 * become "nbds://" and "nbds+unix://". `uri` has room for one more byte than its string. */
static void uri_mark_tls(char *uri, size_t size)
{
  size_t len = strlen(uri);

  if (tls_server_mode() == TLS_MODE_REQUIRE && strncmp(uri, "nbd", 3) == 0 && len + 1 < size) {
    memmove(uri + 4, uri + 3, len - 3 + 1);
    uri[3] = 's';
  }
}

static int open_export(const struct serve_config *cfg, struct engine *engine,
                       struct export **out)
{
  struct backing_options opts = cfg->opts;
  struct backing_spec_info info;
  struct backing *b;
  int rc;

  opts.engine = engine;
  rc = backing_spec_check(cfg->path, &info);
  if (rc == -EINVAL) {
    fprintf(stderr, "diskgate serve: %s: expected rbd:POOL[/NAMESPACE]/IMAGE[@SNAP]\n",
            cfg->path_shown);
    return 2;
  }
  if (rc == -ENOTSUP) {
    /* rbd: without librbd at build time; faulty: in a build without the tests */
    fprintf(stderr, "diskgate serve: %s: unknown backing kind (not built into this diskgate)\n",
            cfg->path_shown);
    return 2;
  }
  if (rc == 0 && info.costly) {
    /* Opened by the first NBD_OPT_GO (issue 5: nothing expensive before a client
     * negotiates); a snapshot is read-only by nature, even without --read-only. Its
     * libraries are loaded now (librbd: backing/rbd_lib.h), so that a missing one fails
     * here. */
    char why[512], shown[LOG_SHOWN_MAX];
    rc = backing_spec_load(cfg->path, why, sizeof why);
    if (rc < 0) {
      fprintf(stderr, "diskgate serve: %s: %s\n", cfg->path_shown,
              rc == -ELIBACC ? log_escape_str(shown, sizeof shown, why) : strerror(-rc));
      return cli_startup_status(rc);
    }
    rc = export_create_lazy(cfg->export_name, cfg->path, &opts,
                            cfg->opts.read_only || info.read_only, cfg->opts.sync, out);
    if (rc < 0) {
      fprintf(stderr, "diskgate serve: %s\n", strerror(-rc));
      return 1;
    }
    return 0;
  }
  rc = backing_open(cfg->path, &opts, &b);
  if (rc == -EBUSY) {
    fprintf(stderr, "diskgate serve: %s is already served by another process (its lock is held)\n",
            cfg->path_shown);
    return 2;
  }
  if (rc == -ENOTSUP && cfg->opts.cache == CACHE_DIRECT && strncmp(cfg->path, "rbd:", 4) != 0) {
    fprintf(stderr, "diskgate serve: %s: the file system refuses O_DIRECT; use --cache writeback\n",
            cfg->path_shown);
    return 2;
  }
  if (rc == -EINVAL) {
    fprintf(stderr, "diskgate serve: %s: not a regular file or device of known size\n",
            cfg->path_shown);
    return 2;
  }
  if (rc == -EAGAIN && strncmp(cfg->path, "rbd:", 4) != 0) {
    /* open_checked (case C18): what was opened is not what was checked */
    fprintf(stderr, "diskgate serve: %s was replaced between its check and its open; not "
            "served (start again once it is stable)\n", cfg->path_shown);
    return 2;
  }
  if (rc < 0) {
    /* Writable opens that the file's permissions, attributes or file system refuse: the
     * image may still be served read-only (as qemu-nbd's -r). */
    bool hint = !cfg->opts.read_only && (rc == -EACCES || rc == -EPERM || rc == -EROFS) &&
                strncmp(cfg->path, "rbd:", 4) != 0;
    char text[128];
    fprintf(stderr, "diskgate serve: cannot open %s: %s%s\n", cfg->path_shown,
            cli_startup_error(rc, text, sizeof text),
            hint ? " (to serve it read-only, add --read-only)" : "");
    return cli_startup_status(rc);
  }
  /* export_create adds the backing's own read-only (an RBD snapshot) to --read-only. */
  rc = export_create(cfg->export_name, b, cfg->opts.read_only, cfg->opts.sync, out);
  if (rc < 0) {
    backing_close(b);
    fprintf(stderr, "diskgate serve: %s\n", strerror(-rc));
    return 1;
  }
  return 0;
}

/* Opens every listener; prints nothing on stdout (print_listeners does, once start-up has
 * succeeded), so a failure leaves one line on stderr and nothing on stdout. Returns 0 or
 * an exit status (listeners closed). */
static int open_listeners(const struct serve_config *cfg, struct listener *ls, size_t *n)
{
  char host[256], abs[PATH_MAX];
  unsigned port;
  int rc;

  *n = 0;
  if (cfg->listen_addr != NULL || cfg->socket_path == NULL) {
    const char *addr = cfg->listen_addr != NULL ? cfg->listen_addr : "127.0.0.1:10809";
    rc = listen_parse_address(addr, host, sizeof host, &port);
    if (rc == 0) {
      rc = listen_open_tcp(&ls[*n], host, port);
    }
    if (rc < 0) {
      char shown[LOG_SHOWN_MAX], text[128];
      fprintf(stderr, "diskgate serve: cannot listen on %s: %s\n",
              log_escape_str(shown, sizeof shown, addr),
              rc == -ENOENT   ? "no such host"
              : rc == -EAGAIN ? "the host name could not be resolved now; try again"
                              : cli_startup_error(rc, text, sizeof text));
      return cli_startup_status(rc);
    }
    (*n)++;
  }
  if (cfg->socket_path != NULL) {
    if (cfg->socket_path[0] != '/') {
      if (getcwd(abs, sizeof abs) == NULL ||
          strlen(abs) + 1 + strlen(cfg->socket_path) >= sizeof abs) {
        char shown[LOG_SHOWN_MAX];
        fprintf(stderr, "diskgate serve: socket path %s too long\n",
                log_escape_str(shown, sizeof shown, cfg->socket_path));
        rc = -ENAMETOOLONG;
      } else {
        strcat(abs, "/");
        strcat(abs, cfg->socket_path);
        rc = 0;
      }
    } else {
      rc = snprintf(abs, sizeof abs, "%s", cfg->socket_path) >= (int)sizeof abs ? -ENAMETOOLONG : 0;
    }
    if (rc == 0) {
      rc = listen_open_unix(&ls[*n], abs);
      if (rc < 0) {
        char shown[LOG_SHOWN_MAX], text[128];
        fprintf(stderr, "diskgate serve: cannot listen on %s: %s\n",
                log_escape_str(shown, sizeof shown, abs),
                rc == -EADDRINUSE ? "another server is accepting there"
                : rc == -EEXIST   ? "the path exists and is not a socket (it is left alone)"
                                  : cli_startup_error(rc, text, sizeof text));
      }
    }
    if (rc < 0) {
      for (size_t i = 0; i < *n; i++) {
        listen_close(&ls[i]);
      }
      *n = 0;
      return cli_startup_status(rc);
    }
    (*n)++;
  }
  return 0;
}

/* Prints the URI of each of the n listeners on stdout, the line scripts wait for: called
 * once nothing in start-up can fail any more (the pid file is written). */
static void print_listeners(const struct serve_config *cfg, const struct listener *ls, size_t n)
{
  /* A URI holds the export name (4096 bytes, each up to 3 when percent-encoded), a socket
   * path (108 bytes, likewise) or a host (256 bytes, likewise). */
  char uri[3 * 4096 + 3 * 108 + 3 * 256 + 64];

  for (size_t i = 0; i < n; i++) {
    if (ls[i].unix_path != NULL) {
      nbd_uri_format_unix(uri, sizeof uri - 1, ls[i].unix_path, cfg->export_name);
    } else {
      nbd_uri_format_tcp(uri, sizeof uri - 1, ls[i].host, ls[i].port, cfg->export_name);
    }
    uri_mark_tls(uri, sizeof uri);
    printf("diskgate: listening on %s\n", uri);
  }
  fflush(stdout);
}

/* Logs what is served and how (one line, and the backing's start-up note, the limits, TLS
 * and --sync none warnings), once start-up has succeeded. */
static void log_serving(const struct serve_config *cfg, const struct export *e)
{
  char size[48] = "opened at the first NBD_OPT_GO";

  if (export_is_attached(e)) {
    snprintf(size, sizeof size, "%llu bytes", (unsigned long long)e->backing->geo.size);
  }
  log_info("serving %s as export '%s': %s, sync %s, cache %s, engine %s, %u thread%s%s",
           cfg->path_shown, e->log_name, size, sync_mode_name(cfg->opts.sync),
           cache_mode_name(cfg->opts.cache), engine_kind_name(cfg->engine), cfg->threads,
           cfg->threads == 1 ? "" : "s", e->read_only ? ", read-only" : "");
  if (export_is_attached(e) && e->backing->start_note[0] != '\0') {
    log_info("%s", e->backing->start_note);
  }
  if (cfg->max_connections != 0) {
    log_info("at most %u connection%s open at once (--max-connections)", cfg->max_connections,
             cfg->max_connections == 1 ? "" : "s");
  }
  if (cfg->tls != TLS_MODE_OFF) {
    log_info("%s", tls_server_describe());
  }
  if (cfg->opts.sync == SYNC_NONE && !e->read_only) {
    log_warn("export '%s' is UNSAFE (--sync none): FLUSH and FUA are acknowledged without "
             "syncing; acknowledged writes may be lost if the host crashes or loses power",
             e->log_name);
  }
}

/* Raises the soft limit on open files to the hard limit. Each connection holds one
 * descriptor, and the usual soft limit (1024, kept low for programs that use select(2),
 * which diskgate does not) would refuse connections long before the hard limit (often
 * 524288) does; QEMU raises its own limit the same way. Failure only leaves the limit as
 * it was. Main thread, before any other thread starts. */
static void serve_raise_fd_limit(void)
{
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
      log_debug("open files: soft limit raised from %llu to %llu", (unsigned long long)was,
                (unsigned long long)rl.rlim_cur);
    }
  }
}

int serve_main(int argc, char **argv)
{
  struct serve_config cfg = {0};
  struct pid_file pid_file = {0};
  struct server server;
  struct listener ls[LISTEN_MAX];
  struct engine *engine = NULL;
  struct export *e = NULL;
  size_t nls = 0;
  sigset_t mask;
  int status, sfd, rc, sig;

  status = parse_args(argc, argv, &cfg);
  if (status >= 0) {
    return status;
  }
  /* Request buffers up to 32 MiB come and go with every request: keep them on the heap
   * rather than letting glibc mmap and munmap each large one (a page-fault storm per 1 MiB
   * request). Freed memory above 64 MiB is still returned to the system. */
  mallopt(M_MMAP_THRESHOLD, (int)DG_MAX_PAYLOAD + 4096);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
  serve_raise_fd_limit();
  status = setup_tls(&cfg);
  if (status != 0) {
    return status;
  }
  /* Every thread inherits a mask without SIGINT/SIGTERM/SIGHUP; the main thread reads them
   * from a signalfd, and each one shuts down cleanly (SIGHUP too, as nbdkit does: a closed
   * terminal must not leave the socket file and requests in flight behind), except a SIGHUP
   * that was ignored when diskgate started (nohup): a blocked signal is delivered even when
   * ignored, so it is left out of the mask. SIGPIPE is ignored: sends use MSG_NOSIGNAL,
   * this is for belt and braces. */
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  {
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN) {
      sigaddset(&mask, SIGHUP); /* not under nohup: a SIGHUP ignored at start stays ignored */
    }
  }
  pthread_sigmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  if (sfd < 0) {
    fprintf(stderr, "diskgate serve: signalfd: %s\n", strerror(errno));
    tls_server_teardown();
    return 1;
  }
  rc = engine_create(cfg.engine, cfg.threads, &engine);
  if (rc == -ENOSYS && cfg.engine == ENGINE_URING) {
    log_warn("io_uring is not available here; using the threads engine");
    cfg.engine = ENGINE_THREADS;
    rc = engine_create(cfg.engine, cfg.threads, &engine);
  }
  if (rc < 0) {
    char text[128];
    fprintf(stderr, "diskgate serve: cannot start the I/O engine: %s\n",
            cli_startup_error(rc, text, sizeof text));
    tls_server_teardown();
    close(sfd);
    return 1;
  }
  status = 0;
  if (cfg.pid_file != NULL) {
    char err[LOG_SHOWN_MAX + 128];
    rc = pid_file_check(cfg.pid_file, cfg.path, cfg.socket_path, err, sizeof err);
    if (rc < 0) {
      fprintf(stderr, "diskgate serve: %s\n", err);
      status = cli_startup_status(rc);
    }
  }
  if (status == 0) {
    status = open_export(&cfg, engine, &e);
  }
  if (status == 0) {
    status = open_listeners(&cfg, ls, &nls);
  }
  if (status == 0) {
    /* A connection needs its socket, the accept guard's reserve and, with --tls-psk, the
     * PSK file read in its handshake; without them it would serve and fail every client
     * (EMFILE at accept, or in the TLS handshake). The pid file, written next, keeps one. */
    int need = ACCEPT_GUARD_FDS + 1 + (cfg.tls_psk_file != NULL ? TLS_PSK_LOOKUP_FDS : 0) +
               (cfg.pid_file != NULL ? PID_FILE_FDS : 0);
    int left = fd_budget_left();
    if (left >= 0 && left < need) {
      char text[128];
      fprintf(stderr, "diskgate serve: no open files left for connections: %s\n",
              cli_startup_error(-EMFILE, text, sizeof text));
      status = 1;
    }
  }
  struct export **exports = NULL;
  if (status == 0 && (rc = server_init(&server)) < 0) {
    fprintf(stderr, "diskgate serve: cannot set up the server: %s\n", strerror(-rc));
    status = 1;
  }
  if (status == 0 && (exports = malloc(sizeof *exports)) == NULL) {
    fprintf(stderr, "diskgate serve: out of memory\n");
    status = 1;
  }
  /* A service manager waits for the pid file: without it the server is not started, as
   * qemu-nbd --pid-file exits when it cannot write it. */
  char pid_err[LOG_SHOWN_MAX + 128];
  if (status == 0 && cfg.pid_file != NULL &&
      (rc = pid_file_write(&pid_file, cfg.pid_file, pid_err, sizeof pid_err)) < 0) {
    char shown[LOG_SHOWN_MAX], text[128];
    if (rc == -EBUSY) { /* another server took it since pid_file_check: as if it had then */
      fprintf(stderr, "diskgate serve: %s\n", pid_err);
      status = 2;
    } else {
      fprintf(stderr, "diskgate serve: cannot write the pid file %s: %s\n",
              log_escape_str(shown, sizeof shown, cfg.pid_file),
              cli_startup_error(rc, text, sizeof text));
      status = 1;
    }
  }
  if (status != 0) {
    for (size_t i = 0; i < nls; i++) {
      listen_close(&ls[i]);
    }
    free(exports);
    export_destroy(e);
    engine_destroy(engine);
    tls_server_teardown();
    close(sfd);
    return status;
  }
  print_listeners(&cfg, ls, nls);
  log_serving(&cfg, e);
  server.handshake_timeout_s = cfg.handshake_timeout;
  server.max_handshakes = cfg.max_handshakes;
  server.max_connections = cfg.max_connections;
  server.unaligned_error = cfg.unaligned_error;
  server.exports = exports;
  server.exports[0] = e;
  server.nexports = 1;
  if (cfg.engine == ENGINE_URING && !fd_budget_allows(LOOP_FDS * cfg.threads)) {
    /* the connections come first (fd_budget.h) */
    char why[128];
    log_warn("%s: connections use threads, not io_uring event loops",
             fd_budget_describe(why, sizeof why));
  } else if (cfg.engine == ENGINE_URING) {
    rc = loop_start_all(cfg.threads, engine, &server.loops);
    if (rc < 0) {
      log_warn("cannot start the event loops (%s); connections use threads", strerror(-rc));
    } else {
      server.nloops = cfg.threads;
    }
  }
  sig = listen_run(&server, ls, nls, sfd); /* it logs why it stopped */
  for (size_t i = 0; i < nls; i++) {
    listen_close(&ls[i]);
  }
  if (!server_conns_drain(&server)) {
    /* A handshake thread is blocked in librados opening the export: it cannot be joined,
     * and exit() would run librados' destructors under it. Nothing was opened, so nothing
     * needs a last sync. */
    pid_file_remove(&pid_file);
    fflush(NULL);
    _exit(sig > 0 ? 0 : 1);
  }
  if (server.nloops > 0) {
    loop_stop_all(server.loops, server.nloops);
  }
  server_destroy(&server); /* closes the export and its backing */
  engine_destroy(engine);
  tls_server_teardown();
  pid_file_remove(&pid_file);
  close(sfd);
  return sig > 0 ? 0 : 1; /* 1: stopped by a failure, not by a signal */
}
