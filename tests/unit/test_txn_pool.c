/* SPDX-License-Identifier: MIT */
/* Unit tests of the per-connection request pool (src/server/txn_pool.c): reuse keeps the
 * buffer and zeroes the rest, buffers grow to what a request needs (4096-aligned), and the
 * idle pool stays within TXN_POOL_MAX requests, TXN_POOL_BYTES_MAX bytes and
 * TXN_POOL_BUF_MAX per buffer; a buffer registered with a loop's ring (buf_fixed) is
 * unregistered before it is freed or replaced, and txn_pool_unregister_all empties the
 * idle ones (io/loop_bufs.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/txn.h"
#include "server/txn_pool.h"

static void test_reuse_keeps_buffer_and_zeroes_fields(void **state)
{
  struct txn_pool p;
  struct conn_req *r, *again;
  void *buf;

  (void)state;
  txn_pool_init(&p);
  r = txn_pool_get(&p, 4096);
  assert_non_null(r);
  assert_non_null(r->buf);
  assert_int_equal((uintptr_t)r->buf % 4096, 0);
  assert_true(r->buf_cap >= 4096);
  buf = r->buf;
  r->cost = 77;
  r->fenced = true;
  r->op.offset = 12345;
  r->hdr_len = 16;
  r->send_data = true;
  txn_pool_put(&p, r);
  assert_int_equal(p.count, 1);
  again = txn_pool_get(&p, 512); /* smaller: the same buffer */
  assert_ptr_equal(again, r);
  assert_ptr_equal(again->buf, buf);
  assert_int_equal(again->cost, 0);
  assert_false(again->fenced);
  assert_int_equal(again->op.offset, 0);
  assert_int_equal(again->hdr_len, 0);
  assert_false(again->send_data);
  assert_null(again->next);
  assert_int_equal(p.count, 0);
  assert_int_equal(p.bytes, 0);
  txn_pool_put(&p, again);
  txn_pool_destroy(&p);
}

static void test_buffer_grows_when_needed(void **state)
{
  struct txn_pool p;
  struct conn_req *r;

  (void)state;
  txn_pool_init(&p);
  r = txn_pool_get(&p, 0);
  assert_non_null(r);
  assert_null(r->buf);
  assert_int_equal(r->buf_cap, 0);
  txn_pool_put(&p, r);
  r = txn_pool_get(&p, 65536 + 1);
  assert_non_null(r->buf);
  assert_int_equal(r->buf_cap, 65536 + 4096); /* rounded up to 4096 */
  memset(r->buf, 0xAB, 65537);                /* ASan: the whole size is usable */
  txn_pool_put(&p, r);
  assert_int_equal(p.bytes, 65536 + 4096);
  txn_pool_destroy(&p);
}

static void test_bounds(void **state)
{
  struct txn_pool p;
  struct conn_req *rs[TXN_POOL_MAX + 8];
  struct conn_req *big;

  (void)state;
  txn_pool_init(&p);
  /* A buffer over TXN_POOL_BUF_MAX is freed on put; the request itself is kept. */
  big = txn_pool_get(&p, TXN_POOL_BUF_MAX + 4096);
  assert_non_null(big);
  txn_pool_put(&p, big);
  assert_int_equal(p.count, 1);
  assert_int_equal(p.bytes, 0);
  big = txn_pool_get(&p, 0);
  assert_null(big->buf);
  txn_pool_put(&p, big);
  /* More requests than TXN_POOL_MAX: the surplus is freed. */
  for (size_t i = 0; i < TXN_POOL_MAX + 8; i++) {
    rs[i] = txn_pool_get(&p, 0);
    assert_non_null(rs[i]);
  }
  for (size_t i = 0; i < TXN_POOL_MAX + 8; i++) {
    txn_pool_put(&p, rs[i]);
  }
  assert_int_equal(p.count, TXN_POOL_MAX);
  txn_pool_destroy(&p);
  /* Idle buffer bytes stay within TXN_POOL_BYTES_MAX. */
  txn_pool_init(&p);
  for (size_t i = 0; i < 24; i++) {
    rs[i] = txn_pool_get(&p, TXN_POOL_BUF_MAX);
    assert_non_null(rs[i]);
  }
  for (size_t i = 0; i < 24; i++) {
    txn_pool_put(&p, rs[i]);
  }
  assert_true(p.bytes <= TXN_POOL_BYTES_MAX);
  assert_int_equal(p.bytes, (size_t)TXN_POOL_BYTES_MAX / TXN_POOL_BUF_MAX * TXN_POOL_BUF_MAX);
  txn_pool_destroy(&p);
}

