/* SPDX-License-Identifier: MIT */
/* test_service.c: the sockets passed by socket activation sorted by name (service.h):
 * an NBD listener adopted, the reserved "control" kept for service_listener_take once,
 * "metrics" absent; the passed Unix socket files left in place at close; a reserved name
 * on a socket of the wrong family refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/service.h"

/* A listening socket moved to descriptor `at`: TCP on 127.0.0.1 when path is NULL, else
 * Unix at path. */
static void listener_at(int at, const char *path)
{
  int fd;

  if (path == NULL) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  } else {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  }
  assert_int_equal(listen(fd, 8), 0);
  if (fd != at) {
    assert_int_equal(dup2(fd, at), at);
    close(fd);
  }
}

static void test_names_sorted(void **state)
{
  char dir[] = "/tmp/dgsvc.XXXXXX", nbd_path[64], ctl_path[64], pid[32];
  struct listener ls[LISTEN_MAX], cl, other;
  struct stat st;
  size_t n = 0;

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(nbd_path, sizeof nbd_path, "%s/nbd.sock", dir);
  snprintf(ctl_path, sizeof ctl_path, "%s/ctl.sock", dir);
  listener_at(3, nbd_path);
  listener_at(4, ctl_path);
  listener_at(5, NULL);
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  setenv("LISTEN_PID", pid, 1);
  setenv("LISTEN_FDS", "3", 1);
  setenv("LISTEN_FDNAMES", "local:control:tcp", 1);

  assert_int_equal(service_listeners_take_all(ls, LISTEN_MAX, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(ls[0].fd, 3);
  assert_string_equal(ls[0].unix_path, nbd_path);
  assert_string_equal(ls[0].name, "local");
  assert_int_equal(ls[1].fd, 5);
  assert_null(ls[1].unix_path);
  assert_string_equal(ls[1].host, "127.0.0.1");
  assert_true(ls[1].port > 0);
  assert_null(getenv("LISTEN_FDS")); /* not passed on to children */

  assert_int_equal(service_listener_take(SERVICE_NAME_CONTROL, &cl), 0);
  assert_int_equal(cl.fd, 4);
  assert_string_equal(cl.unix_path, ctl_path);
  assert_string_equal(cl.name, SERVICE_NAME_CONTROL);
  assert_true(cl.keep_file);
  other.fd = -7;
  assert_int_equal(service_listener_take(SERVICE_NAME_CONTROL, &other), -ENOENT); /* taken */
  assert_int_equal(service_listener_take(SERVICE_NAME_METRICS, &other), -ENOENT); /* absent */
  assert_int_equal(other.fd, -7); /* untouched */
  listen_close(&cl);
  assert_int_equal(stat(ctl_path, &st), 0); /* systemd's file: not removed */

  listen_close(&ls[0]);
  listen_close(&ls[1]);
  assert_int_equal(stat(nbd_path, &st), 0); /* systemd's file: not removed */
  unlink(nbd_path);
  unlink(ctl_path);
  rmdir(dir);
}

/* A reserved name on a socket of the wrong family: the control socket must be Unix, the
 * metrics endpoint TCP. Every passed socket is closed, nothing is kept. */
static void test_reserved_family(void **state)
{
  static const char *const names[] = {"nbd:control", "nbd:metrics"};
  char dir[] = "/tmp/dgsvc.XXXXXX", nbd_path[64], other_path[64], pid[32];
  struct listener ls[LISTEN_MAX], l;
  size_t n = 7;

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(nbd_path, sizeof nbd_path, "%s/nbd.sock", dir);
  snprintf(other_path, sizeof other_path, "%s/other.sock", dir);
  for (size_t i = 0; i < 2; i++) {
    listener_at(3, nbd_path);
    listener_at(4, i == 0 ? NULL : other_path); /* control on TCP, metrics on Unix */
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDS", "2", 1);
    setenv("LISTEN_FDNAMES", names[i], 1);
    assert_int_equal(service_listeners_take_all(ls, LISTEN_MAX, &n), -EINVAL);
    assert_int_equal(n, 0);
    assert_int_equal(fcntl(3, F_GETFD), -1); /* closed */
    assert_int_equal(fcntl(4, F_GETFD), -1);
    assert_int_equal(service_listener_take(SERVICE_NAME_CONTROL, &l), -ENOENT);
    assert_int_equal(service_listener_take(SERVICE_NAME_METRICS, &l), -ENOENT);
    unlink(nbd_path);
    unlink(other_path);
  }
  rmdir(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_names_sorted),
    cmocka_unit_test(test_reserved_family),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
