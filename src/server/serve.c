/* SPDX-License-Identifier: MIT */
/* serve.c: `diskgate serve [OPTIONS] PATH`: reads the command line (serve_args.h), opens the
 * backing and the export, binds the listeners, prints one URI per listener (doc/uri.md),
 * then accepts until SIGINT/SIGTERM/SIGHUP, drains the connections and exits 0; SIGUSR2
 * first hands the listeners to a new copy of the server (reexec.h). */
#include "server/serve.h"

#include <errno.h>
#include <fcntl.h>
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
#include "server/config_file.h"
#include "server/conn_loop.h"
#include "server/control.h"
#include "server/export.h"
#include "server/export_open.h"
#include "server/listen.h"
#include "server/listen_hosts.h"
#include "server/metrics_http.h"
#include "io/loop.h"
#include "server/pid_file.h"
#include "server/reload.h"
#include "server/export_table.h"
#include "server/reexec.h"
#include "server/serve_args.h"
#include "server/service.h"
#include "server/serve_exports.h"
#include "server/serve_listeners.h"
#include "server/serve_planes.h"
#include "server/server.h"
#include "server/tls.h"
#include "server/tls_psk.h"
#include "util/cli.h"
#include "util/fd_budget.h"
#include "util/log.h"

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

/* Taking over from the process `old` (reexec.h), which holds the image's lock until it has
 * drained: retries backing_open every 20 ms while it refuses the image as busy and `old`
 * still runs, up to SERVER_SHUTDOWN_DRAIN_S and 15 s more. Returns what backing_open last
 * returned. */
static int open_after_old(const char *path, const struct backing_options *opts, pid_t old,
                          struct backing **b)
{
  int rc = -EBUSY;

  /* -EBUSY: the old server's image lock; -ETXTBSY: its exclusive claim on a block device */
  for (long ms = 0; (rc == -EBUSY || rc == -ETXTBSY) &&
                    ms < (SERVER_SHUTDOWN_DRAIN_S + 15) * 1000L;
       ms += 20) {
    if (kill(old, 0) < 0 && errno == ESRCH) {
      return backing_open(path, opts, b); /* gone: busy now means another server */
    }
    usleep(20000);
    rc = backing_open(path, opts, b);
  }
  return rc;
}

/* Stacks the format (and --snapshot's overlay) over `b`, the opened protocol backing of
 * cfg->path (export_open.h), and makes the export. Returns 0, or after one line on stderr
 * an exit status (2: the image is refused; 1: memory ran out); b is then closed. */
static int open_export_stack(const struct serve_config *cfg, const struct backing_options *opts,
                             struct backing *b, struct export **out)
{
  struct export_stack_args a = {.spec = cfg->path,
                                .spec_shown = cfg->path_shown,
                                .format = cfg->format,
                                .snapshot = cfg->snapshot,
                                .opts = opts};
  char describe[EXPORT_STACK_TEXT_MAX], why[EXPORT_STACK_TEXT_MAX];
  struct backing *top;
  bool probed_raw;
  int rc;

  rc = export_stack_open(&a, b, &top, &probed_raw, describe, why, sizeof why);
  if (rc < 0) {
    fprintf(stderr, "diskgate serve: %s\n", why);
    return cli_startup_status(rc);
  }
  /* export_create adds the backing's own read-only (an RBD snapshot) to --read-only. */
  rc = export_create(cfg->export_name, cfg->path, top, cfg->opts.read_only, cfg->opts.sync,
                     out);
  if (rc < 0) {
    backing_close(top);
    fprintf(stderr, "diskgate serve: %s\n", strerror(-rc));
    return 1;
  }
  (*out)->probed_raw = probed_raw;
  (*out)->format = cfg->format;
  (*out)->snapshot = cfg->snapshot;
  snprintf((*out)->describe, sizeof (*out)->describe, "%s", describe);
  return 0;
}

