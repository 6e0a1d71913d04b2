/* SPDX-License-Identifier: MIT */
/* fd_budget.c: see fd_budget.h. */
#include "util/fd_budget.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

int fd_budget_left(void)
{
  struct rlimit rl;
  struct dirent *d;
  DIR *dir;
  long open_now = 0;

  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
    return -errno;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX) {
    return INT_MAX;
  }
  dir = opendir("/proc/self/fd");
  if (dir == NULL) {
    /* not one descriptor left for the directory itself */
    return errno == EMFILE ? 0 : -errno;
  }
  while ((d = readdir(dir)) != NULL) {
    char *end;
    unsigned long fd = strtoul(d->d_name, &end, 10);
    /* a descriptor numbered at or above the limit (inherited, or from before the limit
     * was lowered) takes none of the numbers below it, which are all that can be opened */
    if (d->d_name[0] != '.' && *end == '\0' && fd < (unsigned long)rl.rlim_cur) {
      open_now++;
    }
  }
  closedir(dir);
  open_now--; /* the directory's own descriptor, listed while it was open */
  assert(open_now >= 0);
  return (long)rl.rlim_cur > open_now ? (int)((long)rl.rlim_cur - open_now) : 0;
}

bool fd_budget_allows(unsigned want)
{
  int left = fd_budget_left();

  return left < 0 || (long)left >= (long)want + FD_BUDGET_RESERVE;
}

const char *fd_budget_describe(char *buf, size_t size)
{
  struct rlimit rl;
  int left = fd_budget_left();

  if (left < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY) {
    snprintf(buf, size, "too few files can be opened");
  } else {
    snprintf(buf, size, "only %d more file%s can be opened (the open-files limit, ulimit -Hn, "
             "is %llu)", left, left == 1 ? "" : "s", (unsigned long long)rl.rlim_cur);
  }
  return buf;
}
