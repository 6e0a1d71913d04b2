/* SPDX-License-Identifier: MIT */
/* serve_listeners.h: the listeners `diskgate serve` opens at start-up: inherited from a
 * SIGUSR2 restart (reexec.h), passed by systemd (service.h), or --listen and --socket; and
 * the metrics endpoint's and the control socket's. Main thread, at start-up (and after a
 * restart that failed). */
#ifndef DISKGATE_SERVER_SERVE_LISTENERS_H
#define DISKGATE_SERVER_SERVE_LISTENERS_H

#include <stddef.h>

#include "server/listen.h"
#include "server/serve_args.h"

/* Opens every listener into ls[0..*n) (room for LISTEN_MAX); prints nothing on stdout
 * (the listeners' URIs are printed once start-up has succeeded), so a failure leaves one
 * line on stderr and nothing on stdout. Returns 0 or an exit status (listeners closed). */
int serve_listeners_open(const struct serve_config *cfg, struct listener *ls, size_t *n);

/* The metrics endpoint's listener into *ml: the socket systemd passed as "metrics"
 * (service.h; --metrics is then not bound, with a log line), else --metrics' TCP listener,
 * else none (ml->fd -1). Returns 0, or after one line on stderr the exit status
 * --listen's failures have. Call after serve_listeners_open. */
int serve_metrics_listener_open(const struct serve_config *cfg, struct listener *ml);

/* The control socket's listener into *cl: the socket systemd passed as "control"
 * (service.h; a warning when its mode lets others connect), else --control PATH bound
 * with mode 0600 (a socket there nobody accepts on is replaced), else none (cl->fd -1).
 * Returns 0, or after one line on stderr an exit status (2: another server accepts there,
 * or the path is not a socket; cli_startup_status otherwise). Call after
 * serve_listeners_open. */
int serve_control_listener_open(const struct serve_config *cfg, struct listener *cl);

#endif
