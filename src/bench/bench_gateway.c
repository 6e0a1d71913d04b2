/* SPDX-License-Identifier: MIT */
/* bench_gateway.c: the gateway rows' export files and servers (see bench_gateway.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/bench_gateway.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"
#include "nbd/uri.h"

/* The pid files of one set of servers, while they start. */
struct pid_files {
  char path[BENCH_GATEWAY_EXPORTS][320]; /* bench_env.work, '/', a name of up to 60 */
};

uint64_t bench_gateway_file_size(const struct bench_opts *opts)
{
  return opts->size < BENCH_GATEWAY_FILE_MAX ? opts->size : BENCH_GATEWAY_FILE_MAX;
}

/* Writes the path of export file i into buf. */
static void file_path(const struct bench_env *env, size_t i, char *buf, size_t len)
{
  bench_fmt(buf, len, "%s/diskgate-bench-gw-%03zu.img", env->dir, i);
}

/* Copies the first `size` bytes of the open file `in` into a new file `path`, synced.
 * Returns 0 or -errno. */
static int copy_head(int in, const char *path, uint64_t size)
{
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  loff_t from = 0;
  int rc = 0;

  if (out < 0) {
    return -errno;
  }
  while ((uint64_t)from < size && rc == 0) {
    ssize_t n = copy_file_range(in, &from, out, NULL, (size_t)(size - (uint64_t)from), 0);

    if (n < 0 && errno != EINTR) {
      rc = -errno;
    } else if (n == 0) {
      rc = -EIO; /* the test file is shorter than it should be */
    }
  }
  if (rc == 0 && fdatasync(out) < 0) {
    rc = -errno;
  }
  if (close(out) < 0 && rc == 0) {
    rc = -errno;
  }
  return rc;
}

