/* SPDX-License-Identifier: MIT */
/* file_read.c: see file_read.h. */
#include "util/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cli.h"

void file_read_free(char *buf, size_t len)
{
  if (buf != NULL) {
    explicit_bzero(buf, len);
    free(buf);
  }
}

int file_read_all(const char *path, size_t max, char **buf, size_t *len)
{
  struct stat st;
  size_t got = 0, cap = 0;
  int rc = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO put there: no wait */

  *buf = NULL;
  if (fd < 0) {
    return -errno;
  }
  if (fstat(fd, &st) < 0) {
    rc = -errno;
  } else if (S_ISDIR(st.st_mode)) {
    rc = -EISDIR;
  } else if (!S_ISREG(st.st_mode)) {
    rc = -EINVAL;
  } else if ((uint64_t)st.st_size > max) {
    rc = -EFBIG;
  } else if ((*buf = malloc((cap = (size_t)st.st_size + 1))) == NULL) {
    rc = -ENOMEM;
  }
  while (rc == 0) { /* one byte more than fstat said, to see the end */
    ssize_t n = read(fd, *buf + got, cap - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      rc = -errno;
    } else if (n == 0) {
      break;
    } else if ((got += (size_t)n) == cap) {
      rc = -EAGAIN; /* it grew since fstat */
    }
  }
  close(fd);
  if (rc < 0) {
    file_read_free(*buf, got);
    *buf = NULL;
    return rc;
  }
  (*buf)[got] = '\0';
  *len = got;
  return 0;
}

const char *file_read_strerror(int err, size_t max, char *buf, size_t size)
{
  if (err == -EFBIG) {
    snprintf(buf, size, "larger than %zu MiB", max >> 20);
    return buf;
  }
  if (err == -EAGAIN) {
    return "changed while it was read (try again)";
  }
  return cli_startup_error(err, buf, size);
}

int file_read_all_or_explain(const char *path, size_t max, char **buf, size_t *len, char *err,
                             size_t errlen)
{
  int rc = file_read_all(path, max, buf, len);

  if (rc < 0) {
    char text[128];
    snprintf(err, errlen, "%s: %s", path, file_read_strerror(rc, max, text, sizeof text));
  }
  return rc;
}
