/* SPDX-License-Identifier: MIT */
/* fd_budget.h: how many more file descriptors this process may open, so that start-up takes
 * the optional extras (concurrent sync channels, io_uring event loops) only from what the
 * listeners and the first connections do not need. Without it, a small open-files limit
 * could be spent on the extras, and a larger limit then failed where a smaller one served
 * (at ulimit -n 10, "cannot listen"; at 16, a server that closed every connection).
 * Source: getrlimit(2) RLIMIT_NOFILE and proc(5) /proc/self/fd. Linux only. */
#ifndef DISKGATE_UTIL_FD_BUDGET_H
#define DISKGATE_UTIL_FD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

/* Descriptors that start-up leaves free for the listeners and the first connections before
 * it takes an optional extra (a count of descriptors). */
#define FD_BUDGET_RESERVE 16

/* The number of descriptors the calling process can still open: the soft RLIMIT_NOFILE
 * minus the descriptors open now with a number below it (counted in /proc/self/fd; one
 * numbered at or above the limit takes no number that could be opened); 0 when none is
 * left; INT_MAX when the limit is infinite or above INT_MAX. Returns that count (>= 0), or -errno
 * when it cannot be known (-ENOENT: no /proc; -ENOMEM). Any thread; the count is a snapshot
 * and other threads may open or close descriptors meanwhile. Blocking (reads a directory):
 * for start-up, never an event loop. */
int fd_budget_left(void);

/* Whether `want` more descriptors can be opened and FD_BUDGET_RESERVE still be left after
 * them. When the count cannot be known (fd_budget_left < 0), true: the open itself will say.
 * Same threads and blocking as fd_budget_left. */
bool fd_budget_allows(unsigned want);

/* "only N more files can be opened (the open-files limit, ulimit -Hn, is M)", the reason
 * in a log line about an extra left out, from fd_budget_left and the soft RLIMIT_NOFILE
 * (named ulimit -Hn because `diskgate serve` raises its soft limit to the hard one first,
 * as cli_startup_error does). Returns buf (at most size bytes, NUL-terminated). Same
 * threads as fd_budget_left. */
const char *fd_budget_describe(char *buf, size_t size);

#endif
