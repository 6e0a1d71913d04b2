/* SPDX-License-Identifier: MIT */
/* fdio.c: see fdio.h. */
#include "util/fdio.h"

#include <errno.h>
#include <unistd.h>

ssize_t fdio_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
  size_t done = 0;

  while (done < len) {
    ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -errno;
    }
    if (n == 0) {
      break; /* end of file */
    }
    done += (size_t)n;
  }
  return (ssize_t)done;
}

int fdio_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
  size_t done = 0;

  while (done < len) {
    ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -errno;
    }
    if (n == 0) {
      return -ENOSPC;
    }
    done += (size_t)n;
  }
  return 0;
}
