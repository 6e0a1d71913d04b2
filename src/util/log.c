/* SPDX-License-Identifier: MIT */
#include "util/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static enum log_level log_threshold = LOG_INFO;

void log_set_level(enum log_level level)
{
  log_threshold = level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
  static const char *const names[] = {"error", "warning", "info", "debug"};
  char line[1024];
  va_list ap;

  if (level > log_threshold) {
    return;
  }
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "diskgate: %s: %s\n", names[level], line);
}

const char *log_escape(char *out, size_t size, const void *data, size_t len)
{
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = data;
  size_t o = 0;

  for (size_t i = 0; i < len; i++) {
    bool plain = p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\';
    size_t need = plain ? 1 : 4;
    if (o + need + 4 > size) { /* room for "..." and the NUL */
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    if (plain) {
      out[o++] = (char)p[i];
    } else {
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[p[i] >> 4];
      out[o++] = hex[p[i] & 15];
    }
  }
  out[o] = '\0';
  return out;
}

const char *log_escape_str(char *out, size_t size, const char *s)
{
  return log_escape(out, size, s, strlen(s));
}
