/* SPDX-License-Identifier: MIT */
/* sockio.h: whole-buffer socket reads and writes with EINTR handled.
 * Any thread; a socket must not be read by two threads at once (nor written, unless the
 * caller serialises: server/conn.c holds its send lock). */
#ifndef DISKGATE_SERVER_SOCKIO_H
#define DISKGATE_SERVER_SOCKIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Reads exactly len bytes. Returns 0, -ECONNRESET when the peer closed before len bytes
 * (including at byte 0), -ETIMEDOUT (SO_RCVTIMEO expired) or another -errno. */
int sockio_read_full(int fd, void *buf, size_t len);

/* Reads and throws away len bytes (a payload we do not want). Same returns. */
int sockio_discard(int fd, uint64_t len);

/* Writes every byte of iov[0..n). Returns 0 or -errno (-EPIPE when the peer is gone).
 * Never raises SIGPIPE. */
int sockio_writev_full(int fd, struct iovec *iov, int n);

/* Writes len bytes. Same returns as sockio_writev_full. */
int sockio_write_full(int fd, const void *buf, size_t len);

#endif
