/* SPDX-License-Identifier: MIT */
/* bench_server.h: starting and stopping the NBD servers under test (diskgate serve, qemu-nbd,
 * nbdkit), listening on a Unix socket in the private directory or on 127.0.0.1 only.
 * Main thread only. */
#ifndef DISKGATE_BENCH_SERVER_H
#define DISKGATE_BENCH_SERVER_H

#include <sys/types.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

#define BENCH_EXPORT "bench"

struct bench_server {
  enum bench_server_kind kind;
  pid_t pid;            /* 0 when not running */
  char sock[108];       /* Unix socket path, "" for TCP */
  int port;             /* TCP port on 127.0.0.1, 0 for Unix */
  char uri[256];        /* NBD URI of the export */
  char log[PATH_MAX];   /* the server's stdout and stderr */
  int metrics_port;     /* --metrics rows (bench_configs_metrics): its port, else 0 */
  pid_t scraper;        /* --metrics rows: the process that GETs /metrics once a second */
};

/* Starts the server of configuration cfg exporting `file` (the test file, a loop device
 * over it for rows with a sector size, or a qcow2 row's image) as "bench" (for guest rows too; the
 * transport is then a Unix socket; RBD rows export the image of bench_rbd_spec() instead)
 * and waits until it accepts connections (its pid file written; for qemu-nbd and nbdkit also
 * a connect() succeeding), at most 15 s. `tag` names the log file
 * (<out>/logs/server-<tag>.log). Returns 0, -ENOENT when the configuration has no server, or
 * -errno (-ETIMEDOUT, -ECHILD when it exited; the log's tail is printed on stderr). */
int bench_server_start(const struct bench_env *env, const struct bench_config *cfg,
                       const char *file, const char *tag, struct bench_server *srv);

/* Waits up to 15 s for the spawned server srv->pid (of row cfg) to be ready: its pid file
 * (pidfile) written and, for qemu-nbd and nbdkit, a connect() to srv->sock or srv->port
 * accepted. Returns 0; -ECHILD when the server exited (srv->pid is then 0); -ETIMEDOUT when
 * it was not ready in time (it is then stopped). Either failure prints a line and the tail
 * of srv->log on stderr. */
int bench_server_wait_ready(const struct bench_config *cfg, const char *pidfile,
                            struct bench_server *srv);

/* Stops a running server with SIGTERM (SIGKILL after 10 s). Returns 0 when it exited with
 * status 0, -EIO when it exited otherwise or had to be killed (a line says how on stderr). */
int bench_server_stop(struct bench_server *srv);

/* Returns a free TCP port on 127.0.0.1 (bound then released), or -errno. */
int bench_server_free_port(void);

#endif