static int open_export(const struct serve_config *cfg, struct engine *engine,
                       struct export **out)
{
  struct backing_options opts = cfg->opts;
  struct backing_options base_opts;
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
    /* opened by the first NBD_OPT_GO: nothing expensive happens before a client negotiates */
    return serve_export_create_lazy(cfg, &opts, &info, out);
  }
  /* read-only under --snapshot, and for an ASIF image */
  rc = export_stack_base_options(&opts, cfg->snapshot, cfg->path, cfg->format, &base_opts);
  if (rc == 0) {
    rc = backing_open(cfg->path, &base_opts, &b);
  }
  if ((rc == -EBUSY || rc == -ETXTBSY) && reexec_takeover_pid() > 0) {
    rc = open_after_old(cfg->path, &base_opts, reexec_takeover_pid(), &b);
  }
  if (rc == -EBUSY) {
    fprintf(stderr, "diskgate serve: %s is already served by another process (its lock is held)\n",
            cfg->path_shown);
    return 2;
  }
  if (rc == -ETXTBSY) {
    fprintf(stderr, "diskgate serve: %s is in use (mounted, or open exclusively by another "
            "process): not served writable; add --read-only, or --allow-busy-device to write "
            "it anyway\n", cfg->path_shown);
    return 2;
  }
  if (rc == -ENOTSUP && cache_mode_is_direct(cfg->opts.cache) &&
      strncmp(cfg->path, "rbd:", 4) != 0) {
    fprintf(stderr, "diskgate serve: %s: the file system refuses O_DIRECT; use --cache %s\n",
            cfg->path_shown, cfg->opts.cache == CACHE_DIRECTSYNC ? "writethrough" : "writeback");
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
     * image may still be served read-only (as qemu-nbd's -r), but only if it can be read. */
    bool hint = !cfg->opts.read_only && (rc == -EACCES || rc == -EPERM || rc == -EROFS) &&
                strncmp(cfg->path, "rbd:", 4) != 0 &&
                faccessat(AT_FDCWD, cfg->path, R_OK, AT_EACCESS) == 0;
    char text[128];
    fprintf(stderr, "diskgate serve: cannot open %s: %s%s\n", cfg->path_shown,
            cli_startup_error(rc, text, sizeof text),
            hint ? " (to serve it read-only, add --read-only)" : "");
    return cli_startup_status(rc);
  }
  return open_export_stack(cfg, &opts, b, out);
}

/* Prints "diskgate: listening on URI" for `uri` (room for `size` bytes), as nbds when TLS
 * is required. */
static void print_uri(char *uri, size_t size)
{
  uri_mark_tls(uri, size);
  printf("diskgate: listening on %s\n", uri);
}

/* Prints the URIs of each of the n listeners on stdout, the lines scripts wait for: one
 * per host a client can reach it at (a wildcard listener's: the host's addresses,
 * listen_hosts.h). Called once nothing in start-up can fail any more (the pid file is
 * written). */
static void print_listeners(const struct serve_config *cfg, const struct listener *ls, size_t n)
{
  /* A URI holds the export name (4096 bytes, each up to 3 when percent-encoded), a socket
   * path (108 bytes, likewise) or a host (256 bytes, likewise). */
  char uri[3 * 4096 + 3 * 108 + 3 * 256 + 64];
  char hosts[LISTEN_HOSTS_MAX][LISTEN_HOST_SIZE];

  for (size_t i = 0; i < n; i++) {
    if (ls[i].unix_path != NULL) {
      nbd_uri_format_unix(uri, sizeof uri - 1, ls[i].unix_path, cfg->export_name);
      print_uri(uri, sizeof uri);
      continue;
    }
    size_t nhosts = listen_hosts_of(ls[i].fd, ls[i].host, hosts, LISTEN_HOSTS_MAX);
    for (size_t h = 0; h < nhosts; h++) {
      nbd_uri_format_tcp(uri, sizeof uri - 1, hosts[h], ls[i].port, cfg->export_name);
      print_uri(uri, sizeof uri);
    }
  }
  fflush(stdout);
}

/* Logs what is served and how (one line, and the backing's start-up note, the limits, TLS
 * and --sync none warnings), once start-up has succeeded. */
