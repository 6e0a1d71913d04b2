/* SPDX-License-Identifier: MIT */
/* uri.c: NBD URI formatting with RFC 3986 percent-encoding (doc/uri.md). */
#include "nbd/uri.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct uri_buf {
  char *out;
  size_t size;
  size_t used;
  bool overflow;
};

static void buf_putc(struct uri_buf *b, char c)
{
  if (b->used + 1 >= b->size) {
    b->overflow = true;
    return;
  }
  b->out[b->used++] = c;
  b->out[b->used] = '\0';
}

static void buf_puts(struct uri_buf *b, const char *s)
{
  for (; *s != '\0'; s++) {
    buf_putc(b, *s);
  }
}

/* Percent-encodes every byte outside RFC 3986's unreserved set, plus the characters that
 * `keep` lists (e.g. "/" for paths). */
static void buf_put_encoded(struct uri_buf *b, const char *s, const char *keep)
{
  static const char hex[] = "0123456789ABCDEF";

  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL ||
                 (keep != NULL && strchr(keep, *p) != NULL);
    if (plain) {
      buf_putc(b, (char)*p);
    } else {
      buf_putc(b, '%');
      buf_putc(b, hex[*p >> 4]);
      buf_putc(b, hex[*p & 15]);
    }
  }
}

static int buf_finish(struct uri_buf *b)
{
  return b->overflow ? -ENAMETOOLONG : (int)b->used;
}

int nbd_uri_format_tcp(char *out, size_t out_size, const char *host, unsigned port,
                       const char *export_name)
{
  struct uri_buf b = {out, out_size, 0, out_size == 0};
  char port_text[16];

  if (out_size > 0) {
    out[0] = '\0';
  }
  buf_puts(&b, "nbd://");
  if (strchr(host, ':') != NULL) {
    buf_putc(&b, '[');
    buf_put_encoded(&b, host, ":"); /* a zone id's '%' becomes %25 (RFC 6874) */
    buf_putc(&b, ']');
  } else {
    buf_puts(&b, host);
  }
  snprintf(port_text, sizeof port_text, ":%u/", port);
  buf_puts(&b, port_text);
  buf_put_encoded(&b, export_name, "/");
  return buf_finish(&b);
}

int nbd_uri_format_unix(char *out, size_t out_size, const char *socket_path,
                        const char *export_name)
{
  struct uri_buf b = {out, out_size, 0, out_size == 0};

  if (out_size > 0) {
    out[0] = '\0';
  }
  buf_puts(&b, "nbd+unix:///");
  buf_put_encoded(&b, export_name, "/");
  buf_puts(&b, "?socket=");
  buf_put_encoded(&b, socket_path, "/");
  return buf_finish(&b);
}
