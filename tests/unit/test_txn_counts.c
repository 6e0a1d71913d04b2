/* SPDX-License-Identifier: MIT */
/* test_txn_counts.c: unit tests of server/txn_counts.h, a connection's requests counted by
 * kind for the --verbose end line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd/proto.h"
#include "server/txn_counts.h"

static void test_each_kind_counted_apart(void **state)
{
  struct txn_counts c;
  char out[192];

  (void)state;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 3; i++) {
    txn_counts_add(&c, NBD_CMD_READ, 0);
  }
  txn_counts_add(&c, NBD_CMD_WRITE, 0);
  txn_counts_add(&c, NBD_CMD_WRITE, NBD_CMD_FLAG_FUA);
  txn_counts_add(&c, NBD_CMD_FLUSH, 0);
  for (int i = 0; i < 4; i++) {
    txn_counts_add(&c, NBD_CMD_TRIM, 0);
  }
  for (int i = 0; i < 5; i++) {
    txn_counts_add(&c, NBD_CMD_WRITE_ZEROES, i == 0 ? NBD_CMD_FLAG_FUA : 0);
  }
  txn_counts_add(&c, NBD_CMD_CACHE, 0);
  txn_counts_add(&c, NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_FUA); /* not a write: not FUA */
  txn_counts_add(&c, 99, 0);
  assert_string_equal(txn_counts_format(&c, out, sizeof out),
                      "reads=3 writes=2 flushes=1 fua=2 trims=4 zeroes=5 other=3");
}

static void test_zero_and_cut(void **state)
{
  struct txn_counts c;
  char out[16];

  (void)state;
  memset(&c, 0, sizeof c);
  assert_string_equal(txn_counts_format(&c, out, sizeof out), "reads=0 writes=");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_each_kind_counted_apart),
    cmocka_unit_test(test_zero_and_cut),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
