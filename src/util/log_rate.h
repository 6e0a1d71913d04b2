/* SPDX-License-Identifier: MIT */
/* log_rate.h: thins out the log lines of an event a peer can repeat at will (a refused
 * request or option, a failed write on a full disk): the first LOG_RATE_FIRST of a kind on a
 * connection are logged, then one in LOG_RATE_EVERY, each later line saying how many it
 * stands for. Without it one client could write 55 MB of log a second (tested by
 * case_log_flood.sh). */
#ifndef DISKGATE_UTIL_LOG_RATE_H
#define DISKGATE_UTIL_LOG_RATE_H

#include <stdatomic.h>
#include <stdbool.h>

#define LOG_RATE_FIRST 10u
#define LOG_RATE_EVERY 1000u

/* Counts one more event of a kind (`what`, plural: "refusals") in *count and says whether
 * to log it. *suffix gets text to end the line with: "" for the first LOG_RATE_FIRST - 1,
 * " (further refusals are logged once per 1000)" for the last of those, " (1000 more
 * refusals)" after. The text lives in thread-local storage until the calling thread's next
 * call. Any thread; the count is atomic. */
bool log_rate_allows(atomic_uint *count, const char *what, const char **suffix);

#endif