/* The slots buf_unregister was called with, in order. */
static unsigned dropped[TXN_POOL_MAX + 16];
static size_t ndropped;
static int drop_ctx;

static void record_unregister(void *ctx, unsigned fixed)
{
  assert_ptr_equal(ctx, &drop_ctx);
  assert_true(ndropped < sizeof dropped / sizeof dropped[0]);
  dropped[ndropped++] = fixed;
}

static void test_registered_buffers_unregistered_before_free(void **state)
{
  struct txn_pool p;
  struct conn_req *r, *rs[TXN_POOL_MAX + 4];

  (void)state;
  ndropped = 0;
  txn_pool_init(&p);
  assert_null(p.buf_unregister);
  p.buf_unregister = record_unregister;
  p.buf_ctx = &drop_ctx;
  /* Reuse keeps the buffer and its registration. */
  r = txn_pool_get(&p, 4096);
  assert_int_equal(r->buf_fixed, 0);
  r->buf_fixed = 7;
  txn_pool_put(&p, r);
  r = txn_pool_get(&p, 4096);
  assert_int_equal(r->buf_fixed, 7);
  assert_int_equal(ndropped, 0);
  /* A larger request replaces the buffer: slot 7 is emptied first, the new one is not
   * registered. */
  txn_pool_put(&p, r);
  r = txn_pool_get(&p, 3 * 4096);
  assert_int_equal(ndropped, 1);
  assert_int_equal(dropped[0], 7);
  assert_int_equal(r->buf_fixed, 0);
  /* A buffer over TXN_POOL_BUF_MAX is freed on put. */
  txn_pool_put(&p, r);
  r = txn_pool_get(&p, TXN_POOL_BUF_MAX + 4096);
  assert_int_equal(ndropped, 1); /* slot 0: nothing to unregister */
  r->buf_fixed = 9;
  txn_pool_put(&p, r);
  assert_int_equal(ndropped, 2);
  assert_int_equal(dropped[1], 9);
  /* The surplus over TXN_POOL_MAX is freed with its buffer. */
  for (size_t i = 0; i < TXN_POOL_MAX + 4; i++) {
    rs[i] = txn_pool_get(&p, 4096);
    rs[i]->buf_fixed = 100 + (unsigned)i;
  }
  for (size_t i = 0; i < TXN_POOL_MAX + 4; i++) {
    txn_pool_put(&p, rs[i]);
  }
  assert_int_equal(ndropped, 2 + 4);
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(dropped[2 + i], 100 + TXN_POOL_MAX + i);
  }
  /* The loop lets the connection go: every idle registered buffer is emptied, once. */
  txn_pool_unregister_all(&p);
  assert_int_equal(ndropped, 2 + 4 + TXN_POOL_MAX);
  assert_null(p.buf_unregister);
  for (r = p.free; r != NULL; r = r->next) {
    assert_int_equal(r->buf_fixed, 0);
  }
  txn_pool_unregister_all(&p); /* nothing left */
  assert_int_equal(ndropped, 2 + 4 + TXN_POOL_MAX);
  txn_pool_destroy(&p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reuse_keeps_buffer_and_zeroes_fields),
    cmocka_unit_test(test_buffer_grows_when_needed),
    cmocka_unit_test(test_bounds),
    cmocka_unit_test(test_registered_buffers_unregistered_before_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
