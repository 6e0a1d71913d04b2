/* tls_psk.h: the pre-shared key file of --tls-psk (`username:hexkey` lines, blank lines
 * allowed; the format of nbdkit's and qemu's keys.psk and of GnuTLS's psktool). The file is
 * read again at each lookup, so keys added or removed take effect for the next handshake,
 * as with GnuTLS's own file credentials. Any thread; no state. */
#ifndef DISKGATE_SERVER_TLS_PSK_H
#define DISKGATE_SERVER_TLS_PSK_H

#include <gnutls/gnutls.h>
#include <stddef.h>

/* Usernames longer than this (bytes) are never found. */
#define TLS_PSK_USER_MAX 255

/* Checks every line of the file at `path`. Returns 0 when it is readable and holds at least
 * one `username:hexkey` line (an even number of hex digits, a non-empty username);
 * otherwise -errno (-ENOENT, -EACCES, ... from opening it, -EINVAL for a malformed line or
 * no key) with one line in err naming the file and the line. */
int tls_psk_check_file(const char *path, char *err, size_t errlen);

/* Looks `user` (user_len bytes, not NUL-terminated; may hold any byte) up in the file at
 * `path`. Returns 0 and the key in *key (its bytes allocated with gnutls_malloc, for GnuTLS
 * to free, as gnutls_psk_server_credentials_function2 requires), -ENOENT when no line names
 * the user (malformed lines are skipped: tls_psk_check_file vetted the file at start-up),
 * -errno when the file cannot be opened, -ENOMEM. */
int tls_psk_lookup(const char *path, const unsigned char *user, size_t user_len,
                   gnutls_datum_t *key);

#endif
