/* SPDX-License-Identifier: MIT */
/* bench_server.c: start, readiness and stop of diskgate, qemu-nbd and nbdkit. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_configs.h"
#include "bench/bench_proc.h"
#include "bench/bench_rbd.h"
#include "bench/bench_server.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"
#include "nbd/uri.h"

int bench_server_free_port(void)
{
  struct sockaddr_in sa;
  socklen_t len = sizeof(sa);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port;

  if (fd < 0) {
    return -errno;
  }
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
    int err = -errno;

    close(fd);
    return err;
  }
  port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

/* Returns true when a connect() to the server's socket or port succeeds. */
static bool server_accepts(const struct bench_server *srv)
{
  int fd;
  bool ok;

  if (srv->sock[0] != '\0') {
    struct sockaddr_un sa;

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return false;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    bench_fmt(sa.sun_path, sizeof(sa.sun_path), "%s", srv->sock);
    ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
  } else {
    struct sockaddr_in sa;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return false;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)srv->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
  }
  close(fd);
  return ok;
}

/* Prints the last lines of a log file on stderr. */
static void print_log_tail(const char *path)
{
  char buf[2048];
  FILE *f = fopen(path, "r");
  long size;
  size_t n;

  if (f == NULL) {
    return;
  }
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0, SEEK_SET);
  n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  fprintf(stderr, "--- %s (tail)\n%s%s---\n", path, buf, n > 0 && buf[n - 1] != '\n' ? "\n" : "");
}

/* One server's command line and the strings its words point into. */
struct server_launch {
  bool tcp;                  /* NBD over TCP on 127.0.0.1, else over a Unix socket */
  bool rbd;                  /* an RBD row: the server opens spec, not the test file */
  char pidfile[PATH_MAX];    /* written by the server once it is ready */
  char listen[64];           /* TCP only: "127.0.0.1:PORT" (diskgate) */
  char port_s[16];           /* TCP only: the port in decimal (qemu-nbd, nbdkit) */
  char spec[PATH_MAX + 160]; /* RBD only: the image spec of the server's kind */
  char qcache[48];           /* qemu-nbd only: "--cache=MODE" */
  char metrics[64];          /* --metrics rows: "127.0.0.1:PORT" */
  /* the command line, NULL-terminated once complete */
  char *argv[32 + BENCH_VARIANT_MAX_ARGS];
  int argc;                  /* words in argv so far */
};

/* Names the pid file l->pidfile and srv->log for the run named tag, and picks the endpoint:
 * a free TCP port on 127.0.0.1 (srv->port, l->listen, l->port_s) or a Unix socket in the work
 * folder (srv->sock), and srv->uri; a stale pid file or socket is removed. Returns 0, the
 * -errno of the port search (left in srv->port), or -ENAMETOOLONG when the socket's URI does
 * not fit. */
static int server_name_endpoint(const struct bench_env *env, const char *tag,
                                struct bench_server *srv, struct server_launch *l)
{
  char name[64];

  bench_fmt(name, sizeof(name), "srv-%s.pid", tag);
  bench_env_work_path(env, name, l->pidfile, sizeof(l->pidfile));
  unlink(l->pidfile);
  bench_fmt(name, sizeof(name), "server-%s.log", tag);
  bench_env_out_path(env, "logs", name, srv->log, sizeof(srv->log));
  if (l->tcp) {
    srv->port = bench_server_free_port();
    if (srv->port < 0) {
      return srv->port;
    }
    bench_fmt(l->port_s, sizeof(l->port_s), "%d", srv->port);
    bench_fmt(l->listen, sizeof(l->listen), "127.0.0.1:%d", srv->port);
    bench_fmt(srv->uri, sizeof(srv->uri), "nbd://127.0.0.1:%d/%s", srv->port, BENCH_EXPORT);
  } else {
    bench_fmt(srv->sock, sizeof(srv->sock), "%s/%s.sock", env->work, tag);
    unlink(srv->sock);
    /* percent-encoded (doc/uri.md): TMPDIR may hold a space or a '%' */
    if (nbd_uri_format_unix(srv->uri, sizeof(srv->uri), srv->sock, BENCH_EXPORT) < 0) {
      return -ENAMETOOLONG;
    }
  }
  return 0;
}

/* Appends `diskgate serve` with the lab's options for row cfg, then the row's own ARGS, to
 * l->argv. */
