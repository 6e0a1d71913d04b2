/* SPDX-License-Identifier: MIT */
/* tls_psk.c: see tls_psk.h. */
#include "server/tls_psk.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file_read.h"

struct psk_line {
  const char *user; /* the username as written (after '#' for a hex one) */
  size_t user_len;
  bool user_hex;    /* written as #HEX */
  const char *key;  /* the key's hex digits */
  size_t key_len;
};

static bool all_hex(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (!isxdigit((unsigned char)s[i])) {
      return false;
    }
  }
  return true;
}

/* Splits one line (len bytes, its end of line cut) into *out. Returns false when it is not
 * `username:hexkey`. */
static bool psk_line_split(const char *line, size_t len, struct psk_line *out)
{
  const char *colon = memchr(line, ':', len);

  if (colon == NULL || colon == line) {
    return false;
  }
  out->user_hex = line[0] == '#';
  out->user = line + (out->user_hex ? 1 : 0);
  out->user_len = (size_t)(colon - out->user);
  out->key = colon + 1;
  out->key_len = len - (size_t)(colon - line) - 1;
  if (out->user_hex && (out->user_len == 0 || out->user_len % 2 != 0 ||
                        !all_hex(out->user, out->user_len))) {
    return false;
  }
  return out->key_len > 0 && out->key_len % 2 == 0 && all_hex(out->key, out->key_len);
}

/* The next line of buf[*pos, len): its start and length without "\n" or "\r\n". Returns
 * false at the end. */
static bool next_line(const char *buf, size_t len, size_t *pos, const char **line,
                      size_t *line_len)
{
  const char *nl;
  size_t n;

  if (*pos >= len) {
    return false;
  }
  *line = buf + *pos;
  nl = memchr(*line, '\n', len - *pos);
  n = nl != NULL ? (size_t)(nl - *line) : len - *pos;
  *pos += n + (nl != NULL ? 1 : 0);
  if (n > 0 && (*line)[n - 1] == '\r') {
    n--;
  }
  *line_len = n;
  return true;
}

int tls_psk_check_file(const char *path, char *err, size_t errlen)
{
  char *buf = NULL;
  size_t len = 0, pos = 0, line_len;
  const char *line;
  unsigned lineno = 0, keys = 0;
  int rc = file_read_all_or_explain(path, TLS_PSK_FILE_MAX, &buf, &len, err, errlen);

  if (rc < 0) {
    return rc;
  }
  while (rc == 0 && next_line(buf, len, &pos, &line, &line_len)) {
    struct psk_line pl;

    lineno++;
    if (line_len == 0) {
      continue;
    }
    if (!psk_line_split(line, line_len, &pl)) {
      snprintf(err, errlen, "%s line %u: expected username:hexkey", path, lineno);
      rc = -EINVAL;
    }
    keys++;
  }
  file_read_free(buf, len);
  if (rc == 0 && keys == 0) {
    snprintf(err, errlen, "%s: no username:hexkey line", path);
    rc = -EINVAL;
  }
  return rc;
}

/* True when the line's username is the user_len bytes of `user`. */
static bool psk_user_matches(const struct psk_line *pl, const unsigned char *user,
                             size_t user_len)
{
  gnutls_datum_t hex, raw = {NULL, 0};
  bool same;

  if (!pl->user_hex) {
    return pl->user_len == user_len && memcmp(pl->user, user, user_len) == 0;
  }
  if (pl->user_len / 2 != user_len) {
    return false;
  }
  hex.data = (unsigned char *)pl->user;
  hex.size = (unsigned)pl->user_len;
  if (gnutls_hex_decode2(&hex, &raw) < 0) {
    return false;
  }
  same = raw.size == user_len && memcmp(raw.data, user, user_len) == 0;
  gnutls_free(raw.data);
  return same;
}

int tls_psk_lookup_key(const char *path, const unsigned char *user, size_t user_len,
                       gnutls_datum_t *key)
{
  char *buf = NULL;
  size_t len = 0, pos = 0, line_len;
  const char *line;
  int rc = file_read_all(path, TLS_PSK_FILE_MAX, &buf, &len);

  if (rc < 0) {
    return rc;
  }
  rc = -ESRCH;
  while (rc == -ESRCH && user_len > 0 && next_line(buf, len, &pos, &line, &line_len)) {
    struct psk_line pl;

    if (!psk_line_split(line, line_len, &pl) || !psk_user_matches(&pl, user, user_len)) {
      continue;
    }
    gnutls_datum_t text = {(unsigned char *)pl.key, (unsigned)pl.key_len};
    rc = gnutls_hex_decode2(&text, key) == 0 ? 0 : -ENOMEM;
  }
  file_read_free(buf, len);
  return rc;
}
