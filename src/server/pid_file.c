/* SPDX-License-Identifier: MIT */
/* pid_file.c: see pid_file.h. */
#include "server/pid_file.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cli.h"
#include "util/log.h"

/* The directory part of `path` into dir ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t size)
{
  char copy[PATH_MAX];

  snprintf(copy, sizeof copy, "%s", path);
  snprintf(dir, size, "%s", dirname(copy));
}

/* Where `path` points, for a name that may not exist yet: its directory made canonical,
 * then its last component. Returns false when the directory cannot be resolved. */
static bool place_of(const char *path, char *out, size_t size)
{
  char dir[PATH_MAX], real[PATH_MAX], copy[PATH_MAX];

  dir_of(path, dir, sizeof dir);
  snprintf(copy, sizeof copy, "%s", path);
  return realpath(dir, real) != NULL &&
         snprintf(out, size, "%s/%s", real, basename(copy)) < (int)size;
}

/* True when `a` and `b` name the same place: the same inode when both exist, else the
 * same place_of (a socket not created yet). */
static bool same_place(const char *a, const char *b)
{
  struct stat sa, sb;
  char pa[PATH_MAX], pb[PATH_MAX];

  if (stat(a, &sa) == 0 && stat(b, &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  return place_of(a, pa, sizeof pa) && place_of(b, pb, sizeof pb) && strcmp(pa, pb) == 0;
}

/* The process id in the pid file open at fd, which a running server holds locked: that
 * server may have locked it and not yet written it (pid_file_write locks first), so an
 * empty file is read again for up to 100 ms. Returns the pid, or 0 when none came. */
static long locked_pid_read(int fd)
{
  for (int i = 0; i < 20; i++) {
    char buf[32] = {0};
    if (pread(fd, buf, sizeof buf - 1, 0) > 0) {
      return strtol(buf, NULL, 10);
    }
    usleep(5000);
  }
  return 0;
}

/* One line for err: PATH is a running server's pid file. */
static void busy_explain(const char *path, long pid, char *err, size_t errlen)
{
  char shown[LOG_SHOWN_MAX], who[48] = "";

  if (pid > 0) {
    snprintf(who, sizeof who, " (pid %ld)", pid);
  }
  snprintf(err, errlen, "--pid-file %s: is the pid file of a running server%s; not replacing it",
           log_escape_str(shown, sizeof shown, path), who);
}

/* What the regular file at `path` is, read once:
 *   PID_FILE_NOT   it holds something other than a number and an optional newline;
 *   PID_FILE_STALE it is empty or holds one (a stale pid file, or one a service manager
 *                  made), and no running server holds it;
 *   PID_FILE_HELD  it is one that a running diskgate holds: a server keeps an OFD write lock
 *                  on its pid file while it runs (pid_file_write), as qemu-nbd keeps a lock
 *                  on its own; *pid gets the number, or 0. (A file system without locks,
 *                  -EINVAL or -ENOLCK from the test, counts as not held.)
 * Or -errno when it cannot be opened, read or tested (EMFILE: no file descriptor left, ...;
 * -ENOENT: gone). */
enum pid_file_state { PID_FILE_NOT, PID_FILE_STALE, PID_FILE_HELD };
static int pid_file_state(const char *path, long *pid)
{
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  char buf[32];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a FIFO swapped in */
  int rc = PID_FILE_STALE;

  *pid = 0;
  if (fd < 0) {
    return -errno;
  }
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) {
    rc = -errno;
  } else if (n == (ssize_t)sizeof buf) {
    rc = PID_FILE_NOT;
  } else {
    if (n > 0 && buf[n - 1] == '\n') {
      n--;
    }
    for (ssize_t i = 0; i < n && rc == PID_FILE_STALE; i++) {
      if (buf[i] < '0' || buf[i] > '9') {
        rc = PID_FILE_NOT;
      }
    }
  }
  if (rc == PID_FILE_STALE && fcntl(fd, F_OFD_GETLK, &fl) < 0) {
    rc = errno == EINVAL || errno == ENOLCK ? PID_FILE_STALE : -errno;
  } else if (rc == PID_FILE_STALE && fl.l_type != F_UNLCK) {
    rc = PID_FILE_HELD;
    *pid = locked_pid_read(fd);
  }
  close(fd);
  return rc;
}

int pid_file_check(const char *path, const char *image, const char *socket_path, char *err,
                   size_t errlen)
{
  char shown[LOG_SHOWN_MAX], dir[PATH_MAX];
  struct stat st;

  log_escape_str(shown, sizeof shown, path);
  if (path[0] == '\0') {
    snprintf(err, errlen, "--pid-file needs a path, not an empty name");
    return -ENOENT;
  }
  if (strlen(path) + 8 >= PATH_MAX) {
    snprintf(err, errlen, "--pid-file %s: %s", shown, strerror(ENAMETOOLONG));
    return -ENAMETOOLONG;
  }
  const char *taken = image != NULL && same_place(path, image)              ? "image"
                      : socket_path != NULL && same_place(path, socket_path) ? "socket"
                                                                             : NULL;
  if (taken != NULL) {
    snprintf(err, errlen, "--pid-file %s: that is the %s being served", shown, taken);
    return -EEXIST;
  }
  if (lstat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      snprintf(err, errlen, "--pid-file %s: %s", shown, strerror(EISDIR));
      return -EISDIR;
    }
    if (!S_ISREG(st.st_mode)) {
      snprintf(err, errlen, "--pid-file %s: exists and is not a regular file", shown);
      return -EINVAL;
    }
    /* A running server's is refused here, before anything is opened or listened on;
     * pid_file_write's lock settles a server started since. */
    long pid;
    int state = pid_file_state(path, &pid);
    if (state < 0 && state != -ENOENT) { /* -ENOENT: gone since lstat, as if absent */
      char text[128];
      snprintf(err, errlen, "--pid-file %s: %s", shown,
               cli_startup_error(state, text, sizeof text));
      return state;
    }
    if (state == PID_FILE_NOT) {
      snprintf(err, errlen, "--pid-file %s: exists and is not a pid file (not replacing it)",
               shown);
      return -EEXIST;
    }
    if (state == PID_FILE_HELD) {
      busy_explain(path, pid, err, errlen);
      return -EBUSY;
    }
  }
  dir_of(path, dir, sizeof dir);
  if (access(dir, W_OK | X_OK) != 0) {
    int e = errno;
    snprintf(err, errlen, "--pid-file %s: %s", shown, strerror(e));
    return -e;
  }
  return 0;
}

