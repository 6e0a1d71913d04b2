/* SPDX-License-Identifier: MIT */
/* open_hook.c: an LD_PRELOAD module that interferes with open(2) of one file, to reach
 * paths that need a machine out of descriptors or memory, or an attacker who wins a race.
 * It wraps open and open64, one function (the program's own calls; libc's internal ones,
 * fopen's among them, are not seen). Test code: any thread. Two behaviours, each off
 * unless its variables are set:
 * - fail: an open whose path ends with DG_OPEN_FAIL_SUFFIX fails with errno
 *   DG_OPEN_FAIL_ERRNO (a number, e.g. 23 for ENFILE). Used by tls-read-errors.
 * - swap: just before the first open of exactly DG_SWAP_PATH, DG_SWAP_WITH is renamed onto
 *   it (rename(2) is atomic: a symbolic link or another file takes the path's place), as
 *   between a program's check of a path and its open, every time. Used by
 *   server-names-not-paths (case C18).
 * - delay: an open whose path ends with DG_OPEN_DELAY_SUFFIX waits DG_OPEN_DELAY_MS
 *   milliseconds first, in a server started by a SIGUSR2 restart only (DISKGATE_TAKEOVER
 *   is in its environment while it opens its export). Used by server-restart-pid-file. */
/* both symbols are defined here: open must not be redirected to open64 */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef int (*open_fn)(const char *, int, ...);

static atomic_bool swapped;

/* True when the open of `path` is to fail; errno is then set. */
static int should_fail(const char *path)
{
  const char *suffix = getenv("DG_OPEN_FAIL_SUFFIX");
  const char *err = getenv("DG_OPEN_FAIL_ERRNO");
  size_t n, m;

  if (suffix == NULL || err == NULL || path == NULL) {
    return 0;
  }
  n = strlen(path);
  m = strlen(suffix);
  if (m == 0 || n < m || strcmp(path + n - m, suffix) != 0) {
    return 0;
  }
  errno = (int)strtol(err, NULL, 10);
  return 1;
}

/* Swaps DG_SWAP_WITH onto `path` when it is DG_SWAP_PATH and nothing was swapped yet. */
static void maybe_swap(const char *path)
{
  const char *target = getenv("DG_SWAP_PATH");
  const char *with = getenv("DG_SWAP_WITH");

  if (target != NULL && with != NULL && path != NULL && strcmp(path, target) == 0 &&
      !atomic_exchange(&swapped, true) && rename(with, target) < 0) {
    perror("open_hook: rename");
  }
}

/* Sleeps DG_OPEN_DELAY_MS before an open of a path ending in DG_OPEN_DELAY_SUFFIX. */
static void maybe_delay(const char *path)
{
  const char *suffix = getenv("DG_OPEN_DELAY_SUFFIX");
  const char *ms = getenv("DG_OPEN_DELAY_MS");
  size_t n, m;

  if (suffix == NULL || ms == NULL || path == NULL || getenv("DISKGATE_TAKEOVER") == NULL) {
    return;
  }
  n = strlen(path);
  m = strlen(suffix);
  if (m > 0 && n >= m && strcmp(path + n - m, suffix) == 0) {
    usleep((useconds_t)strtol(ms, NULL, 10) * 1000);
  }
}

int open(const char *path, int flags, ...)
{
  mode_t mode = 0;
  open_fn real;

  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  if (should_fail(path)) {
    return -1;
  }
  maybe_swap(path);
  maybe_delay(path);
  real = (open_fn)dlsym(RTLD_NEXT, "open"); /* open64 is the same call on 64-bit Linux */
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(path, flags, mode);
}

/* A program built with _FILE_OFFSET_BITS=64 (diskgate is) calls open64. */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
