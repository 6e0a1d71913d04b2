#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

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
