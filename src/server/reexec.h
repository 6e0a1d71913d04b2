/* SPDX-License-Identifier: MIT */
/* reexec.h: a restart in which no connect is refused (SIGUSR2, doc/serve.md "Stopping and
 * restarting"): the server starts a new copy of itself (same argv) that inherits the
 * listening sockets, then stops accepting and drains; the new process accepts on the same
 * sockets, whose queued connects wait for it. The sockets pass through the environment
 * variable DISKGATE_LISTEN_FDS (their descriptor numbers, comma-separated, in the order
 * serve.c opens its listeners), and DISKGATE_TAKEOVER names the old process's pid. Main
 * thread only. Source: execve(2), fcntl(2) FD_CLOEXEC. */
#ifndef DISKGATE_SERVER_REEXEC_H
#define DISKGATE_SERVER_REEXEC_H

#include <stddef.h>
#include <sys/types.h>

#define REEXEC_FDS_ENV "DISKGATE_LISTEN_FDS"
#define REEXEC_TAKEOVER_ENV "DISKGATE_TAKEOVER"

/* Starts `argv` (NULL-terminated; argv[0] is looked up in PATH as the shell would, else
 * /proc/self/exe is run) as a new process that inherits the n descriptors fds (their
 * close-on-exec flag cleared in the new process only) and finds them in REEXEC_FDS_ENV.
 * Returns the new process's pid once its exec has succeeded, or -errno: the exec's error
 * (-ENOENT, -EACCES, ...), -EAGAIN/-ENOMEM from fork, -EMFILE for the pipe that reports it.
 * Nothing is inherited when it fails. */
pid_t reexec_spawn(char *const argv[], const int *fds, size_t n);

/* The listening sockets inherited from the old process, if this process was started by
 * reexec_spawn: fills fds[0..max) and returns how many (0: not a takeover), or -EINVAL when
 * REEXEC_FDS_ENV is malformed or names a descriptor that is not a listening socket. Sets
 * close-on-exec on them again and removes both variables from the environment, so that a
 * later restart passes its own. */
int reexec_inherited(int *fds, size_t max);

/* The old process's pid when this one takes over from it (reexec_spawn), else 0: the old
 * one may still hold the image's lock while it drains, so the caller retries an open
 * refused as busy. Read it before reexec_inherited, which clears it. */
int reexec_takeover_pid(void);

#endif
