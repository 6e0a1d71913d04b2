/* SPDX-License-Identifier: MIT */
/* Unit tests of the descriptor budget (src/util/fd_budget.c): fd_budget_left counts what the
 * soft RLIMIT_NOFILE still allows, down to 0 when not one more descriptor can be opened (it
 * needs one itself to read /proc/self/fd); fd_budget_allows keeps FD_BUDGET_RESERVE free;
 * a descriptor numbered above the limit does not count; fd_budget_describe names the count
 * and the limit. Each test sets the soft limit just above the descriptors open below it
 * and restores it; descriptors inherited from the caller, at any number, are allowed. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/fd_budget.h"

static struct rlimit saved;

/* The descriptors open now with a number below `limit`, counted the way the test knows
 * to be right: every number below it is tried (there may be holes). */
static int open_below(int limit)
{
  int n = 0;

  for (int fd = 0; fd < limit; fd++) {
    if (fcntl(fd, F_GETFD) >= 0) {
      n++;
    }
  }
  return n;
}

/* The lowest soft limit at which exactly `free_fds` more descriptors can be opened (the
 * count below the limit grows by at most one per step, so the first hit is exact). */
static int limit_leaving(int free_fds)
{
  int limit = free_fds;

  while (limit - open_below(limit) < free_fds) {
    limit++;
  }
  assert_int_equal(limit - open_below(limit), free_fds);
  return limit;
}

static void limit_to(rlim_t soft)
{
  struct rlimit rl = saved;

  rl.rlim_cur = soft;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static int setup(void **state)
{
  (void)state;
  return getrlimit(RLIMIT_NOFILE, &saved);
}

static int teardown(void **state)
{
  (void)state;
  return setrlimit(RLIMIT_NOFILE, &saved);
}

/* With the soft limit 5 above what is open below it, 5 are left; each descriptor opened
 * takes one. */
static void test_left_counts_down_with_each_open(void **state)
{
  int fds[5];

  (void)state;
  limit_to((rlim_t)limit_leaving(5));
  assert_int_equal(fd_budget_left(), 5);
  for (int i = 0; i < 5; i++) {
    fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fds[i] >= 0);
    assert_int_equal(fd_budget_left(), 4 - i);
  }
  /* at 0 the count's own opendir fails with EMFILE: that is 0, not an error */
  assert_int_equal(open("/dev/null", O_RDONLY | O_CLOEXEC), -1);
  assert_int_equal(fd_budget_left(), 0);
  for (int i = 0; i < 5; i++) {
    close(fds[i]);
  }
  assert_int_equal(fd_budget_left(), 5);
}

/* fd_budget_allows(want): true only when want + FD_BUDGET_RESERVE are left. */
static void test_allows_keeps_the_reserve(void **state)
{
  (void)state;
  limit_to((rlim_t)limit_leaving(FD_BUDGET_RESERVE + 3));
  assert_true(fd_budget_allows(0));
  assert_true(fd_budget_allows(3));
  assert_false(fd_budget_allows(4));
  limit_to((rlim_t)limit_leaving(FD_BUDGET_RESERVE - 1));
  assert_false(fd_budget_allows(0));
}

/* A descriptor numbered above the limit (inherited, or open before the limit was lowered)
 * takes none of the numbers that can still be opened: it does not count. */
static void test_descriptors_above_the_limit_do_not_count(void **state)
{
  int high, limit, fds[3];

  (void)state;
  high = fcntl(0, F_DUPFD_CLOEXEC, 1000);
  assert_true(high >= 1000);
  limit = limit_leaving(3);
  assert_true(limit < high);
  limit_to((rlim_t)limit);
  assert_int_equal(fd_budget_left(), 3);
  for (int i = 0; i < 3; i++) { /* exactly 3 opens succeed */
    fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fds[i] >= 0);
  }
  assert_int_equal(open("/dev/null", O_RDONLY | O_CLOEXEC), -1);
  assert_int_equal(fd_budget_left(), 0);
  for (int i = 0; i < 3; i++) {
    close(fds[i]);
  }
  close(high);
}

static void test_describe_names_count_and_limit(void **state)
{
  char buf[128], want[128];
  int limit;

  (void)state;
  limit = limit_leaving(1);
  limit_to((rlim_t)limit);
  snprintf(want, sizeof want,
           "only 1 more file can be opened (the open-files limit, ulimit -Hn, is %d)", limit);
  assert_string_equal(fd_budget_describe(buf, sizeof buf), want);
  limit = limit_leaving(7);
  limit_to((rlim_t)limit);
  snprintf(want, sizeof want,
           "only 7 more files can be opened (the open-files limit, ulimit -Hn, is %d)", limit);
  assert_string_equal(fd_budget_describe(buf, sizeof buf), want);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_left_counts_down_with_each_open, setup, teardown),
    cmocka_unit_test_setup_teardown(test_allows_keeps_the_reserve, setup, teardown),
    cmocka_unit_test_setup_teardown(test_descriptors_above_the_limit_do_not_count, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_describe_names_count_and_limit, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
