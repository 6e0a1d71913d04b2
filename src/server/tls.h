/* SPDX-License-Identifier: MIT */
/* tls.h: the server's TLS configuration (doc/proto.md "TLS support") and GnuTLS sessions.
 *
 * Modes, as the spec names them:
 *   TLS_MODE_OFF      NOTLS: STARTTLS gets NBD_REP_ERR_POLICY; TLS_REQD is never sent.
 *   TLS_MODE_ON       SELECTIVETLS with no TLS-only export: STARTTLS upgrades, but every
 *                     option also works without it (TLS_REQD is never sent).
 *   TLS_MODE_REQUIRE  FORCEDTLS: every option but STARTTLS and ABORT gets
 *                     NBD_REP_ERR_TLS_REQD until TLS is up.
 * Credentials are X.509 (a directory in the layout of qemu's tls-creds-x509 and nbdkit's
 * --tls-certificates: server-cert.pem, server-key.pem, optional ca-cert.pem (then client
 * certificates are required and verified) and ca-crl.pem), or a PSK file (nbdkit's
 * --tls-psk: `username:hexkey` lines), not both.
 *
 * The configuration is process-wide: tls_server_setup runs once on the main thread before
 * any connection is accepted, is read-only afterwards, and tls_server_teardown runs after
 * every connection ended (server.h's struct server does not carry it). */
#ifndef DISKGATE_SERVER_TLS_H
#define DISKGATE_SERVER_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

enum tls_mode { TLS_MODE_OFF, TLS_MODE_ON, TLS_MODE_REQUIRE };

/* Parses "off", "on" or "require". Returns 0 or -EINVAL. Any thread. */
int tls_mode_parse(const char *text, enum tls_mode *out);

/* "off", "on" or "require". Any thread. */
const char *tls_mode_name(enum tls_mode mode);

/* Validates the combination and loads the credentials: `cert_dir` and `psk_file` may be
 * NULL. Returns 0, or -errno with one line (no newline, no prefix) naming the problem in
 * err[errlen]: a mode other than off without credentials, both kinds of credentials,
 * credentials with mode off, a missing or unreadable file, a file GnuTLS refuses (bad PEM,
 * a key that does not match its certificate, a malformed PSK line). Main thread, once. */
int tls_server_setup(enum tls_mode mode, const char *cert_dir, const char *psk_file,
                     char *err, size_t errlen);

/* The configured mode (TLS_MODE_OFF before tls_server_setup). Any thread. */
enum tls_mode tls_server_mode(void);

/* One line describing the configuration for the start-up log, e.g. "TLS require
 * (X.509, client certificates verified)". Any thread. */
const char *tls_server_describe(void);

/* Frees the credentials. Main thread, after every connection ended. */
void tls_server_teardown(void);

/* Shutdown: from now on a TLS session's reader ends (-ECONNRESET) when it would wait for
 * data, and the end of the stream the caller then makes with shutdown(SHUT_RD) is not taken
 * for a truncated TLS stream, which would invalidate the session: the replies in flight
 * and the close_notify still go out. Call it before that shutdown(SHUT_RD). Main thread,
 * once; readers see it on any thread. */
void tls_readers_stop(void);

struct tls_session;

/* Runs the server side of a TLS handshake on the connected socket `fd`, bounded by
 * timeout_s seconds in all. Returns 0 with a new session in *out, or -ETIMEDOUT,
 * -ECONNRESET, -EPROTO (handshake or client certificate refused; logged with `peer`),
 * -ENOMEM. Handshake thread. */
int tls_session_start(int fd, unsigned timeout_s, const char *peer, struct tls_session **out);

/* Reads exactly len bytes of application data. Returns 0, -ECONNRESET (the peer closed,
 * with or without close_notify), -ETIMEDOUT (SO_RCVTIMEO), -EBADMSG (a TLS error: a
 * record that fails to decrypt or authenticate, an unexpected message, a fatal alert;
 * tls_session_read_error names it) or -ENOMEM. Reader side. */
int tls_session_read_full(struct tls_session *s, void *buf, size_t len);

/* The GnuTLS text of the error behind tls_session_read_full's last -EBADMSG (a static
 * string), or "no TLS error". Reader side. */
const char *tls_session_read_error(const struct tls_session *s);

/* Writes every byte of iov[0..n), packing small pieces into full TLS records. Returns 0,
 * -EPIPE (the peer is gone), -ETIMEDOUT, -EPROTO or -ENOMEM. Writer side. */
int tls_session_writev_full(struct tls_session *s, const struct iovec *iov, int n);

/* Sends close_notify when `bye` is true and no fatal TLS error was seen, with sends on the
 * session's socket bounded to 2 s, then frees the session (s may be NULL). Only thread
 * left on the connection. */
void tls_session_end(struct tls_session *s, bool bye);

/* Bytes of one name tls_session_peer_names gives, NUL included. */
#define TLS_NAME_MAX 256

/* The names the client proved in the TLS handshake, for access lists (export_allow.h): its
 * PSK identity (when the PSK file holds it), its certificate's DN and common name (only
 * when ca-cert.pem made the server verify it). Returns how many were written (<= max).
 * The connection's handshake thread, after TLS is up. */
size_t tls_session_peer_names(struct tls_session *s, char names[][TLS_NAME_MAX], size_t max);

#endif
