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

int bench_server_start(const struct bench_env *env, const struct bench_config *cfg,
                       const char *file, const char *tag, struct bench_server *srv)
{
  char pidfile[PATH_MAX], name[64], listen[64], port_s[16], spec[PATH_MAX + 160], qcache[48];
  char *argv[32 + BENCH_VARIANT_MAX_ARGS];
  bool tcp = cfg->kind == BENCH_CFG_NBD && cfg->transport == BENCH_TRANSPORT_TCP;
  bool rbd = bench_rbd_is_row(cfg);
  double deadline;
  int argc = 0, rc;

  memset(srv, 0, sizeof(*srv));
  srv->kind = cfg->server;
  if (cfg->server == BENCH_SERVER_NONE) {
    return -ENOENT;
  }
  bench_fmt(name, sizeof(name), "srv-%s.pid", tag);
  bench_env_work_path(env, name, pidfile, sizeof(pidfile));
  unlink(pidfile);
  bench_fmt(name, sizeof(name), "server-%s.log", tag);
  bench_env_out_path(env, "logs", name, srv->log, sizeof(srv->log));
  if (tcp) {
    srv->port = bench_server_free_port();
    if (srv->port < 0) {
      return srv->port;
    }
    bench_fmt(port_s, sizeof(port_s), "%d", srv->port);
    bench_fmt(listen, sizeof(listen), "127.0.0.1:%d", srv->port);
    bench_fmt(srv->uri, sizeof(srv->uri), "nbd://127.0.0.1:%d/%s", srv->port, BENCH_EXPORT);
  } else {
    bench_fmt(srv->sock, sizeof(srv->sock), "%s/%s.sock", env->work, tag);
    unlink(srv->sock);
    /* percent-encoded (doc/uri.md): TMPDIR may hold a space or a '%' */
    if (nbd_uri_format_unix(srv->uri, sizeof(srv->uri), srv->sock, BENCH_EXPORT) < 0) {
      return -ENAMETOOLONG;
    }
  }
  switch (cfg->server) {
  case BENCH_SERVER_DISKGATE:
    argv[argc++] = (char *)bench_variants_binary(cfg, env->self);
    argv[argc++] = "serve";
    argv[argc++] = "--export";
    argv[argc++] = BENCH_EXPORT;
    argv[argc++] = tcp ? "--listen" : "--socket";
    argv[argc++] = tcp ? listen : srv->sock;
    argv[argc++] = "--sync";
    argv[argc++] = (char *)(cfg->sync_mode != NULL ? cfg->sync_mode : "full");
    if (rbd) {
      argv[argc++] = "--ceph-conf";
      argv[argc++] = (char *)env->ceph_conf;
    } else {
      argv[argc++] = "--cache";
      argv[argc++] = (char *)(cfg->cache_mode != NULL ? cfg->cache_mode : "direct");
    }
    argv[argc++] = "--pid-file";
    argv[argc++] = pidfile;
    bench_variants_add_args(cfg, argv, &argc); /* after the lab's: the last value wins */
    break;
  case BENCH_SERVER_QEMU_NBD:
    argv[argc++] = "qemu-nbd";
    if (tcp) {
      argv[argc++] = "-b";
      argv[argc++] = "127.0.0.1";
      argv[argc++] = "-p";
      argv[argc++] = port_s;
    } else {
      argv[argc++] = "-k";
      argv[argc++] = srv->sock;
    }
    argv[argc++] = "-x";
    argv[argc++] = BENCH_EXPORT;
    argv[argc++] = "-f";
    argv[argc++] = "raw";
    /* the row's cache mode (QEMU's names), none by default */
    bench_fmt(qcache, sizeof(qcache), "--cache=%s",
              cfg->cache_mode != NULL ? cfg->cache_mode : "none");
    argv[argc++] = qcache;
    if (!rbd) {
      argv[argc++] = "--aio=io_uring";
    }
    argv[argc++] = "--persistent";
    argv[argc++] = "--shared=64"; /* the scaling profile's most connections */
    argv[argc++] = "--pid-file";
    argv[argc++] = pidfile;
    break;
  case BENCH_SERVER_NBDKIT:
    argv[argc++] = "nbdkit";
    argv[argc++] = "-f";
    if (tcp) {
      argv[argc++] = "-i";
      argv[argc++] = "127.0.0.1";
      argv[argc++] = "-p";
      argv[argc++] = port_s;
    } else {
      argv[argc++] = "-U";
      argv[argc++] = srv->sock;
    }
    argv[argc++] = "-e";
    argv[argc++] = BENCH_EXPORT;
    argv[argc++] = "--pidfile";
    argv[argc++] = pidfile;
    argv[argc++] = "file";
    break;
  case BENCH_SERVER_NONE:
    break;
  }
  if (rbd) {
    bench_rbd_spec(env, cfg->server, spec, sizeof(spec));
    argv[argc++] = spec;
  } else {
    argv[argc++] = (char *)file;
  }
  argv[argc] = NULL;
  rc = bench_proc_spawn(argv, srv->log, -1, &srv->pid);
  if (rc < 0) {
    srv->pid = 0;
    return rc;
  }
  deadline = bench_proc_now() + 15.0;
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

int bench_server_stop(struct bench_server *srv)
{
  int st = 0;
  int rc;

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
