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

/* Opens `path` with open(2) `flags` (O_CLOEXEC added) so that the file opened is the one
 * checked (case C18: no swap between a check and an open): with O_NOFOLLOW unless `path`
 * is itself a symbolic link the operator named, then the descriptor's device and inode
 * compared with what lstat (stat through such a link) saw. Returns the descriptor, or
 * -errno: open's, or -EAGAIN when the path was replaced between the check and the open
 * (by another inode, or by a symbolic link where there was none). Any thread. */
int file_open_checked(const char *path, int flags);

#endif
