/* SPDX-License-Identifier: MIT */
/* export_allow.h: an export's access list (`allow =` in a config file, diskgate.conf(5)):
 * which clients may learn of and use the export. Entries, separated by commas or spaces:
 * an IPv4 or IPv6 address, a network in CIDR form (ADDR/BITS), `unix` (clients of a Unix
 * socket listener), and `tls:NAME` (a TLS client whose PSK identity, certificate common
 * name or certificate DN is NAME). A client passes when any entry matches. Built on the
 * main thread, then read-only: any thread may check it. */
#ifndef DISKGATE_SERVER_EXPORT_ALLOW_H
#define DISKGATE_SERVER_EXPORT_ALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct export_allow;

/* Parses `text`. Returns 0 and *out (free with export_allow_free), or -EINVAL with the bad
 * entry named in err (escaped), or -ENOMEM. Main thread. */
int export_allow_parse(const char *text, struct export_allow **out, char *err, size_t errsize);

/* True when the client at `addr` (NULL or AF_UNIX: a Unix socket client), with TLS names
 * `tls_names` (NULL-terminated; NULL or empty without TLS), may use the export. A NULL
 * allow list permits everyone. Any thread. */
bool export_allow_permits(const struct export_allow *a, const struct sockaddr *addr,
                          const char *const *tls_names);

void export_allow_free(struct export_allow *a);

#endif