static void server_add_diskgate_args(const struct bench_env *env, const struct bench_config *cfg,
                                     const struct bench_server *srv, struct server_launch *l)
{
  l->argv[l->argc++] = (char *)bench_variants_binary(cfg, env->self);
  l->argv[l->argc++] = "serve";
  l->argv[l->argc++] = "--export";
  l->argv[l->argc++] = BENCH_EXPORT;
  l->argv[l->argc++] = l->tcp ? "--listen" : "--socket";
  l->argv[l->argc++] = l->tcp ? l->listen : (char *)srv->sock;
  l->argv[l->argc++] = "--sync";
  l->argv[l->argc++] = (char *)(cfg->sync_mode != NULL ? cfg->sync_mode : "full");
  if (l->rbd) {
    l->argv[l->argc++] = "--ceph-conf";
    l->argv[l->argc++] = (char *)env->ceph_conf;
  } else {
    l->argv[l->argc++] = "--cache";
    l->argv[l->argc++] = (char *)(cfg->cache_mode != NULL ? cfg->cache_mode : "direct");
  }
  if (cfg->kind == BENCH_CFG_QCOW2 || cfg->kind == BENCH_CFG_ASIF) {
    l->argv[l->argc++] = "--format";
    l->argv[l->argc++] = cfg->kind == BENCH_CFG_QCOW2 ? "qcow2" : "asif";
  }
  if (srv->metrics_port > 0) {
    l->argv[l->argc++] = "--metrics";
    l->argv[l->argc++] = l->metrics;
  }
  l->argv[l->argc++] = "--pid-file";
  l->argv[l->argc++] = l->pidfile;
  bench_variants_add_args(cfg, l->argv, &l->argc); /* after the lab's: the last value wins */
}

/* Appends the endpoint of qemu-nbd or nbdkit to l->argv: over TCP, host_opt 127.0.0.1 and
 * -p PORT; over a Unix socket, sock_opt and srv->sock. */
static void server_add_peer_endpoint(const struct bench_server *srv, struct server_launch *l,
                                     const char *host_opt, const char *sock_opt)
{
  if (l->tcp) {
    l->argv[l->argc++] = (char *)host_opt;
    l->argv[l->argc++] = "127.0.0.1";
    l->argv[l->argc++] = "-p";
    l->argv[l->argc++] = l->port_s;
  } else {
    l->argv[l->argc++] = (char *)sock_opt;
    l->argv[l->argc++] = (char *)srv->sock;
  }
}

/* Appends qemu-nbd with the lab's options (raw, or qcow2 for qcow2 rows; the row's cache
 * mode or else none, io_uring but for RBD rows, up to 64 connections) to l->argv. */
static void server_add_qemu_nbd_args(const struct bench_config *cfg,
                                     const struct bench_server *srv, struct server_launch *l)
{
  l->argv[l->argc++] = "qemu-nbd";
  server_add_peer_endpoint(srv, l, "-b", "-k");
  l->argv[l->argc++] = "-x";
  l->argv[l->argc++] = BENCH_EXPORT;
  l->argv[l->argc++] = "-f";
  l->argv[l->argc++] = cfg->kind == BENCH_CFG_QCOW2 ? "qcow2" : "raw";
  /* the row's cache mode (QEMU's names), none by default */
  bench_fmt(l->qcache, sizeof(l->qcache), "--cache=%s",
            cfg->cache_mode != NULL ? cfg->cache_mode : "none");
  l->argv[l->argc++] = l->qcache;
  if (!l->rbd) {
    l->argv[l->argc++] = "--aio=io_uring";
  }
  l->argv[l->argc++] = "--persistent";
  l->argv[l->argc++] = "--shared=64"; /* the scaling profile's most connections */
  l->argv[l->argc++] = "--pid-file";
  l->argv[l->argc++] = l->pidfile;
}

/* Appends nbdkit in the foreground with its file plugin to l->argv (the plugin's argument
 * follows). */
static void server_add_nbdkit_args(const struct bench_server *srv, struct server_launch *l)
{
  l->argv[l->argc++] = "nbdkit";
  l->argv[l->argc++] = "-f";
  server_add_peer_endpoint(srv, l, "-i", "-U");
  l->argv[l->argc++] = "-e";
  l->argv[l->argc++] = BENCH_EXPORT;
  l->argv[l->argc++] = "--pidfile";
  l->argv[l->argc++] = l->pidfile;
  l->argv[l->argc++] = "file";
}

int bench_server_wait_ready(const struct bench_config *cfg, const char *pidfile,
                             struct bench_server *srv)
{
  double deadline = bench_proc_now() + 15.0;

