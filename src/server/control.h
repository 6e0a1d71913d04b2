/* SPDX-License-Identifier: MIT */
/* control.h: the control socket (`--control PATH`, `control =` in [server]): a Unix socket,
 * mode 0600, speaking JSON (cJSON), served on its own control-plane thread (DESIGN.md "The
 * gateway"). A client sends one request object per line and gets one reply object per
 * line, until it closes (docs/gateway.md "The control socket"):
 *   {"command":"list"}                -> {"ok":true,"exports":[{name, path, description,
 *                                         read_only, default, attached, allow}...]}
 *   {"command":"stats","name":NAME?}  -> {"ok":true,"exports":[{name, connections,
 *                                         attached, metrics?}...]}
 *   {"command":"add","name":NAME,"path":PATH,"options":{KEY:VALUE...}?}
 *                                      -> {"ok":true}: the export made as an [export NAME]
 *                                         section with those keys (diskgate.conf(5)) would
 *                                         be, published at once (export_table.h)
 *   {"command":"remove","name":NAME,"force":BOOL?}
 *                                      -> {"ok":true,"connections":N,"cut":N,"ms":N} once
 *                                         its clients are drained and its backing closed
 * and for anything else (not JSON, not an object, an unknown command, a line over
 * CONTROL_LINE_MAX bytes, a request cut off by the close) {"ok":false,"error":TEXT} and
 * one log line; an oversized line also closes the connection. */
#ifndef DISKGATE_SERVER_CONTROL_H
#define DISKGATE_SERVER_CONTROL_H

struct server;
struct control;
struct engine;

/* Bytes of one request line, at most. */
#define CONTROL_LINE_MAX 65536
/* Options one `add` may carry, at most. */
#define CONTROL_ADD_KEYS_MAX 32
/* Seconds a control client may take to send a request line. */
#define CONTROL_READ_TIMEOUT_S 5

/* Starts the control-plane thread accepting on `listen_fd` (a listening Unix socket, which
 * stays the caller's: serve_planes.h opens and closes it) for server s, whose added
 * exports use `engine`. Returns 0 and *out, or -ENOMEM / -errno of pipe2 or
 * pthread_create. Main thread, after the server's exports are set. */
int control_start(int listen_fd, struct server *s, struct engine *engine,
                  struct control **out);

/* Stops the thread (after the request it is answering); the listening socket stays open.
 * NULL is a no-op. Main thread, before the server is destroyed. */
void control_stop(struct control *c);

#endif
