/* SPDX-License-Identifier: MIT */
/* service.h: running under systemd (docs/systemd.md). Socket activation: the listening
 * sockets systemd passes (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES; sd_listen_fds(3)) are
 * taken once at start-up and sorted by their FileDescriptorName:
 *   - "control": the control socket (a Unix stream socket), kept for
 *     service_listener_take("control") and served instead of --control;
 *   - "metrics": the metrics endpoint (a TCP stream socket), kept for
 *     service_listener_take("metrics") and served instead of --metrics;
 *   - any other name (systemd's default is "unknown"; the shipped units use "nbd"): an NBD
 *     listener, TCP or Unix, told apart by getsockname(2).
 * Readiness and state go to systemd through sd_notify(3): READY=1, STATUS=, RELOADING=1,
 * STOPPING=1, MAINPID=. Every function here does nothing (and costs a getenv) when the
 * process was not started by systemd (no NOTIFY_SOCKET, no LISTEN_PID). Main thread only,
 * unless a function says otherwise. Source: sd_listen_fds_with_names(3), sd_notify(3),
 * systemd.socket(5), systemd.service(5) Type=notify and Type=notify-reload. */
#ifndef DISKGATE_SERVER_SERVICE_H
#define DISKGATE_SERVER_SERVICE_H

#include <stddef.h>
#include <sys/types.h>

#include "server/listen.h"

/* The names reserved for sockets that are not NBD listeners. */
#define SERVICE_NAME_CONTROL "control"
#define SERVICE_NAME_METRICS "metrics"
/* Sockets a restart hands over, at most: the NBD listeners and the reserved ones. */
#define SERVICE_HANDOVER_MAX (LISTEN_MAX + 2)

/* Takes the sockets systemd passed: adopts those for NBD as listeners ls[0..*n) (at most
 * `max`; listen.h, their Unix socket files left in place at close: systemd owns them) and
 * keeps the reserved ones for service_listener_take. Logs one line per socket (its name and
 * address). Returns 0 (with *n = 0 when the process was not socket-activated), or -EINVAL
 * after ONE line on stderr naming the socket that cannot be used (not a stream socket, not
 * listening, not TCP or Unix, more than `max`, a reserved name twice or of the wrong
 * family, or no NBD listener at all); every passed socket is then closed. -errno from
 * sd_listen_fds_with_names likewise. Also sets the names for a later restart
 * (service_restart_env). */
int service_listeners_take_all(struct listener *ls, size_t max, size_t *n);

/* The socket passed under the reserved `name` (SERVICE_NAME_CONTROL: a Unix socket,
 * SERVICE_NAME_METRICS: TCP) as listener *l (listen.h: close-on-exec, l->name = name, its
 * Unix socket file left in place at close), now owned by the caller: returns 0; or
 * -ENOENT when systemd passed none by that name (or it was taken already), l untouched.
 * Call after service_listeners_take_all or service_listeners_adopt_restart. */
int service_listener_take(const char *name, struct listener *l);

/* Before a restart (reexec.h) of a socket-activated server: sets DISKGATE_LISTEN_FDNAMES
 * in this process's environment to the names of ls[0..n) (n <= SERVICE_HANDOVER_MAX: the
 * NBD listeners, then the reserved ones taken from systemd; colon-separated, as
 * LISTEN_FDNAMES), so that the new process knows its inherited sockets came from systemd
 * and keeps them as they are rather than matching them to --listen and --socket. Does
 * nothing when this process was not socket-activated. Returns 0 or -ENOMEM. */
int service_restart_env(const struct listener *ls, size_t n);

/* Clears what service_restart_env set (after the new process has started, or failed to). */
void service_restart_env_clear(void);

/* In a process started by a restart (reexec.h), the names passed by service_restart_env
 * for the inherited fds[0..n) (n <= SERVICE_HANDOVER_MAX): adopts the NBD ones as
 * listeners ls[0..*nls) (at most LISTEN_MAX) and keeps the reserved ones, as
 * service_listeners_take_all does. Returns 1 when they were (the variable was set), 0 when
 * the variable is not set (the caller matches the fds to its command line), -EINVAL after
 * one line on stderr. */
int service_listeners_adopt_restart(const int *fds, size_t n, struct listener *ls,
                                    size_t *nls);

/* sd_notify READY=1 with the current STATUS=: start-up is done (listeners and exports
 * open), or a reload has finished. */
void service_notify_ready(void);

/* sd_notify RELOADING=1 with MONOTONIC_USEC= (CLOCK_MONOTONIC in microseconds, which
 * systemd 253+ asks of Type=notify-reload; earlier versions ignore it): a reload (SIGHUP,
 * re-reading the config) has started; service_notify_ready ends it. */
void service_notify_reloading(void);

/* sd_notify STOPPING=1: the server has stopped accepting and drains its connections. */
void service_notify_stopping(void);

/* sd_notify MAINPID=pid: after a restart (SIGUSR2) the new process `pid` is the service's
 * main process (the unit needs NotifyAccess=all for its READY=1). */
void service_notify_mainpid(pid_t pid);

/* STATUS="serving N export(s), M connection(s)": sent when either number changed since the
 * last one sent, at most once a second (a change is then sent by a later call). Cheap when
 * nothing changed; the caller calls it about once a second (listen_run's poll). */
void service_status_tick(size_t nexports, unsigned nconns);

/* sd_notify WATCHDOG=1 when systemd asked for it (WatchdogSec=, seen as WATCHDOG_USEC) and
 * half the interval has passed since the last: the accept loop calls it about once a
 * second, so a main thread that stops taking connections stops the pings and systemd
 * restarts the service (an interval under 2 s cannot be kept). Main thread. */
void service_watchdog_tick(void);

#endif
