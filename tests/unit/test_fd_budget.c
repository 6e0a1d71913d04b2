/* Unit tests of the descriptor budget (src/util/fd_budget.c): fd_budget_left counts what the
 * soft RLIMIT_NOFILE still allows, down to 0 when not one more descriptor can be opened (it
 * needs one itself to read /proc/self/fd); fd_budget_allows keeps FD_BUDGET_RESERVE free;
 * fd_budget_describe names the count and the limit. Each test sets the soft limit just
 * above the descriptors open now and restores it. */
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

/* The descriptors open now, counted the way the test knows to be right: the lowest free
 * numbers are not enough (there may be holes), so every number below 4096 is tried. */
static int open_now(void)
{
  int n = 0;

  for (int fd = 0; fd < 4096; fd++) {
    if (fcntl(fd, F_GETFD) >= 0) {
      n++;
    }
  }
  return n;
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

/* With the soft limit at open + 5, 5 are left; each descriptor opened takes one. */
static void test_left_counts_down_with_each_open(void **state)
{
  int fds[5];
  int base = open_now();

  (void)state;
  limit_to((rlim_t)base + 5);
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
  int base = open_now();

  (void)state;
  limit_to((rlim_t)base + FD_BUDGET_RESERVE + 3);
  assert_true(fd_budget_allows(0));
  assert_true(fd_budget_allows(3));
  assert_false(fd_budget_allows(4));
  limit_to((rlim_t)base + FD_BUDGET_RESERVE - 1);
  assert_false(fd_budget_allows(0));
}

static void test_describe_names_count_and_limit(void **state)
{
  char buf[128], want[128];
  int base = open_now();

  (void)state;
  limit_to((rlim_t)base + 1);
  snprintf(want, sizeof want,
           "only 1 more file can be opened (the open-files limit, ulimit -Hn, is %d)", base + 1);
  assert_string_equal(fd_budget_describe(buf, sizeof buf), want);
  limit_to((rlim_t)base + 7);
  snprintf(want, sizeof want,
           "only 7 more files can be opened (the open-files limit, ulimit -Hn, is %d)", base + 7);
  assert_string_equal(fd_budget_describe(buf, sizeof buf), want);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_left_counts_down_with_each_open, setup, teardown),
    cmocka_unit_test_setup_teardown(test_allows_keeps_the_reserve, setup, teardown),
    cmocka_unit_test_setup_teardown(test_describe_names_count_and_limit, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
