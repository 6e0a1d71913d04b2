/* SPDX-License-Identifier: MIT */
/* file_read.h: a whole small file read into memory, for credentials (the --tls-psk file,
 * X.509 certificates and keys) that must be read with their errno kept: GnuTLS's own file
 * loaders report any failure to read as GNUTLS_E_FILE_ERROR, so "Too many open files" read
 * as a bad file. Blocking: start-up and handshake threads, never an event loop. Units:
 * bytes. Any thread. Source: open(2), fstat(2), read(2). */
#ifndef DISKGATE_UTIL_FILE_READ_H
#define DISKGATE_UTIL_FILE_READ_H

#include <stddef.h>

/* Reads the regular file `path` (at most `max` bytes) into a new buffer, NUL-terminated
 * after its *len bytes. The file is opened non-blocking, so a FIFO put in its place does
 * not hang the caller. Returns 0, or -errno with *buf NULL: -EISDIR (a directory), -EINVAL
 * (not a regular file), -EFBIG (larger than max), -EAGAIN (it grew while read), -ENOMEM,
 * or open's or read's error (-ENOENT, -EACCES, -EMFILE, ...). A buffer read in part is
 * wiped before it is freed. The caller frees *buf with file_read_free. */
int file_read_all(const char *path, size_t max, char **buf, size_t *len);

/* The reason for file_read_all's error `err` (-errno) in an error line: "larger than N
 * MiB" for -EFBIG (max is the limit passed, bytes), "changed while it was read (try
 * again)" for -EAGAIN, else cli_startup_error's text (for -EMFILE, the open-files limit).
 * Returns buf (at most size bytes, NUL-terminated) or a static string. Any thread. */
const char *file_read_strerror(int err, size_t max, char *buf, size_t size);

/* file_read_all, and on failure "PATH: reason" (file_read_strerror's) in err (at most
 * errlen bytes, NUL-terminated). Returns what file_read_all returns. */
int file_read_all_or_explain(const char *path, size_t max, char **buf, size_t *len, char *err,
                             size_t errlen);

/* Wipes the first len bytes of buf (a key stays in no freed memory) and frees it; NULL is
 * fine. */
void file_read_free(char *buf, size_t len);

#endif
