/* SPDX-License-Identifier: MIT */
/* listen_hosts.h: the hosts a client can reach a TCP listener at, for the URIs printed at
 * start-up. A listener bound to a wildcard address (0.0.0.0, ::) accepts on every address
 * of its family, but no client can connect to the wildcard itself: its URIs name the
 * host's own addresses instead. Main thread. */
#ifndef DISKGATE_SERVER_LISTEN_HOSTS_H
#define DISKGATE_SERVER_LISTEN_HOSTS_H

#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>

/* Most hosts listed for one listener. */
#define LISTEN_HOSTS_MAX 32

/* Bytes of one host: an IPv6 address with a "%zone" (an interface name), NUL-terminated. */
#define LISTEN_HOST_SIZE (INET6_ADDRSTRLEN + IF_NAMESIZE + 1)

/* Fills hosts[0..max) (max >= 1) with the hosts a client reaches the TCP listener `fd` at
 * and returns how many (>= 1). For a listener bound to a wildcard address: the addresses
 * of its family on the interfaces that are up (getifaddrs(3)), loopback first, each once;
 * an IPv6 link-local one with its zone ("fe80::1%eth0"); the loopback address alone when
 * none can be listed. For any other listener: `host` as the operator gave it (an address
 * or a name; cut to LISTEN_HOST_SIZE - 1 bytes). */
size_t listen_hosts_of(int fd, const char *host, char (*hosts)[LISTEN_HOST_SIZE], size_t max);

#endif
