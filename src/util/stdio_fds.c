/* SPDX-License-Identifier: MIT */
/* stdio_fds.c: see stdio_fds.h. */
#include "util/stdio_fds.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int stdio_fds_ensure_open(void)
{
  int opened = 0;

  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) {
      continue; /* open (or not ours to judge) */
    }
    int got = open("/dev/null", O_RDWR | O_NOCTTY);
    if (got < 0) {
      return -errno;
    }
    if (got != fd) { /* only when something else opened `fd` meanwhile: not at start */
      close(got);
      return -EBADF;
    }
    opened++;
  }
  assert(opened <= 3);
  return opened;
}
