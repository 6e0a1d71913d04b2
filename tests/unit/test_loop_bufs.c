/* SPDX-License-Identifier: MIT */
/* Unit tests of a loop's registered-buffer table (src/io/loop_bufs.c) on a real ring:
 * a registered buffer serves READ_FIXED with the file's bytes, an emptied slot no longer
 * does (the kernel answers -EFAULT), emptied slots are handed out again, and a full table
 * answers 0 (the caller then uses its buffer unregistered). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/loop_bufs.h"

static struct io_uring ring;
static struct loop_bufs table;

static int setup(void **state)
{
  (void)state;
  if (io_uring_queue_init(8, &ring, 0) != 0) {
    return -1;
  }
  return loop_bufs_init(&table, &ring) == 0 ? 0 : -1; /* Linux 5.19 or later */
}

static int teardown(void **state)
{
  (void)state;
  io_uring_queue_exit(&ring);
  return 0;
}

/* READ_FIXED of `len` bytes at offset 0 of fd into buf through slot `fixed - 1`. Returns
 * the CQE's result (bytes or -errno). */
static int read_fixed(int fd, void *buf, unsigned len, unsigned fixed)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
  struct io_uring_cqe *cqe;
  int res;

  assert_non_null(sqe);
  io_uring_prep_read_fixed(sqe, fd, buf, len, 0, (int)(fixed - 1));
  assert_int_equal(io_uring_submit(&ring), 1);
  assert_int_equal(io_uring_wait_cqe(&ring, &cqe), 0);
  res = cqe->res;
  io_uring_cqe_seen(&ring, cqe);
  return res;
}

static void test_registered_buffer_reads_and_emptied_slot_refuses(void **state)
{
  char path[] = "/tmp/diskgate-loop-bufs-XXXXXX";
  int fd = mkstemp(path);
  unsigned char data[8192];
  void *buf;
  unsigned fixed;

  (void)state;
  assert_true(fd >= 0);
  unlink(path);
  for (size_t i = 0; i < sizeof data; i++) {
    data[i] = (unsigned char)(i * 7 + 3);
  }
  assert_int_equal(pwrite(fd, data, sizeof data, 0), (ssize_t)sizeof data);
  assert_int_equal(posix_memalign(&buf, 4096, sizeof data), 0);
  memset(buf, 0, sizeof data);
  fixed = loop_bufs_add(&table, buf, sizeof data);
  assert_int_equal(fixed, 1); /* slot 0 */
  assert_int_equal(table.used, 1);
  assert_int_equal(read_fixed(fd, buf, sizeof data, fixed), (int)sizeof data);
  assert_memory_equal(buf, data, sizeof data);
  loop_bufs_remove(&table, fixed);
  assert_int_equal(table.used, 0);
  assert_int_equal(read_fixed(fd, buf, sizeof data, fixed), -EFAULT);
  /* The emptied slot is the next one handed out. */
  fixed = loop_bufs_add(&table, buf, sizeof data);
  assert_int_equal(fixed, 1);
  loop_bufs_remove(&table, fixed);
  loop_bufs_remove(&table, 0); /* nothing */
  assert_int_equal(table.used, 0);
  free(buf);
  close(fd);
}

static void test_full_table_answers_zero(void **state)
{
  const size_t each = 4096;
  unsigned char *area;
  unsigned fixed;

  (void)state;
  assert_int_equal(posix_memalign((void **)&area, 4096, each), 0);
  for (unsigned i = 0; i < LOOP_BUFS_MAX; i++) {
    fixed = loop_bufs_add(&table, area, each); /* one page in every slot: the kernel allows it */
    if (fixed == 0 && table.refused) {
      skip(); /* RLIMIT_MEMLOCK without CAP_IPC_LOCK: the kernel counts each registration */
    }
    assert_true(fixed >= 1 && fixed <= LOOP_BUFS_MAX);
  }
  assert_int_equal(table.used, LOOP_BUFS_MAX);
  assert_int_equal(loop_bufs_add(&table, area, each), 0);
  loop_bufs_remove(&table, 5);
  assert_int_equal(loop_bufs_add(&table, area, each), 5);
  for (unsigned f = 1; f <= LOOP_BUFS_MAX; f++) {
    loop_bufs_remove(&table, f);
  }
  assert_int_equal(table.used, 0);
  assert_false(table.refused);
  free(area);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_registered_buffer_reads_and_emptied_slot_refuses),
    cmocka_unit_test(test_full_table_answers_zero),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
