/* open_fail.c: an LD_PRELOAD module that makes open(2) of one file fail, to reach error
 * paths that need a machine out of descriptors or memory. An open whose path ends with
 * DG_OPEN_FAIL_SUFFIX fails with errno DG_OPEN_FAIL_ERRNO (a number, e.g. 23 for ENFILE);
 * every other open, and every open when DG_OPEN_FAIL_SUFFIX is unset, goes to libc. It
 * wraps open and open64, one function (the program's own calls; libc's internal ones, fopen's among them,
 * are not seen). Test code: any thread. */
/* both symbols are defined here: open must not be redirected to open64 */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef int (*open_fn)(const char *, int, ...);

/* True when `path` is to fail; errno is then set. */
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
  real = (open_fn)dlsym(RTLD_NEXT, "open"); /* open64 is the same call on 64-bit Linux */
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(path, flags, mode);
}

/* A program built with _FILE_OFFSET_BITS=64 (diskgate is) calls open64. */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