int bench_gateway_files(struct bench_env *env)
{
  uint64_t size = bench_gateway_file_size(env->opts);
  uint64_t need = size * BENCH_GATEWAY_EXPORTS;
  struct statvfs vfs;
  char path[PATH_MAX];
  int in, rc = 0;

  if (env->gateway_made > 0) {
    return 0;
  }
  if (statvfs(env->dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < need) {
    fprintf(stderr, "diskgate bench: no room in %s for the gateway's %d files (%llu MiB)\n",
            env->dir, BENCH_GATEWAY_EXPORTS, (unsigned long long)(need >> 20));
    return -ENOSPC;
  }
  in = open(env->file, O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    rc = -errno;
    fprintf(stderr, "diskgate bench: cannot read %s: %s\n", env->file, strerror(-rc));
    return rc;
  }
  fprintf(stderr, "diskgate bench: copying the test file's first %llu MiB into %d export "
                  "files in %s\n",
          (unsigned long long)(size >> 20), BENCH_GATEWAY_EXPORTS, env->dir);
  for (size_t i = 0; i < BENCH_GATEWAY_EXPORTS && rc == 0; i++) {
    file_path(env, i, path, sizeof(path));
    env->gateway_made = (unsigned)i + 1; /* a file begun is a file to remove */
    rc = bench_proc_interrupted() ? -EINTR : copy_head(in, path, size);
    if (rc < 0 && rc != -EINTR) {
      fprintf(stderr, "diskgate bench: cannot write %s: %s\n", path, strerror(-rc));
    }
  }
  close(in);
  return rc;
}

void bench_gateway_cleanup(struct bench_env *env)
{
  char path[PATH_MAX];

  for (size_t i = 0; i < env->gateway_made && !env->opts->keep; i++) {
    file_path(env, i, path, sizeof(path));
    unlink(path);
  }
  env->gateway_made = 0;
}

/* Writes diskgate's config file gw->conf: one Unix socket, the pid file, and one
 * [export gwNNN] per file with the row's --sync and --cache. Returns 0 or -errno. */
static int write_config(const struct bench_env *env, const struct bench_config *cfg,
                        const char *sock, const char *pidfile, struct bench_gateway *gw)
{
  char path[PATH_MAX];
  FILE *f = fopen(gw->conf, "w");
  int rc;

  if (f == NULL) {
    return -errno;
  }
  fprintf(f, "# diskgate bench: %s\n[server]\nsocket = %s\npid-file = %s\n", cfg->name, sock,
          pidfile);
  for (size_t i = 0; i < BENCH_GATEWAY_EXPORTS; i++) {
    file_path(env, i, path, sizeof(path));
    fprintf(f, "\n[export gw%03zu]\npath = %s\nsync = %s\ncache = %s\n", i, path,
            cfg->sync_mode != NULL ? cfg->sync_mode : "full",
            cfg->cache_mode != NULL ? cfg->cache_mode : "direct");
  }
  rc = ferror(f) ? -EIO : 0;
  if (fclose(f) != 0 && rc == 0) {
    rc = -errno;
  }
  return rc;
}

/* Names server i of the set for the run `tag` (its socket, its pid file, the shared log)
 * and export i's URI on it. `one`: the set is one server, srv[0], for every export.
 * Returns 0 or -ENAMETOOLONG. */
static int name_server(const struct bench_env *env, const char *tag, size_t i, bool one,
                       struct bench_gateway *gw, struct pid_files *pf)
{
  struct bench_server *srv = &gw->srv[one ? 0 : i];
  char name[160], export[16];

  bench_fmt(export, sizeof(export), "gw%03zu", i);
  if (i == 0 || !one) {
    srv->kind = one ? BENCH_SERVER_DISKGATE : BENCH_SERVER_QEMU_NBD;
    bench_fmt(name, sizeof(name), "server-%s.log", tag);
    bench_env_out_path(env, "logs", name, srv->log, sizeof(srv->log));
    if (one) {
      bench_fmt(name, sizeof(name), "%s.sock", tag);
    } else {
      bench_fmt(name, sizeof(name), "%s-%03zu.sock", tag, i);
    }
    if (!bench_fmt(srv->sock, sizeof(srv->sock), "%s/%s", env->work, name)) {
      return -ENAMETOOLONG;
    }
    unlink(srv->sock);
    bench_fmt(name, sizeof(name), one ? "srv-%s.pid" : "srv-%s-%03zu.pid", tag, i);
    bench_env_work_path(env, name, pf->path[i], sizeof(pf->path[i]));
    unlink(pf->path[i]);
  }
  if (nbd_uri_format_unix(gw->uri[i], sizeof(gw->uri[i]), srv->sock, export) < 0) {
    return -ENAMETOOLONG;
  }
  gw->uris[i] = gw->uri[i];
  return 0;
}

/* Spawns qemu-nbd for export file i on gw->srv[i] (O_DIRECT and io_uring, as the lab's
 * other qemu-nbd rows). Returns 0 or -errno. */
static int spawn_qemu_nbd(const struct bench_env *env, size_t i, const char *pidfile,
                          struct bench_gateway *gw)
{
  char path[PATH_MAX], export[16];
  struct bench_server *srv = &gw->srv[i];
  char *argv[] = { "qemu-nbd", "-k", srv->sock, "-x", export, "-f", "raw", "--cache=none",
                   "--aio=io_uring", "--persistent", "--shared=8", "--pid-file",
                   (char *)pidfile, path, NULL };

  file_path(env, i, path, sizeof(path));
  bench_fmt(export, sizeof(export), "gw%03zu", i);
  return bench_proc_spawn(argv, srv->log, -1, &srv->pid);
}

/* Spawns every server of gateway row cfg (gw named by name_server). Returns 0 or -errno;
 * the servers spawned so far are in gw->nsrv. */
static int spawn_all(const struct bench_env *env, const struct bench_config *cfg,
                     struct bench_gateway *gw, const struct pid_files *pf)
{
  if (cfg->server == BENCH_SERVER_DISKGATE) {
    char *argv[] = { (char *)bench_variants_binary(cfg, env->self), "serve", "--config",
                     gw->conf, NULL };
    int rc = write_config(env, cfg, gw->srv[0].sock, pf->path[0], gw);

    if (rc == 0) {
      rc = bench_proc_spawn(argv, gw->srv[0].log, -1, &gw->srv[0].pid);
    }
    gw->nsrv = rc == 0 ? 1 : 0;
    return rc;
  }
  for (size_t i = 0; i < BENCH_GATEWAY_EXPORTS; i++) {
    int rc = spawn_qemu_nbd(env, i, pf->path[i], gw);

    if (rc < 0) {
      return rc;
    }
    gw->nsrv = i + 1;
  }
  return 0;
}

int bench_gateway_up(const struct bench_env *env, const struct bench_config *cfg,
                     const char *tag, struct bench_gateway **out)
{
  static struct pid_files pf;
  bool one = cfg->server == BENCH_SERVER_DISKGATE;
  struct bench_gateway *gw;
  char name[160];
  int rc = 0;

  *out = NULL;
  if (cfg->kind != BENCH_CFG_GATEWAY ||
      (cfg->server != BENCH_SERVER_DISKGATE && cfg->server != BENCH_SERVER_QEMU_NBD)) {
    return -EINVAL;
  }
  gw = calloc(1, sizeof(*gw));
  if (gw == NULL) {
    return -ENOMEM;
  }
  if (one) {
    bench_fmt(name, sizeof(name), "gw-%s.conf", tag);
    bench_env_work_path(env, name, gw->conf, sizeof(gw->conf));
  }
  for (size_t i = 0; i < BENCH_GATEWAY_EXPORTS && rc == 0; i++) {
    rc = name_server(env, tag, i, one, gw, &pf);
  }
  if (rc == 0) {
    rc = spawn_all(env, cfg, gw, &pf);
  }
  for (size_t i = 0; i < gw->nsrv && rc == 0; i++) {
    rc = bench_server_wait_ready(cfg, pf.path[i], &gw->srv[i]);
    gw->pids[i] = gw->srv[i].pid;
  }
  if (rc < 0) {
    bench_gateway_down(gw);
    return rc;
  }
  *out = gw;
  return 0;
}

int bench_gateway_down(struct bench_gateway *gw)
{
  int rc = 0;

  if (gw == NULL) {
    return 0;
  }
  for (size_t i = 0; i < gw->nsrv; i++) {
    if (gw->srv[i].pid > 0) {
      kill(gw->srv[i].pid, SIGTERM); /* all at once: each exits while the next is asked */
    }
  }
  for (size_t i = 0; i < gw->nsrv; i++) {
    if (bench_server_stop(&gw->srv[i]) < 0) {
      rc = -EIO;
    }
  }
  if (gw->conf[0] != '\0') {
    unlink(gw->conf);
  }
  free(gw);
  return rc;
}
