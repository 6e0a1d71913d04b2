/* SPDX-License-Identifier: MIT */
/* file_ident.c: see file_ident.h. */
#include "util/file_ident.h"

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
