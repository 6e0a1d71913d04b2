/* SPDX-License-Identifier: MIT */
/* metrics_http.h: --metrics HOST:PORT: GET /metrics over HTTP (libmicrohttpd, on its own
 * internal thread, never an event loop's), the text of metrics_render; 404 elsewhere,
 * 405 for methods other than GET and HEAD. */
#ifndef DISKGATE_SERVER_METRICS_HTTP_H
#define DISKGATE_SERVER_METRICS_HTTP_H

struct server;
struct metrics_http;

/* Serves s's metrics on `listen_fd`, a listening TCP socket that stays the caller's
 * (serve_planes.h opens and closes it). Returns 0 and *out, or -ENOMEM / -EIO (the HTTP
 * daemon could not start). Main thread. */
int metrics_http_start(struct server *s, int listen_fd, struct metrics_http **out);

/* Stops serving (waits for a scrape in progress); the caller's socket stays open and
 * listening. NULL is a no-op. Main thread, before the server is destroyed. */
void metrics_http_stop(struct metrics_http *m);

#endif
