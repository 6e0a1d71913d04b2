/* SPDX-License-Identifier: MIT */
/* tls_psk.h: the pre-shared key file of --tls-psk: `username:hexkey` lines, blank lines
 * allowed; a username written as `#HEX` is those bytes (the format of GnuTLS's psktool and
 * gnutls_psk_set_server_credentials_file, which nbdkit's and qemu's keys.psk follow). The
 * file is read again at each lookup, so keys added or removed take effect at the next
 * handshake, as with GnuTLS's own file credentials. The file's bytes are wiped from memory
 * after each read. Any thread; no state. */
#ifndef DISKGATE_SERVER_TLS_PSK_H
#define DISKGATE_SERVER_TLS_PSK_H

#include <gnutls/gnutls.h>
#include <stddef.h>

/* Largest key file read (bytes): a bigger one is an error (-EFBIG). */
#define TLS_PSK_FILE_MAX (1u << 20)

/* Checks every line of the file at `path`. Returns 0 when it is readable and holds at least
 * one `username:hexkey` line (a non-empty username, `#` and an even number of hex digits
 * for a hex one; an even number of hex digits for the key); otherwise -errno (-ENOENT,
 * -EACCES, -EFBIG, ... from reading it, -EINVAL for a malformed line or no key) with one
 * line in err naming the file and the line. */
int tls_psk_check_file(const char *path, char *err, size_t errlen);

/* The descriptors tls_psk_lookup_key holds while it reads the file (a count). */
#define TLS_PSK_LOOKUP_FDS 1

/* Looks `user` (user_len bytes, not NUL-terminated; may hold any byte) up in the file at
 * `path`. Returns 0 and the key in *key (its bytes allocated with gnutls_malloc, for GnuTLS
 * to free, as gnutls_psk_server_credentials_function2 requires); -ESRCH when no line names
 * the user (malformed lines are skipped: tls_psk_check_file vetted the file at start-up);
 * -errno when the file cannot be read (-ENOENT, -EACCES, -EFBIG, -EAGAIN when it changed
 * while read, ...); -ENOMEM. */
int tls_psk_lookup_key(const char *path, const unsigned char *user, size_t user_len,
                       gnutls_datum_t *key);

#endif
