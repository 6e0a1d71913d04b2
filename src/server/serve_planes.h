/* SPDX-License-Identifier: MIT */
/* serve_planes.h: the control plane of `diskgate serve` beside its NBD listeners: the
 * control socket (control.h) and the metrics endpoint (metrics_http.h), each on its own
 * thread, over listeners serve_listeners.h opens (systemd's sockets, or --control and
 * --metrics). A SIGUSR2 restart (reexec.h) hands systemd's sockets to the new server with
 * the NBD listeners, so that they never stop accepting; the ones this process bound are
 * closed first, for the new server to bind. Main thread only. */
#ifndef DISKGATE_SERVER_SERVE_PLANES_H
#define DISKGATE_SERVER_SERVE_PLANES_H

#include <stddef.h>

#include "server/listen.h"
#include "server/serve_args.h"

struct server;
struct engine;
struct control;
struct metrics_http;

struct serve_planes {
  struct listener control_l;    /* fd -1: no control socket */
  struct listener metrics_l;    /* fd -1: no metrics endpoint */
  struct control *control;      /* accepting on control_l, or NULL */
  struct metrics_http *metrics; /* accepting on metrics_l, or NULL */
};

/* Opens both listeners (serve_control_listener_open, serve_metrics_listener_open) into p,
 * which need not be initialised. Returns 0, or an exit status after one line on stderr
 * (nothing left open). */
int serve_planes_open(const struct serve_config *cfg, struct serve_planes *p);

/* Starts a thread on each open listener for server s (whose added exports use `engine`);
 * one that cannot start is logged and left off. Sets s->metrics_on when the metrics are
 * served. Before the event loops start (s->metrics_on is read as connections begin). */
void serve_planes_start(struct serve_planes *p, struct server *s, struct engine *engine);

/* Before a hand-over: stops both threads, closes the listeners this process bound (their
 * path and port free for the new server) and puts systemd's into out[0..return) (at most
 * 2), which stay open here. */
size_t serve_planes_hand_over(struct serve_planes *p, struct listener **out);

/* After a hand-over that failed: binds again what serve_planes_hand_over closed and starts
 * the threads again (a failure is logged: serving without it). */
void serve_planes_resume(const struct serve_config *cfg, struct serve_planes *p,
                         struct server *s, struct engine *engine);

/* Stops both threads and closes both listeners (a bound control socket's path removed;
 * systemd's files left in place). Safe on a p that serve_planes_open filled or failed. */
void serve_planes_close(struct serve_planes *p);

#endif
