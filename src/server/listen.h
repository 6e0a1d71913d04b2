/* SPDX-License-Identifier: MIT */
/* listen.h: the listening sockets (TCP on a host:port, or a Unix socket path) and the
 * accept loop. Main thread only. */
#ifndef DISKGATE_SERVER_LISTEN_H
#define DISKGATE_SERVER_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

#include "server/server.h"
#include "util/file_ident.h"

struct reload;

#define LISTEN_MAX 4

struct listener {
  int fd;
  char *unix_path; /* owned; NULL for TCP. Unlinked on close if it still names */
  struct file_ident unix_file; /* the socket file bound (not one bound there since) */
  char host[256];  /* TCP: the host as given (an address or a name) */
  unsigned port;   /* TCP: the port bound (resolved when 0 was asked) */
  char name[64];   /* systemd's FileDescriptorName for a passed socket (service.h), or "" */
  bool keep_file;  /* the Unix socket file is not ours (systemd's): left in place at close */
};

/* Splits "HOST:PORT", "[V6]:PORT", "HOST" or ":PORT" (bytes of text; default port 10809,
 * default host 127.0.0.1). HOST is an address or a name. A bare number ("10809") is refused:
 * it is a port without its host. So is "": no address at all. Returns 0, or -EINVAL naming
 * nothing (the caller prints the text). */
int listen_parse_address(const char *text, char *host, size_t host_size, unsigned *port);

/* Binds and listens on TCP host:port; a host name is resolved (getaddrinfo) and the first of
 * its addresses that binds is used. Returns 0, or -errno: the first address's bind error
 * (-EADDRINUSE, -EADDRNOTAVAIL, ...) when none binds, -ENOENT when the host does not
 * resolve, -EAGAIN when the resolver failed for now, -EMFILE/-ENFILE/-ENOMEM when it ran
 * out of files or memory, -EINVAL for other getaddrinfo errors. */
int listen_open_tcp(struct listener *l, const char *host, unsigned port);

/* Binds and listens on a Unix socket at `path`, replacing a stale socket file but refusing
 * one that a live server still accepts on (-EADDRINUSE) and anything at the path that is
 * not a socket (-EEXIST: a regular file, a link, a directory is never removed).
 * Returns 0 or -errno. */
int listen_open_unix(struct listener *l, const char *path);

/* Takes `fd`, a listening socket inherited from the process this one replaces (reexec.h),
 * as listener l: TCP on `host` (as given on the command line) when unix_path is NULL, else
 * the Unix socket at unix_path (its file is removed at close as for listen_open_unix).
 * Returns 0, or -EINVAL when fd is not of that kind (fd is then left open), -ENOMEM. */
int listen_adopt(struct listener *l, int fd, const char *host, const char *unix_path);

/* Forgets a Unix listener's socket file, so that listen_close leaves it in place: a new
 * process accepts on this socket now (reexec.h). */
void listen_keep_file(struct listener *l);

/* Accepts connections on the listeners and hands them to the server until a signal in
 * `stop_fd` (a signalfd) arrives. Returns the signal number (> 0), or -errno when it can
 * no longer wait for connections (poll(2) failed other than with EINTR or ENOMEM, which
 * are retried); logs which, in one line. When it cannot take connections (out of
 * descriptors, threads or memory, or at a limit), accept_guard.h and admit.h say what it
 * does. With `reload` (--config), SIGHUP re-reads the config (reload.h) and the server
 * goes on. Main thread. */
int listen_run(struct server *s, struct listener *ls, size_t n, int stop_fd,
               const struct reload *reload);

/* Closes a listener; for a Unix socket, also removes the socket file if the path still
 * names the one this listener bound (not one that replaced it since) and keep_file is
 * false. Main thread. */
void listen_close(struct listener *l);

#endif
