/* SPDX-License-Identifier: MIT */
/* test_listen_hosts.c: unit tests of server/listen_hosts.h, the hosts a TCP listener's URIs
 * name: a wildcard listener's are the host's own addresses, loopback first. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/listen_hosts.h"

/* A TCP socket bound to the IPv4 `addr`, port 0. */
static int bound_v4(const char *addr)
{
  struct sockaddr_in sin = {.sin_family = AF_INET};
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  assert_true(fd >= 0);
  assert_int_equal(inet_pton(AF_INET, addr, &sin.sin_addr), 1);
  assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
  return fd;
}

static void test_wildcard_lists_addresses(void **state)
{
  char hosts[LISTEN_HOSTS_MAX][LISTEN_HOST_SIZE];
  int fd = bound_v4("0.0.0.0");
  size_t n = listen_hosts_of(fd, "0.0.0.0", hosts, LISTEN_HOSTS_MAX);

  (void)state;
  assert_true(n >= 1);
  assert_string_equal(hosts[0], "127.0.0.1");
  for (size_t i = 0; i < n; i++) {
    struct in_addr a;
    assert_int_equal(inet_pton(AF_INET, hosts[i], &a), 1); /* IPv4 only */
    assert_true(strcmp(hosts[i], "0.0.0.0") != 0);
    for (size_t j = 0; j < i; j++) {
      assert_true(strcmp(hosts[i], hosts[j]) != 0);
    }
  }
  assert_int_equal(listen_hosts_of(fd, "0.0.0.0", hosts, 1), 1); /* max honoured */
  close(fd);
}

static void test_specific_address_as_given(void **state)
{
  char hosts[2][LISTEN_HOST_SIZE];
  int fd = bound_v4("127.0.0.1");

  (void)state;
  assert_int_equal(listen_hosts_of(fd, "localhost", hosts, 2), 1);
  assert_string_equal(hosts[0], "localhost");
  close(fd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_wildcard_lists_addresses),
    cmocka_unit_test(test_specific_address_as_given),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