static void log_serving(const struct serve_config *cfg, const struct export *e)
{
  char size[48 + EXPORT_STACK_TEXT_MAX] = "opened at the first NBD_OPT_GO";

  if (export_is_attached(e)) {
    snprintf(size, sizeof size, "%llu bytes, %s", (unsigned long long)e->backing->geo.size,
             e->describe);
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
    if (cache_mode_writes_through(cfg->opts.cache)) {
      log_warn("export '%s': --cache %s with --sync none syncs nothing: writes are "
               "acknowledged from the %s, as under --cache %s",
               e->log_name, cache_mode_name(cfg->opts.cache),
               cfg->opts.cache == CACHE_DIRECTSYNC ? "disk's volatile cache" : "page cache",
               cfg->opts.cache == CACHE_DIRECTSYNC ? "direct" : "writeback");
    }
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

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR2 in every thread to come and returns a signalfd
 * that reads them, or -errno. Each one shuts down cleanly (SIGHUP too, as nbdkit does: a closed
 * terminal must not leave the socket file and requests in flight behind), except a SIGHUP
 * that was ignored when diskgate started (nohup): a blocked signal is delivered even when
 * ignored, so it is left out of the mask; with `reloads` (--config) SIGHUP re-reads the
 * config instead (reload.h) and is always read. SIGPIPE is ignored: sends use
 * MSG_NOSIGNAL, this is for belt and braces. Main thread, before any other thread starts. */
static int serve_signals_open(bool reloads)
{
  struct sigaction hup;
  sigset_t mask;
  int sfd;

  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGUSR2); /* a restart that refuses no connect (reexec.h) */
  if (reloads || (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN)) {
    sigaddset(&mask, SIGHUP); /* not under nohup: a SIGHUP ignored at start stays ignored */
  }
  pthread_sigmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  return sfd < 0 ? -errno : sfd;
}

/* Creates cfg's I/O engine (the threads engine when io_uring is not available; cfg->engine
 * then says so). Returns 0 and *out, or after one line on stderr the exit status 1. */
static int serve_engine_create(struct serve_config *cfg, struct engine **out)
{
  int rc = engine_create(cfg->engine, cfg->threads, out);

  if (rc == -ENOSYS && cfg->engine == ENGINE_URING) {
    log_warn("io_uring is not available here; using the threads engine");
    cfg->engine = ENGINE_THREADS;
    rc = engine_create(cfg->engine, cfg->threads, out);
  }
  if (rc < 0) {
    char text[128];
    fprintf(stderr, "diskgate serve: cannot start the I/O engine: %s\n",
            cli_startup_error(rc, text, sizeof text));
    return 1;
  }
  return 0;
}

/* A connection needs its socket, the accept guard's reserve and, with --tls-psk, the PSK
 * file read in its handshake; without them it would serve and fail every client (EMFILE at
 * accept, or in the TLS handshake). The pid file, written next, keeps one. Returns 0, or
 * after one line on stderr the exit status 1. */
static int serve_check_fd_room(const struct serve_config *cfg)
{
  int need = ACCEPT_GUARD_FDS + 1 + (cfg->tls_psk_file != NULL ? TLS_PSK_LOOKUP_FDS : 0) +
             (cfg->pid_file != NULL ? PID_FILE_FDS : 0);
  int left = fd_budget_left();

  if (left >= 0 && left < need) {
    char text[128];
    fprintf(stderr, "diskgate serve: no open files left for connections: %s\n",
            cli_startup_error(-EMFILE, text, sizeof text));
    return 1;
  }
  return 0;
}

/* Writes --pid-file, if given. A service manager waits for the pid file: without it the
 * server is not started, as qemu-nbd --pid-file exits when it cannot write it. Returns 0,
 * or after one line on stderr an exit status (2: another server took it since
 * pid_file_check, as if it had then; 1: it could not be written). */
static int serve_pid_file_write(const struct serve_config *cfg, struct pid_file *pid_file)
{
  char pid_err[LOG_SHOWN_MAX + 128];
  int rc;

  if (cfg->pid_file == NULL) {
    return 0;
  }
  rc = pid_file_write(pid_file, cfg->pid_file, pid_err, sizeof pid_err);
  if (rc == -EBUSY) {
    fprintf(stderr, "diskgate serve: %s\n", pid_err);
    return 2;
  }
  if (rc < 0) {
    char shown[LOG_SHOWN_MAX], text[128];
    fprintf(stderr, "diskgate serve: cannot write the pid file %s: %s\n",
            log_escape_str(shown, sizeof shown, cfg->pid_file),
            cli_startup_error(rc, text, sizeof text));
    return 1;
  }
  return 0;
}

/* Takes what serving needs after the engine: the pid file's check, the export, the
 * listeners (the NBD ones, the control socket's and the metrics endpoint's), room for a
 * connection, the server, its export table and the pid file. With a config file
 * (cf->nexports > 0) *exports holds its exports and *e is the default one. Returns 0, or
 * after one line on stderr an exit status; on failure the caller releases what *e,
 * ls[0..*nls), *planes and *exports hold (the server needs no release). */
static int serve_start(const struct serve_config *cfg, const struct config_file *cf,
                       struct engine *engine, struct pid_file *pid_file, struct server *server,
                       struct export **e, struct listener *ls, size_t *nls,
                       struct serve_planes *planes, struct export ***exports)
{
  int status, rc;

  if (cfg->pid_file != NULL) {
    char err[LOG_SHOWN_MAX + 128];
    rc = pid_file_check(cfg->pid_file, cfg->path != NULL ? cfg->path : cfg->config_file,
                        cfg->socket_path, err, sizeof err);
    if (rc < 0) {
      fprintf(stderr, "diskgate serve: %s\n", err);
      return cli_startup_status(rc);
    }
  }
  if (cf->nexports > 0) {
    status = serve_exports_open(cf, engine, exports, e); /* *e: the default export */
  } else {
    status = open_export(cfg, engine, e);
  }
  if (status == 0) {
    status = serve_listeners_open(cfg, ls, nls);
  }
  if (status == 0) {
    status = serve_planes_open(cfg, planes);
  }
  if (status == 0) {
    status = serve_check_fd_room(cfg);
  }
  if (status != 0) {
    return status;
  }
  if ((rc = server_init(server)) < 0) {
    fprintf(stderr, "diskgate serve: cannot set up the server: %s\n", strerror(-rc));
    return 1;
  }
  if (cf->nexports == 0 && (*exports = malloc(sizeof **exports)) == NULL) {
    fprintf(stderr, "diskgate serve: out of memory\n");
    return 1;
  }
  return serve_pid_file_write(cfg, pid_file);
}

/* Starts cfg->threads event loops for the server's connections when the engine is
 * io_uring and the open-files limit leaves room for them (the connections come first:
 * fd_budget.h); otherwise, with one log line, connections use threads. */
static void serve_loops_start(const struct serve_config *cfg, struct engine *engine,
                              struct server *server)
{
  if (cfg->engine != ENGINE_URING) {
    return;
  }
  if (!fd_budget_allows(LOOP_FDS * cfg->threads)) {
    char why[128];
    log_warn("%s: connections use threads, not io_uring event loops",
             fd_budget_describe(why, sizeof why));
    return;
  }
  int rc = loop_start_all(cfg->threads, &conn_loop_ops, engine, &server->loops);
  if (rc < 0) {
    log_warn("cannot start the event loops (%s); connections use threads", strerror(-rc));
  } else {
    server->nloops = cfg->threads;
  }
}

/* SIGUSR2: starts a new server with this one's command line (argv, as serve_main got it:
 * argv[-1] is main's argv[0]) that inherits the listeners, so that no connect is refused
 * while this one drains (reexec.h). The control socket and the metrics endpoint stop here
 * (serve_planes.h): systemd's sockets go to the new server with the listeners, the others
 * it binds again. The pid file is left to the new server. Returns 0, or
 * -1 after a log line when it could not start or must not (--snapshot: the overlay's
 * writes cannot move to a new process); this one then goes on serving (the pid file is
 * written again when it was released). On success *new_pid is the new server's pid. Main
 * thread. */
static int serve_hand_over(const struct serve_config *cfg, char **argv, struct listener *ls,
                           size_t nls, struct serve_planes *planes, struct pid_file *pid_file,
                           pid_t *new_pid)
{
  struct listener handed[SERVICE_HANDOVER_MAX], *reserved[2];
  size_t nhanded = nls;
  int fds[SERVICE_HANDOVER_MAX];
  pid_t pid;

  if (cfg->snapshot) {
    /* the overlay is unlinked: a new server would start from an empty one, and the
     * clients would see their writes undone */
    log_warn("SIGUSR2 ignored: under --snapshot a new server cannot take over the "
             "temporary overlay, and the writes in it would be lost; this one goes on "
             "serving");
    return -1;
  }
  memcpy(handed, ls, nls * sizeof ls[0]);
  for (size_t i = 0, n = serve_planes_hand_over(planes, reserved); i < n; i++) {
    handed[nhanded++] = *reserved[i]; /* systemd's control and metrics sockets */
  }
  for (size_t i = 0; i < nhanded; i++) {
    fds[i] = handed[i].fd;
  }
  pid_file_release(pid_file); /* before the new server checks it */
  if (service_restart_env(handed, nhanded) < 0) {
    log_error("cannot start the new server (out of memory); this one goes on serving");
    (void)serve_pid_file_write(cfg, pid_file);
    return -1;
  }
  pid = reexec_spawn(argv - 1, fds, nhanded);
  service_restart_env_clear();
  if (pid < 0) {
    log_error("cannot start the new server (%s); this one goes on serving", strerror(-pid));
    (void)serve_pid_file_write(cfg, pid_file);
    return -1;
  }
  service_notify_mainpid(pid); /* systemd follows the new process (NotifyAccess=all) */
  log_info("the new server (pid %ld) accepts on these listeners from now on", (long)pid);
  *new_pid = pid;
  for (size_t i = 0; i < nls; i++) {
    listen_keep_file(&ls[i]);
  }
  return 0;
}

/* Sets the server's limits and export table from cfg (and cf's exports, with e the default;
 * without a config file e is the one export) and prints the listeners' lines. Main thread,
 * before the event loops start. */
static void serve_publish(struct serve_config *cfg, const struct config_file *cf,
                          struct server *server, struct export **exports, struct export *e,
                          const struct listener *ls, size_t nls)
{
  server->handshake_timeout_s = cfg->handshake_timeout;
  server->max_handshakes = cfg->max_handshakes;
  server->max_connections = cfg->max_connections;
  server->unaligned_error = cfg->unaligned_error;
  server->exports = exports;
  if (cf->nexports > 0) {
    server->nexports = cf->nexports;
    server->default_export = e;
  } else {
    server->exports[0] = e;
    server->nexports = 1;
  }
  server->cap_exports = server->nexports;
  if (cf->nexports > 0) {
    cfg->export_name = e != NULL ? e->name : ""; /* the URIs printed name the default */
  }
  print_listeners(cfg, ls, nls);
  if (cf->nexports > 0) {
    serve_exports_log(cfg, cf);
  } else {
    log_serving(cfg, e);
  }
}

/* Releases what a serve_start that failed had taken: the listeners ls[0..nls), the
 * control and metrics listeners, the config's nexports exports (or, without a config, the
 * one export e). Main thread. */
static void serve_start_undo(struct listener *ls, size_t nls, struct serve_planes *planes,
                             struct export **exports, size_t nexports, struct export *e)
{
  for (size_t i = 0; i < nls; i++) {
    listen_close(&ls[i]);
  }
  serve_planes_close(planes);
  for (size_t i = 0; exports != NULL && i < nexports; i++) {
    export_destroy(exports[i]);
  }
  free(exports);
  if (nexports == 0) {
    export_destroy(e);
  }
}

int serve_main(int argc, char **argv)
{
  struct serve_config cfg = {0};
  struct pid_file pid_file = {0};
  struct server server;
  struct listener ls[LISTEN_MAX];
  struct serve_planes planes = {.control_l.fd = -1, .metrics_l.fd = -1};
  struct engine *engine = NULL;
  struct export *e = NULL;
  struct export **exports = NULL;
  struct config_file cf = {0};
  size_t nls = 0;
  struct reload reload = {.server = &server, .engine = NULL};
  enum server_drain drained;
  pid_t new_pid = 0;
  int status, sfd, sig;

  status = serve_args_parse(argc, argv, &cfg);
  if (status >= 0) {
    return status;
  }
  if (cfg.config_file != NULL) {
    char err[CONFIG_ERROR_MAX];
    if ((status = config_file_read(cfg.config_file, &cfg, &cf, err, sizeof err)) != 0) {
      fprintf(stderr, "diskgate serve: %s\n", err);
      return status;
    }
  }
  /* Request buffers up to 32 MiB come and go with every request: keep them on the heap
   * rather than letting glibc mmap and munmap each large one (a page-fault storm per 1 MiB
   * request). Freed memory above 64 MiB is still returned to the system. */
  mallopt(M_MMAP_THRESHOLD, (int)DG_MAX_PAYLOAD + 4096);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
  serve_raise_fd_limit();
  status = setup_tls(&cfg);
  if (status != 0) {
    config_file_free(&cf);
    return status;
  }
  sfd = serve_signals_open(cfg.config_file != NULL);
  if (sfd < 0) {
    fprintf(stderr, "diskgate serve: signalfd: %s\n", strerror(-sfd));
    tls_server_teardown();
    config_file_free(&cf);
    return 1;
  }
  if (serve_engine_create(&cfg, &engine) != 0) {
    tls_server_teardown();
    config_file_free(&cf);
    close(sfd);
    return 1;
  }
  status = serve_start(&cfg, &cf, engine, &pid_file, &server, &e, ls, &nls, &planes,
                       &exports);
  if (status != 0) {
    serve_start_undo(ls, nls, &planes, exports, cf.nexports, e);
    config_file_free(&cf);
    engine_destroy(engine);
    tls_server_teardown();
    close(sfd);
    return status;
  }
  serve_publish(&cfg, &cf, &server, exports, e, ls, nls);
  serve_planes_start(&planes, &server, engine);
  serve_loops_start(&cfg, engine, &server);
  service_notify_ready();
  service_status_tick(export_table_count(&server), 0);
  reload.config_file = cfg.config_file;
  reload.engine = engine;
  sig = -1;
  while (status == 0) {
    /* it logs why it stopped; under --config SIGHUP reloads instead (reload.h) */
    sig = listen_run(&server, ls, nls, sfd, cfg.config_file != NULL ? &reload : NULL);
    if (sig != SIGUSR2) {
      break;
    }
    if (serve_hand_over(&cfg, argv, ls, nls, &planes, &pid_file, &new_pid) == 0) {
      break;
    }
    serve_planes_resume(&cfg, &planes, &server, engine);
  }
  for (size_t i = 0; i < nls; i++) {
    listen_close(&ls[i]);
  }
  serve_planes_close(&planes); /* their threads read the server: before it goes */
  drained = server_conns_drain(&server);
  if (drained == SERVER_DRAIN_DONE || drained == SERVER_DRAIN_DROPPED) {
    export_table_wait_removals(&server); /* their connections are gone: they end now */
  }
  if (drained == SERVER_DRAIN_ABANDONED || drained == SERVER_DRAIN_ATTACHING) {
    /* A connection thread is blocked (in the backing, or in librados opening the export):
     * it cannot be joined, and exit() would run librados' destructors under it. */
    pid_file_remove(&pid_file);
    fflush(NULL);
    _exit(sig > 0 && drained == SERVER_DRAIN_ATTACHING ? 0 : 1);
  }
  if (server.nloops > 0) {
    loop_stop_all(server.loops, server.nloops);
  }
  server_destroy(&server); /* closes the exports and their backings */
  config_file_free(&cf);
  engine_destroy(engine);
  tls_server_teardown();
  pid_file_remove(&pid_file);
  close(sfd);
  /* The new server opens a writable image once this one has let go of it, and writes the
   * pid file after: whoever reads the pid file once this one has gone finds it there. */
  if (new_pid > 0 && cfg.pid_file != NULL && !pid_file_wait_for(cfg.pid_file, new_pid, 10000)) {
    log_warn("the new server (pid %ld) has not written the pid file in 10 s", (long)new_pid);
  }
  /* 1: stopped by a failure, not by a signal, or replies were dropped */
  return sig > 0 && drained == SERVER_DRAIN_DONE ? 0 : 1;
}