  for (;;) {
    struct stat sb;
    int st;

    if (waitpid(srv->pid, &st, WNOHANG) == srv->pid) {
      srv->pid = 0;
      fprintf(stderr, "diskgate bench: the %s server exited at start (%s %d)\n", cfg->name,
              WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      print_log_tail(srv->log);
      return -ECHILD;
    }
    /* diskgate writes its pid file once its listeners are ready; the peers get a connect()
     * as well, since their pid file is the only promise they make */
    if (stat(pidfile, &sb) == 0 && sb.st_size > 0 &&
        (cfg->server == BENCH_SERVER_DISKGATE || server_accepts(srv))) {
      return 0;
    }
    if (bench_proc_now() > deadline) {
      fprintf(stderr, "diskgate bench: the %s server did not become ready in 15 s\n", cfg->name);
      print_log_tail(srv->log);
      bench_server_stop(srv);
      return -ETIMEDOUT;
    }
    usleep(20000);
  }
}

/* Starts the process that scrapes srv's metrics once a second, as a Prometheus server
 * would, until it is stopped (bench_server_stop) or a scrape fails (its log says so):
 * python3's urllib, so that the lab holds no HTTP code of its own. Returns 0 or -errno. */
static int scraper_start(struct bench_server *srv)
{
  static const char prog[] =
    "import sys, time, urllib.request\n"
    "url = 'http://' + sys.argv[1] + '/metrics'\n"
    "n = 0\n"
    "while True:\n"
    "    with urllib.request.urlopen(url, timeout=5) as r:\n"
    "        if r.status != 200 or b'diskgate_requests_total' not in r.read():\n"
    "            sys.exit('bench scraper: a bad scrape of ' + url)\n"
    "    n += 1\n"
    "    time.sleep(1)\n";
  char addr[64], log[PATH_MAX + 16];
  char *argv[] = {"python3", "-c", (char *)prog, addr, NULL};
  int rc;

  bench_fmt(addr, sizeof(addr), "127.0.0.1:%d", srv->metrics_port);
  bench_fmt(log, sizeof(log), "%s.scrape", srv->log);
  rc = bench_proc_spawn(argv, log, -1, &srv->scraper);
  if (rc < 0) {
    srv->scraper = 0;
  }
  return rc;
}

int bench_server_start(const struct bench_env *env, const struct bench_config *cfg,
                       const char *file, const char *tag, struct bench_server *srv)
{
  struct server_launch l;
  int rc;

  memset(srv, 0, sizeof(*srv));
  srv->kind = cfg->server;
  if (cfg->server == BENCH_SERVER_NONE) {
    return -ENOENT;
  }
  l.tcp = cfg->kind == BENCH_CFG_NBD && cfg->transport == BENCH_TRANSPORT_TCP;
  l.rbd = bench_rbd_is_row(cfg);
  l.argc = 0;
  rc = server_name_endpoint(env, tag, srv, &l);
  if (rc < 0) {
    return rc;
  }
  if (bench_configs_metrics(cfg)) {
    srv->metrics_port = bench_server_free_port();
    if (srv->metrics_port < 0) {
      return srv->metrics_port;
    }
    bench_fmt(l.metrics, sizeof(l.metrics), "127.0.0.1:%d", srv->metrics_port);
  }
  switch (cfg->server) {
  case BENCH_SERVER_DISKGATE:
    server_add_diskgate_args(env, cfg, srv, &l);
    break;
  case BENCH_SERVER_QEMU_NBD:
    server_add_qemu_nbd_args(cfg, srv, &l);
    break;
  case BENCH_SERVER_NBDKIT:
    server_add_nbdkit_args(srv, &l);
    break;
  case BENCH_SERVER_NONE:
    break;
  }
  if (l.rbd) {
    bench_rbd_spec(env, cfg->server, l.spec, sizeof(l.spec));
    l.argv[l.argc++] = l.spec;
  } else {
    l.argv[l.argc++] = (char *)file;
  }
  l.argv[l.argc] = NULL;
  rc = bench_proc_spawn(l.argv, srv->log, -1, &srv->pid);
  if (rc < 0) {
    srv->pid = 0;
    return rc;
  }
  rc = bench_server_wait_ready(cfg, l.pidfile, srv);
  if (rc == 0 && srv->metrics_port > 0) {
    rc = scraper_start(srv);
    if (rc < 0) {
      bench_server_stop(srv);
    }
  }
  return rc;
}

int bench_server_stop(struct bench_server *srv)
{
  int st = 0;
  int rc;

  if (srv->scraper > 0) {
    (void)bench_proc_stop(srv->scraper, 5.0, &st); /* killed by SIGTERM: not a failure */
    srv->scraper = 0;
  }
  if (srv->pid <= 0) {
    return 0;
  }
  rc = bench_proc_stop(srv->pid, 10.0, &st);
  srv->pid = 0;
  if (srv->sock[0] != '\0') {
    unlink(srv->sock);
  }
  if (rc == -ETIMEDOUT) {
    fprintf(stderr, "diskgate bench: a server ignored SIGTERM for 10 s and was killed (log %s)\n",
            srv->log);
    return -EIO;
  }
  if (rc < 0) {
    return rc;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    /* qemu-nbd and nbdkit exit 0 on SIGTERM too */
    fprintf(stderr, "diskgate bench: a server exited with %s %d after SIGTERM (log %s)\n",
            WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
            srv->log);
    return -EIO;
  }
  return 0;
}
