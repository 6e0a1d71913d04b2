/* SPDX-License-Identifier: MIT */
/* transport.c: see transport.h. Plain sockets go through sockio.c, TLS through tls.c. */
#include "server/transport.h"

#include <errno.h>
#include <string.h>

#include "server/sockio.h"
#include "server/tls.h"

void transport_init(struct transport *t, int fd)
{
  t->fd = fd;
  t->tls = NULL;
}

bool transport_is_tls(const struct transport *t)
{
  return t->tls != NULL;
}

int transport_read_full(struct transport *t, void *buf, size_t len)
{
  if (t->tls != NULL) {
    return tls_session_read_full(t->tls, buf, len);
  }
  return sockio_read_full(t->fd, buf, len);
}

int transport_discard(struct transport *t, uint64_t len)
{
  char sink[16384];

  if (t->tls == NULL) {
    return sockio_discard(t->fd, len);
  }
  while (len > 0) {
    size_t n = len < sizeof sink ? (size_t)len : sizeof sink;
    int rc = tls_session_read_full(t->tls, sink, n);
    if (rc < 0) {
      return rc;
    }
    len -= n;
  }
  return 0;
}

const char *transport_read_error(const struct transport *t, int rc)
{
  if (t->tls != NULL && rc == -EBADMSG) {
    return tls_session_read_error(t->tls);
  }
  return strerror(-rc);
}

int transport_writev_full(struct transport *t, struct iovec *iov, int n)
{
  if (t->tls != NULL) {
    return tls_session_writev_full(t->tls, iov, n);
  }
  return sockio_writev_full(t->fd, iov, n);
}

int transport_write_full(struct transport *t, const void *buf, size_t len)
{
  struct iovec iov = {(void *)buf, len};
  return transport_writev_full(t, &iov, 1);
}

int transport_starttls(struct transport *t, unsigned timeout_s, const char *peer)
{
  if (t->tls != NULL) {
    return -EALREADY;
  }
  return tls_session_start(t->fd, timeout_s, peer, &t->tls);
}

void transport_close(struct transport *t, bool bye)
{
  tls_session_end(t->tls, bye);
  t->tls = NULL;
}
