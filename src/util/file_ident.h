/* SPDX-License-Identifier: MIT */
/* file_ident.h: which file a path names, kept to recognise it later. A server removes the
 * files it made (its pid file, its Unix socket) at exit only if their paths still name
 * them: another process may have replaced them since. Source:
 * lstat(2); a file is its device and inode number. */
#ifndef DISKGATE_UTIL_FILE_IDENT_H
#define DISKGATE_UTIL_FILE_IDENT_H

#include <stdbool.h>
#include <sys/types.h>

struct file_ident {
  dev_t dev;
  ino_t ino;
};

/* The file that `path` itself names (a symbolic link is not followed) into *out. Returns
 * true, or false when lstat fails (*out is then zero, which names no file). Any thread. */
bool file_ident_of_path(const char *path, struct file_ident *out);

/* Whether `path` (not followed) names the file `id`. Any thread. */
bool file_ident_names(const char *path, const struct file_ident *id);

/* Unlinks `path` if it names the file `id`; otherwise, or when the unlink fails (a
 * directory gone read-only), nothing: callers are exiting. The check and the unlink are
 * two steps: only the owner of the file should be replacing it meanwhile. Any thread. */
void file_ident_unlink(const char *path, const struct file_ident *id);

#endif
