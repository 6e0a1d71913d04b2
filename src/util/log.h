/* SPDX-License-Identifier: MIT */
/* log.h: one-line log messages on stderr, prefixed "diskgate: ".
 * Thread-safe (one fprintf per line). Levels below the configured one are dropped. */
#ifndef DISKGATE_UTIL_LOG_H
#define DISKGATE_UTIL_LOG_H

#include <stddef.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the most verbose level printed (default LOG_INFO). Main thread, before threads start. */
void log_set_level(enum log_level level);

/* Prints "diskgate: <level>: <message>\n" to stderr. Any thread. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes `len` bytes of untrusted `data` (a client's export name, say) into `out` as
 * printable ASCII: bytes outside 0x20-0x7e, and backslash, become \xNN; truncated with "..."
 * to fit `size` (at least 8). Returns out. Any thread. */
const char *log_escape(char *out, size_t size, const void *data, size_t len);

/* Bytes of a buffer for log_escape_str: a path or name longer than what fits is cut with
 * "..." (a log line names it, it does not have to hold all of it). */
#define LOG_SHOWN_MAX 512

/* log_escape of the NUL-terminated string `s` (a path the operator gave, say): one line,
 * printable ASCII. Returns out. Any thread. */
const char *log_escape_str(char *out, size_t size, const char *s);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
