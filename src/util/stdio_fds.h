/* SPDX-License-Identifier: MIT */
/* stdio_fds.h: descriptors 0, 1 and 2 made valid before anything else is opened. A process
 * started with one of them closed (`diskgate serve ... 2>&-`, a careless service manager)
 * would otherwise get the image, a socket or the pid file at that number, and the next log
 * line (stderr) or listener line (stdout) would be written into it: into the served disk.
 * qemu-nbd and nbdkit do the same at start. Source: POSIX open(2) ("the lowest-numbered
 * file descriptor not currently open"), fcntl(2) F_GETFD. */
#ifndef DISKGATE_UTIL_STDIO_FDS_H
#define DISKGATE_UTIL_STDIO_FDS_H

/* Opens /dev/null (read-write, without O_CLOEXEC: children inherit standard streams) at
 * each of the descriptors 0, 1 and 2 that is closed; the open ones are left as they are.
 * Returns the number of descriptors it opened (0 to 3), or -errno when /dev/null cannot be
 * opened (-ENOENT in a bare chroot, -EMFILE, ...) or lands at a number above 2 (-EBADF:
 * then it is closed again). The caller must not log to a closed stderr on failure: exit.
 * Main thread, first thing in main(), before any other thread or descriptor exists. */
int stdio_fds_ensure_open(void);

#endif
