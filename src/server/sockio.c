/* SPDX-License-Identifier: MIT */
/* sockio.c: see sockio.h. */
#include "server/sockio.h"

#include <errno.h>
#include <sys/socket.h>

int sockio_read_full(int fd, void *buf, size_t len)
{
  size_t done = 0;

  while (done < len) {
    ssize_t n = recv(fd, (char *)buf + done, len - done, 0);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT : -errno;
    }
    if (n == 0) {
      return -ECONNRESET;
    }
    done += (size_t)n;
  }
  return 0;
}

int sockio_discard(int fd, uint64_t len)
{
  char sink[65536];

  while (len > 0) {
    size_t n = len < sizeof sink ? (size_t)len : sizeof sink;
    int rc = sockio_read_full(fd, sink, n);
    if (rc < 0) {
      return rc;
    }
    len -= n;
  }
  return 0;
}

int sockio_writev_full(int fd, struct iovec *iov, int n)
{
  while (n > 0) {
    struct msghdr msg = {0};
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)n;
    ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -errno;
    }
    while (n > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}

int sockio_write_full(int fd, const void *buf, size_t len)
{
  struct iovec iov = {(void *)buf, len};
  return sockio_writev_full(fd, &iov, 1);
}
