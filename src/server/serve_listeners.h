/* SPDX-License-Identifier: MIT */
/* serve_listeners.h: the listeners `diskgate serve` opens at start-up: inherited from a
 * SIGUSR2 restart (reexec.h), passed by systemd (service.h), or --listen and --socket; and
 * --metrics' TCP listener. Main thread, at start-up. */
#ifndef DISKGATE_SERVER_SERVE_LISTENERS_H
#define DISKGATE_SERVER_SERVE_LISTENERS_H

#include <stddef.h>

#include "server/listen.h"
#include "server/serve_args.h"

/* Opens every listener into ls[0..*n) (room for LISTEN_MAX); prints nothing on stdout
 * (the listeners' URIs are printed once start-up has succeeded), so a failure leaves one
 * line on stderr and nothing on stdout. Returns 0 or an exit status (listeners closed). */
int serve_listeners_open(const struct serve_config *cfg, struct listener *ls, size_t *n);

/* Opens --metrics' TCP listener into *ml (ml->fd -1 without --metrics). Returns 0, or
 * after one line on stderr the exit status --listen's failures have. */
int serve_metrics_listener_open(const struct serve_config *cfg, struct listener *ml);

#endif
