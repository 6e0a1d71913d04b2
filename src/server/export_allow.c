/* SPDX-License-Identifier: MIT */
/* export_allow.c: an export's access list: see export_allow.h. */
#include "server/export_allow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "util/log.h"

enum allow_kind { ALLOW_NET, ALLOW_UNIX, ALLOW_TLS };

struct allow_entry {
  enum allow_kind kind;
  int family;         /* ALLOW_NET: AF_INET or AF_INET6 */
  uint8_t addr[16];   /* ALLOW_NET: network bytes (4 used for IPv4) */
  unsigned bits;      /* ALLOW_NET: prefix length */
  char *name;         /* ALLOW_TLS */
};

struct export_allow {
  size_t n;
  struct allow_entry e[];
};

/* Parses one entry (NUL-terminated word). Returns 0 or -EINVAL / -ENOMEM. */
static int entry_parse(char *word, struct allow_entry *out)
{
  char *slash;
  unsigned max;

  memset(out, 0, sizeof *out);
  if (strcmp(word, "unix") == 0) {
    out->kind = ALLOW_UNIX;
    return 0;
  }
  if (strncmp(word, "tls:", 4) == 0) {
    out->kind = ALLOW_TLS;
    out->name = strdup(word + 4);
    return word[4] == '\0' ? -EINVAL : out->name == NULL ? -ENOMEM : 0;
  }
  out->kind = ALLOW_NET;
  slash = strchr(word, '/');
  if (slash != NULL) {
    *slash = '\0';
  }
  if (inet_pton(AF_INET, word, out->addr) == 1) {
    out->family = AF_INET;
    max = 32;
  } else if (inet_pton(AF_INET6, word, out->addr) == 1) {
    out->family = AF_INET6;
    max = 128;
  } else {
    return -EINVAL;
  }
  out->bits = max;
  if (slash != NULL && cli_parse_unsigned(slash + 1, 0, max, &out->bits) < 0) {
    return -EINVAL;
  }
  return 0;
}

int export_allow_parse(const char *text, struct export_allow **out, char *err, size_t errsize)
{
  size_t cap = 1;
  char *copy = strdup(text), *save = NULL;
  struct export_allow *a;

  if (copy == NULL) {
    return -ENOMEM;
  }
  for (const char *p = text; *p != '\0'; p++) {
    cap += *p == ',' || *p == ' ' || *p == '\t';
  }
  a = calloc(1, sizeof *a + cap * sizeof a->e[0]);
  if (a == NULL) {
    free(copy);
    return -ENOMEM;
  }
  for (char *w = strtok_r(copy, ", \t", &save); w != NULL; w = strtok_r(NULL, ", \t", &save)) {
    char shown[LOG_SHOWN_MAX];
    log_escape_str(shown, sizeof shown, w);
    int rc = entry_parse(w, &a->e[a->n]);
    if (rc < 0) {
      free(a->e[a->n].name);
      snprintf(err, errsize, "'%s' is not an address, ADDR/BITS network, unix or tls:NAME",
               shown);
      export_allow_free(a);
      free(copy);
      return rc;
    }
    a->n++;
  }
  free(copy);
  *out = a;
  return 0;
}

/* True when the first `bits` bits of x and y agree. */
static bool prefix_equal(const uint8_t *x, const uint8_t *y, unsigned bits)
{
  unsigned whole = bits / 8, rest = bits % 8;

  if (memcmp(x, y, whole) != 0) {
    return false;
  }
  return rest == 0 || ((x[whole] ^ y[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* True when net entry e matches the address `addr` (AF_INET or AF_INET6; an IPv4-mapped
 * IPv6 address also matches IPv4 networks). */
static bool net_matches(const struct allow_entry *e, const struct sockaddr *addr)
{
  const uint8_t *bytes;
  int family = addr->sa_family;

  if (family == AF_INET) {
    bytes = (const uint8_t *)&((const struct sockaddr_in *)addr)->sin_addr;
  } else {
    bytes = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
    if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)bytes)) {
      family = AF_INET;
      bytes += 12;
    }
  }
  return family == e->family && prefix_equal(bytes, e->addr, e->bits);
}

bool export_allow_permits(const struct export_allow *a, const struct sockaddr *addr,
                          const char *const *tls_names)
{
  bool is_unix = addr == NULL || addr->sa_family == AF_UNIX;

  if (a == NULL) {
    return true;
  }
  for (size_t i = 0; i < a->n; i++) {
    const struct allow_entry *e = &a->e[i];
    if (e->kind == ALLOW_UNIX && is_unix) {
      return true;
    }
    if (e->kind == ALLOW_NET && !is_unix && net_matches(e, addr)) {
      return true;
    }
    for (size_t t = 0; e->kind == ALLOW_TLS && tls_names != NULL && tls_names[t] != NULL; t++) {
      if (strcmp(tls_names[t], e->name) == 0) {
        return true;
      }
    }
  }
  return false;
}

void export_allow_free(struct export_allow *a)
{
  if (a == NULL) {
    return;
  }
  for (size_t i = 0; i < a->n; i++) {
    free(a->e[i].name);
  }
  free(a);
}
