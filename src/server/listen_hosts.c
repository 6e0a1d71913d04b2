/* SPDX-License-Identifier: MIT */
/* listen_hosts.c: see listen_hosts.h. */
#include "server/listen_hosts.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ifaddrs.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* The family of the wildcard address `fd` is bound to (AF_INET or AF_INET6), or 0 when it
 * is bound to a specific address (or getsockname fails). */
static int wildcard_family(int fd)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;

  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
    return 0;
  }
  if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;
    return sin->sin_addr.s_addr == htonl(INADDR_ANY) ? AF_INET : 0;
  }
  if (ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;
    return IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) ? AF_INET6 : 0;
  }
  return 0;
}

/* Writes ifa's address as text into out; returns false when it is not one to list. */
static bool host_text(const struct ifaddrs *ifa, int family, char *out)
{
  if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family ||
      !(ifa->ifa_flags & IFF_UP)) {
    return false;
  }
  if (family == AF_INET) {
    const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;
    return inet_ntop(AF_INET, &sin->sin_addr, out, LISTEN_HOST_SIZE) != NULL;
  }
  const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ifa->ifa_addr;
  if (inet_ntop(AF_INET6, &sin6->sin6_addr, out, INET6_ADDRSTRLEN) == NULL) {
    return false;
  }
  if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) {
    size_t n = strlen(out);
    snprintf(out + n, LISTEN_HOST_SIZE - n, "%%%s", ifa->ifa_name);
  }
  return true;
}

size_t listen_hosts_of(int fd, const char *host, char (*hosts)[LISTEN_HOST_SIZE], size_t max)
{
  int family = wildcard_family(fd);
  struct ifaddrs *list = NULL;
  size_t n = 0;

  assert(max >= 1);
  if (family == 0) {
    snprintf(hosts[0], LISTEN_HOST_SIZE, "%s", host);
    return 1;
  }
  if (getifaddrs(&list) == 0) {
    /* two passes: loopback first (the address a local client uses), then the others */
    for (int pass = 0; pass < 2; pass++) {
      for (const struct ifaddrs *ifa = list; ifa != NULL && n < max; ifa = ifa->ifa_next) {
        bool loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
        bool seen = false;
        if (loopback != (pass == 0) || !host_text(ifa, family, hosts[n])) {
          continue;
        }
        for (size_t i = 0; i < n && !seen; i++) {
          seen = strcmp(hosts[i], hosts[n]) == 0;
        }
        n += seen ? 0 : 1;
      }
    }
    freeifaddrs(list);
  }
  if (n == 0) {
    snprintf(hosts[0], LISTEN_HOST_SIZE, "%s", family == AF_INET ? "127.0.0.1" : "::1");
    n = 1;
  }
  return n;
}
