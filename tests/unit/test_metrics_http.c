/* SPDX-License-Identifier: MIT */
/* test_metrics_http.c: the metrics endpoint's socket ownership (metrics_http.h). The
 * caller's listening socket stays open and listening after metrics_http_stop (a restart
 * hands it on), and stopping closes no descriptor a second time: a number the HTTP daemon
 * freed and another thread reused at once (played here by reopening every freed number
 * right after MHD_stop_daemon, wrapped with -Wl,--wrap) is still open when
 * metrics_http_stop returns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/metrics_http.h"

#define FDS_SCANNED 256

void __real_MHD_stop_daemon(struct MHD_Daemon *daemon);
void __wrap_MHD_stop_daemon(struct MHD_Daemon *daemon);

/* The descriptor numbers the daemon's stop freed, each reopened on /dev/null. */
static bool reused[FDS_SCANNED];

static bool fd_open(int fd)
{
  return fcntl(fd, F_GETFD) >= 0;
}

void __wrap_MHD_stop_daemon(struct MHD_Daemon *daemon)
{
  bool was_open[FDS_SCANNED];

  for (int fd = 0; fd < FDS_SCANNED; fd++) {
    was_open[fd] = fd_open(fd);
  }
  __real_MHD_stop_daemon(daemon);
  for (int fd = 0; fd < FDS_SCANNED; fd++) {
    if (was_open[fd] && !fd_open(fd)) {
      int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      assert_true(null_fd >= 0);
      if (null_fd != fd) {
        assert_int_equal(dup2(null_fd, fd), fd);
        close(null_fd);
      }
      reused[fd] = true;
    }
  }
}

static void test_stop_closes_only_its_own(void **state)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct metrics_http *m = NULL;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), listening = 0;
  socklen_t len = sizeof listening;

  (void)state;
  assert_true(fd >= 0 && fd < FDS_SCANNED);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 8), 0);
  assert_int_equal(metrics_http_start((struct server *)&a, fd, &m), 0); /* no scrape */
  metrics_http_stop(m);

  assert_false(reused[fd]); /* the caller's socket was not closed */
  for (int i = 0; i < FDS_SCANNED; i++) {
    if (reused[i]) {
      assert_true(fd_open(i)); /* not closed a second time */
      close(i);
    }
  }
  assert_true(fd_open(fd));
  assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len), 0);
  assert_int_equal(listening, 1);
  close(fd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stop_closes_only_its_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