int pid_file_write(struct pid_file *pf, const char *path, char *err, size_t errlen)
{
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  struct stat st;
  char line[32];
  int fd = -1, n;

  pf->path = NULL;
  err[0] = '\0';
  /* The lock is taken on the file at `path` itself, before anything is written, so that of
   * two servers started at once exactly one gets it (checking, then renaming a locked
   * temporary file over the path, would let both run). An exiting server unlinks the
   * file before it drops the lock: a file locked, then found unlinked or replaced, is
   * opened again. */
  for (int tries = 0;; tries++) {
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      return -errno;
    }
    if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
      int e = errno;
      if (e == EAGAIN || e == EACCES) {
        busy_explain(path, locked_pid_read(fd), err, errlen);
        close(fd);
        return -EBUSY;
      }
      if (e != EINVAL && e != ENOLCK) { /* a file system without locks only loses the check */
        close(fd);
        return -e;
      }
    }
    if (fstat(fd, &st) < 0) {
      int e = errno;
      close(fd);
      return -e;
    }
    if (file_ident_names(path, &(struct file_ident){.dev = st.st_dev, .ino = st.st_ino})) {
      break;
    }
    close(fd);
    if (tries == 10) {
      return -EAGAIN; /* replaced again and again under us */
    }
  }
  n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  errno = 0;
  if (fchmod(fd, 0644) < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n) {
    int rc = errno != 0 ? -errno : -EIO; /* a short write leaves errno 0 */
    unlink(path);                        /* ours: locked and checked above */
    close(fd);
    return rc;
  }
  pf->fd = fd;
  pf->path = path;
  pf->file = (struct file_ident){.dev = st.st_dev, .ino = st.st_ino};
  return 0;
}

void pid_file_remove(const struct pid_file *pf)
{
  if (pf->path != NULL) {
    file_ident_unlink(pf->path, &pf->file);
    close(pf->fd); /* after the unlink: the lock is held while the name exists */
  }
}

void pid_file_release(struct pid_file *pf)
{
  if (pf->path != NULL) {
    close(pf->fd);
    pf->path = NULL;
  }
}

bool pid_file_wait_for(const char *path, pid_t pid, unsigned wait_ms)
{
  for (unsigned waited = 0;; waited += 10) {
    char buf[32] = {0};
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
      close(fd);
      if (n > 0 && strtol(buf, NULL, 10) == (long)pid) {
        return true;
      }
    }
    if (waited >= wait_ms || (kill(pid, 0) < 0 && errno == ESRCH)) {
      return false;
    }
    usleep(10000);
  }
}
