/* SPDX-License-Identifier: MIT */
/* pid_file.h: serve's --pid-file. The file is checked before anything is served, written
 * once the listeners are ready and removed at exit only if it is still the file this process
 * wrote. The server keeps an OFD write lock on it while it runs, as qemu-nbd keeps a lock on
 * its pid file, so a second server given the same --pid-file refuses to start instead of
 * taking it over (and deleting it at its exit, leaving the first without one).
 * Like qemu-nbd's and nbdkit's, a stale pid file (a number, or empty, that no running
 * server holds) is replaced; unlike them, any other existing file is refused, so a mistyped
 * --pid-file cannot replace the image, the socket or a key file. Main thread
 * only. Source: fcntl(2) F_OFD_SETLK, F_OFD_GETLK. */
#ifndef DISKGATE_SERVER_PID_FILE_H
#define DISKGATE_SERVER_PID_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/file_ident.h"

/* Descriptors a written pid file keeps open while the server runs (its lock's). */
#define PID_FILE_FDS 1

struct pid_file {
  const char *path; /* as given to pid_file_write (not copied); NULL: nothing written */
  int fd;           /* open on the file written, holding its lock; valid when path is set */
  struct file_ident file; /* the file written, to recognise it at exit */
};

/* Checks `path` as a --pid-file for a server of `image` (the PATH served; may be NULL or a
 * name that is not a file, such as rbd:...) listening on the Unix socket `socket_path`
 * (or NULL). Returns 0, or -errno with one line for stderr in err (naming --pid-file and
 * the path): -ENOENT for an empty name; -ENAMETOOLONG; -EISDIR or -EINVAL when it names a
 * directory, a socket, a symbolic link or another non-regular file; -EEXIST when it is the
 * image or the socket, or an existing file that does not hold a process id; -EBUSY when it
 * is the pid file of a running diskgate (locked); the errno of an existing file that cannot
 * be read (-EMFILE, ...) or of a directory that cannot be written (-ENOENT, -EROFS,
 * -EACCES). */
int pid_file_check(const char *path, const char *image, const char *socket_path, char *err,
                   size_t errlen);

/* Opens or creates `path` (mode 0644, as daemons' pid files are, whatever the umask), takes
 * an OFD write lock on it, then writes getpid() and a newline into it, and records it in
 * *pf, which keeps `path` (it must outlive *pf: argv does) and the descriptor that holds the
 * lock (one descriptor, until pid_file_remove). The lock is taken before anything is
 * written: of two servers started at once with the same path, one gets it. (A reader may
 * see the file empty for a moment while it is written, as qemu-nbd's.) Returns 0 or
 * -errno: -EBUSY, with one line in err[errlen] naming --pid-file and the other server's
 * pid, when a running server holds it; -EAGAIN when the file kept being replaced; the
 * errno of the open or the write (nothing is left behind then; err empty). */
int pid_file_write(struct pid_file *pf, const char *path, char *err, size_t errlen);

/* Removes the pid file if `path` still names the very file pid_file_write wrote (another
 * process may have replaced it since), then closes its descriptor (the lock goes with it).
 * Safe on a pid_file never written; an unlink that fails (the directory went read-only,
 * say) is ignored: the server is exiting anyway. Call it once. */
void pid_file_remove(const struct pid_file *pf);

/* Drops the lock and forgets the file without removing it: a new server that takes over
 * (reexec.h) finds it stale and writes its own pid there. Afterwards pid_file_remove does
 * nothing, and pid_file_write may write it again (when the new server could not start). */
void pid_file_release(struct pid_file *pf);

/* Waits until the pid file at `path` names `pid` (a new server started by SIGUSR2 writes
 * it once it has taken over), polling every 10 ms for at most wait_ms milliseconds, or
 * until process `pid` is gone. Returns true when the file names it. Main thread. */
bool pid_file_wait_for(const char *path, pid_t pid, unsigned wait_ms);

#endif
