/* tls_psk.c: see tls_psk.h. */
#include "server/tls_psk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Splits a line (its end of line already cut) into username and hex key. Returns the
 * username's length and sets *hex, or 0 when the line is not `username:hexkey`. */
static size_t psk_line_parse(const char *line, const char **hex)
{
  const char *colon = strchr(line, ':');
  size_t n;

  if (colon == NULL || colon == line) {
    return 0;
  }
  n = strlen(colon + 1);
  if (n == 0 || n % 2 != 0 || strspn(colon + 1, "0123456789abcdefABCDEF") != n) {
    return 0;
  }
  *hex = colon + 1;
  return (size_t)(colon - line);
}

static FILE *psk_open(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "r");

  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
  }
  return f;
}

int tls_psk_check_file(const char *path, char *err, size_t errlen)
{
  char line[1024];
  unsigned lineno = 0, keys = 0;
  FILE *f = psk_open(path, err, errlen);

  if (f == NULL) {
    return -errno;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    const char *hex;

    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0') {
      continue;
    }
    if (psk_line_parse(line, &hex) == 0) {
      snprintf(err, errlen, "%s line %u: expected username:hexkey", path, lineno);
      fclose(f);
      return -EINVAL;
    }
    keys++;
  }
  fclose(f);
  if (keys == 0) {
    snprintf(err, errlen, "%s: no username:hexkey line", path);
    return -EINVAL;
  }
  return 0;
}

int tls_psk_lookup(const char *path, const unsigned char *user, size_t user_len,
                   gnutls_datum_t *key)
{
  char line[1024], err[64];
  FILE *f;
  int rc = -ENOENT;

  if (user_len == 0 || user_len > TLS_PSK_USER_MAX) {
    return -ENOENT;
  }
  f = psk_open(path, err, sizeof err);
  if (f == NULL) {
    return -errno;
  }
  while (rc == -ENOENT && fgets(line, sizeof line, f) != NULL) {
    const char *hex = NULL;
    size_t n;

    line[strcspn(line, "\r\n")] = '\0';
    n = psk_line_parse(line, &hex);
    if (n != user_len || memcmp(line, user, n) != 0) {
      continue;
    }
    gnutls_datum_t text = {(unsigned char *)hex, (unsigned)strlen(hex)};
    rc = gnutls_hex_decode2(&text, key) == 0 ? 0 : -ENOMEM;
  }
  fclose(f);
  return rc;
}
