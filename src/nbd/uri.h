/* SPDX-License-Identifier: MIT */
/* uri.h: NBD URIs for the export a listener serves (doc/uri.md of the NBD project):
 *   nbd://HOST[:PORT]/EXPORT            (IPv6 hosts in brackets)
 *   nbd+unix:///EXPORT?socket=PATH
 * The export name is the path without its leading '/', percent-encoded; the socket path is
 * a percent-encoded query value. Pure functions, any thread. */
#ifndef DISKGATE_NBD_URI_H
#define DISKGATE_NBD_URI_H

#include <stddef.h>

/* Writes the TCP URI into out (NUL-terminated). `host` is an address without brackets.
 * Returns the length written, or -ENAMETOOLONG when out_size is too small. */
int nbd_uri_format_tcp(char *out, size_t out_size, const char *host, unsigned port,
                       const char *export_name);

/* Writes the Unix-socket URI into out. `socket_path` should be absolute.
 * Returns the length written, or -ENAMETOOLONG. */
int nbd_uri_format_unix(char *out, size_t out_size, const char *socket_path,
                        const char *export_name);

#endif
