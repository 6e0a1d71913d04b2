/* SPDX-License-Identifier: MIT */
/* file_ident.c: see file_ident.h. */
#include "util/file_ident.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

bool file_ident_of_path(const char *path, struct file_ident *out)
{
  struct stat st;

  if (lstat(path, &st) < 0) {
    *out = (struct file_ident){0};
    return false;
  }
  *out = (struct file_ident){.dev = st.st_dev, .ino = st.st_ino};
  return true;
}

bool file_ident_names(const char *path, const struct file_ident *id)
{
  struct file_ident now;

  return file_ident_of_path(path, &now) && now.dev == id->dev && now.ino == id->ino &&
         (id->dev != 0 || id->ino != 0);
}

void file_ident_unlink(const char *path, const struct file_ident *id)
{
  if (file_ident_names(path, id)) {
    (void)unlink(path);
  }
}

int file_open_checked(const char *path, int flags)
{
  struct stat before, after;
  int fd;

  if (lstat(path, &before) < 0) {
    return -errno;
  }
  if (S_ISLNK(before.st_mode)) {
    if (stat(path, &before) < 0) {
      return -errno;
    }
  } else {
    flags |= O_NOFOLLOW;
  }
  fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) {
    /* ELOOP under O_NOFOLLOW: a symbolic link took the place of what lstat saw */
    return (flags & O_NOFOLLOW) && errno == ELOOP ? -EAGAIN : -errno;
  }
  if (fstat(fd, &after) < 0 || after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
    close(fd);
    return -EAGAIN;
  }
  return fd;
}
