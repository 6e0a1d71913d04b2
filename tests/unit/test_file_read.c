/* SPDX-License-Identifier: MIT */
/* Unit tests of the whole-file reader for credentials (src/util/file_read.c): the bytes and
 * their count, a NUL after them, and each error as -errno with no buffer: a missing file,
 * a directory, a FIFO (which must not block), a file over the size limit, a file that
 * holds more than its size said; and the error texts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/file_read.h"

static char dir[] = "/tmp/dg-file-read.XXXXXX";

static void path_in_dir(char *out, size_t size, const char *name)
{
  snprintf(out, size, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *data, size_t len)
{
  FILE *f = fopen(path, "wb");

  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
  (void)state;
  return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
  char cmd[128];

  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_reads_bytes_and_terminates(void **state)
{
  char path[256], *buf = NULL;
  size_t len = 99;
  static const char data[] = "key\0with a NUL\n";

  (void)state;
  path_in_dir(path, sizeof path, "a");
  write_file(path, data, sizeof data - 1);
  assert_int_equal(file_read_all(path, 1024, &buf, &len), 0);
  assert_int_equal(len, sizeof data - 1);
  assert_memory_equal(buf, data, sizeof data - 1);
  assert_int_equal(buf[len], '\0');
  file_read_free(buf, len);

  path_in_dir(path, sizeof path, "empty");
  write_file(path, "", 0);
  assert_int_equal(file_read_all(path, 1024, &buf, &len), 0);
  assert_int_equal(len, 0);
  assert_int_equal(buf[0], '\0');
  file_read_free(buf, len);
}

static void test_errors_are_errno_without_a_buffer(void **state)
{
  char path[256], *buf = (char *)1;
  size_t len = 0;

  (void)state;
  path_in_dir(path, sizeof path, "missing");
  assert_int_equal(file_read_all(path, 1024, &buf, &len), -ENOENT);
  assert_null(buf);

  buf = (char *)1;
  assert_int_equal(file_read_all(dir, 1024, &buf, &len), -EISDIR);
  assert_null(buf);

  path_in_dir(path, sizeof path, "fifo");
  assert_int_equal(mkfifo(path, 0600), 0);
  buf = (char *)1;
  assert_int_equal(file_read_all(path, 1024, &buf, &len), -EINVAL); /* and did not block */
  assert_null(buf);

  /* the limit is on the size: max bytes are fine, max + 1 are not */
  path_in_dir(path, sizeof path, "big");
  write_file(path, "0123456789", 10);
  assert_int_equal(file_read_all(path, 10, &buf, &len), 0);
  assert_int_equal(len, 10);
  file_read_free(buf, len);
  buf = (char *)1;
  assert_int_equal(file_read_all(path, 9, &buf, &len), -EFBIG);
  assert_null(buf);

  file_read_free(NULL, 0); /* NULL is fine */
}

/* A file that holds more than fstat said: /proc/self/status is a regular file of size 0
 * with text in it, like a file that grows while it is read. The reader must stop at the
 * buffer's end (one byte more than the size) and say -EAGAIN, not cut the file short or
 * write its NUL past the buffer. */
static void test_a_file_that_grew_is_eagain(void **state)
{
  char *buf = (char *)1;
  size_t len = 0;

  (void)state;
  assert_int_equal(file_read_all("/proc/self/status", 1024, &buf, &len), -EAGAIN);
  assert_null(buf);
}

static void test_error_texts(void **state)
{
  char buf[128];

  (void)state;
  assert_string_equal(file_read_strerror(-EFBIG, (size_t)256 << 20, buf, sizeof buf),
                      "larger than 256 MiB");
  assert_string_equal(file_read_strerror(-EAGAIN, 1024, buf, sizeof buf),
                      "changed while it was read (try again)");
  assert_string_equal(file_read_strerror(-EACCES, 1024, buf, sizeof buf), "Permission denied");
}

static void test_explained_error_names_the_path(void **state)
{
  char path[256], want[320], err[320], *buf = (char *)1;
  size_t len = 0;

  (void)state;
  path_in_dir(path, sizeof path, "absent");
  snprintf(want, sizeof want, "%s: No such file or directory", path);
  assert_int_equal(file_read_all_or_explain(path, 1024, &buf, &len, err, sizeof err), -ENOENT);
  assert_null(buf);
  assert_string_equal(err, want);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reads_bytes_and_terminates),
    cmocka_unit_test(test_errors_are_errno_without_a_buffer),
    cmocka_unit_test(test_a_file_that_grew_is_eagain),
    cmocka_unit_test(test_error_texts),
    cmocka_unit_test(test_explained_error_names_the_path),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
