/* SPDX-License-Identifier: MIT */
/* transport.h: a connection's byte stream, plain TCP/Unix or TLS (GnuTLS) after
 * NBD_OPT_STARTTLS (doc/proto.md "TLS support"). handshake.c and conn.c read and write
 * only through it; the TLS server configuration (mode, credentials) is in server/tls.h.
 *
 * Threads: during the handshake one thread (the connection's) does everything. During
 * transmission the reader thread is the only one that reads (transport_read_full,
 * transport_discard) and the writer thread the only one that writes
 * (transport_writev_full); that is safe for a plain socket and for a GnuTLS session alike
 * (see tls.c for GnuTLS's documented rule). transport_close runs when both are done.
 * Errors are -errno: -ECONNRESET when the peer closed (cleanly or not), -ETIMEDOUT when
 * SO_RCVTIMEO (the handshake deadline) expired, -EPIPE when the peer is gone on a write,
 * -EBADMSG when a read meets a TLS error (transport_read_error names it), -EPROTO for
 * another TLS protocol failure, other -errno from the socket. */
#ifndef DISKGATE_SERVER_TRANSPORT_H
#define DISKGATE_SERVER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct tls_session; /* tls.c */

struct transport {
  int fd;                   /* the socket; owned by the connection (server.c closes it) */
  struct tls_session *tls;  /* NULL until STARTTLS succeeded */
};

/* Makes `t` a plain transport over the connected socket `fd`. Never fails. Any thread. */
void transport_init(struct transport *t, int fd);

/* True once TLS is up on `t`. Any thread. */
bool transport_is_tls(const struct transport *t);

/* Reads exactly len bytes. Returns 0 or -errno (above). Reader side. */
int transport_read_full(struct transport *t, void *buf, size_t len);

/* Reads and throws away len bytes. Same returns. Reader side. */
int transport_discard(struct transport *t, uint64_t len);

/* What a read's `rc` means, for a log line: with TLS and -EBADMSG, GnuTLS's text of the
 * error (tls_session_read_error), else strerror(-rc). A static string. Reader side. */
const char *transport_read_error(const struct transport *t, int rc);

/* Writes every byte of iov[0..n); may modify iov. Returns 0 or -errno. Never raises
 * SIGPIPE. Writer side (the handshake thread, then the connection's writer thread). */
int transport_writev_full(struct transport *t, struct iovec *iov, int n);

/* Writes len bytes. Same returns and side as transport_writev_full. */
int transport_write_full(struct transport *t, const void *buf, size_t len);

/* Runs the server side of a TLS handshake on the plain transport `t` (after the
 * NBD_REP_ACK to STARTTLS was sent), with the credentials configured by tls_server_set,
 * bounded by timeout_s seconds in all (as well as by SO_RCVTIMEO per read). `peer` names
 * the client in logs. Returns 0 (t now speaks TLS), -ETIMEDOUT, -ECONNRESET, -EPROTO (the
 * handshake or the client's certificate failed; the reason is logged) or -ENOMEM. On
 * failure t stays plain and the connection must be closed. Handshake thread. */
int transport_starttls(struct transport *t, unsigned timeout_s, const char *peer);

/* Ends the transport before the socket is closed: with TLS, sends the TLS close_notify
 * (bounded by a 2 s send timeout) when `bye` is true and the session is healthy, then
 * frees the session. Does not close t->fd. Only thread left on the connection. */
void transport_close(struct transport *t, bool bye);

#endif
