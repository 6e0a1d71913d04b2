/* SPDX-License-Identifier: MIT */
/* bench_util.h: small helpers shared by src/bench/ files. Any thread. */
#ifndef DISKGATE_BENCH_UTIL_H
#define DISKGATE_BENCH_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/* snprintf into buf (len bytes, always NUL-terminated); returns false when the output was
 * truncated. Used for paths and labels, where a truncated result is reported, not fatal. */
static inline bool bench_fmt(char *buf, size_t len, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static inline bool bench_fmt(char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(buf, len, fmt, ap);
  va_end(ap);
  return n >= 0 && (size_t)n < len;
}

#endif
