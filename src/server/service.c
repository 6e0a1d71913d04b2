/* SPDX-License-Identifier: MIT */
/* service.c: see service.h. */
#include "server/service.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

#define SERVICE_RESTART_NAMES_ENV "DISKGATE_LISTEN_FDNAMES"
#define SERVICE_RESERVED_MAX 2

/* The reserved sockets passed by systemd, until taken: l.fd -1 once taken or never passed.
 * The control socket is a Unix socket, the metrics endpoint TCP. */
static struct {
  const char *name;
  bool unix_socket; /* a Unix socket; else TCP */
  const char *needs;
  struct listener l;
} reserved[SERVICE_RESERVED_MAX] = {
  {SERVICE_NAME_CONTROL, true, "the control socket is a Unix socket (ListenStream=/PATH)",
   {.fd = -1}},
  {SERVICE_NAME_METRICS, false, "the metrics endpoint is a TCP socket (ListenStream=HOST:PORT)",
   {.fd = -1}},
};

/* True once listeners came from systemd (directly, or through a restart): a restart then
 * passes their names on. */
static bool activated;

/* The last STATUS= sent ((size_t)-1 exports: none yet), and when (CLOCK_MONOTONIC ms). */
static size_t status_exports = (size_t)-1;
static unsigned status_conns = (unsigned)-1;
static long long status_sent_ms;

/* One line describing the socket `fd` in `out` ("127.0.0.1:10809", "[::1]:10809",
 * "unix:/run/x.sock", "unix:@abstract"), and its family in *family. Returns 0, or -EINVAL
 * when it is not a listening stream socket of a family served (why in `why`). */
static int service_socket_check(int fd, char *out, size_t size, int *family, const char **why)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  int type = 0, listening = 0;
  socklen_t ilen = sizeof type;
  char addr[INET6_ADDRSTRLEN] = "?";

  snprintf(out, size, "fd %d", fd);
  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
    *why = "not a socket";
    return -EINVAL;
  }
  *family = ss.ss_family;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
    snprintf(out, size, "%s:%u", addr, ntohs(s4->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof addr);
    snprintf(out, size, "[%s]:%u", addr, ntohs(s6->sin6_port));
  } else if (ss.ss_family == AF_UNIX) {
    struct sockaddr_un *su = (struct sockaddr_un *)&ss;
    size_t plen = len > offsetof(struct sockaddr_un, sun_path)
                      ? len - offsetof(struct sockaddr_un, sun_path) : 0;
    if (plen > 0 && su->sun_path[0] == '\0') {
      snprintf(out, size, "unix:@%.*s", (int)(plen - 1), su->sun_path + 1);
    } else {
      snprintf(out, size, "unix:%.*s", (int)strnlen(su->sun_path, plen), su->sun_path);
    }
  } else {
    *why = "not a TCP or Unix socket";
    return -EINVAL;
  }
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ilen) < 0 || type != SOCK_STREAM) {
    *why = "not a stream socket (ListenStream= is needed, not ListenDatagram=)";
    return -EINVAL;
  }
  ilen = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) < 0 || !listening) {
    *why = "not a listening socket (Accept=no is needed)";
    return -EINVAL;
  }
  return 0;
}

/* Adopts the listening socket `fd` of `family`, described by `where` (service_socket_check),
 * as listener l named `name`, its Unix socket file left in place at close. Returns 0, or
 * -errno after one line on stderr. */
static int service_adopt_as(int fd, int family, const char *where, const char *name,
                            struct listener *l)
{
  char shown[LOG_SHOWN_MAX];
  int rc;

  if (family == AF_UNIX) {
    rc = listen_adopt(l, fd, NULL, where + strlen("unix:"));
  } else {
    char host[INET6_ADDRSTRLEN + 2];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(where, ':') - where), where);
    if (host[0] == '[') {
      memmove(host, host + 1, strlen(host));
      host[strlen(host) - 1] = '\0';
    }
    rc = listen_adopt(l, fd, host, NULL);
  }
  if (rc < 0) {
    fprintf(stderr, "diskgate serve: systemd socket '%s' (%s): %s\n",
            log_escape_str(shown, sizeof shown, name), where, strerror(-rc));
    return rc;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  l->keep_file = true;
  snprintf(l->name, sizeof l->name, "%s", name);
  return 0;
}

/* Adopts `fd` named `name` as listener l, or keeps it as a reserved socket (l untouched,
 * returns 1). Returns 0 when adopted, or -EINVAL after one line on stderr. */
static int service_adopt_one(int fd, const char *name, struct listener *l)
{
  char where[160], shown[LOG_SHOWN_MAX];
  const char *why = NULL;
  int family = 0, rc;

  log_escape_str(shown, sizeof shown, name);
  rc = service_socket_check(fd, where, sizeof where, &family, &why);
  if (rc < 0) {
    fprintf(stderr, "diskgate serve: systemd socket '%s' (%s): %s\n", shown, where, why);
    return rc;
  }
  for (size_t i = 0; i < SERVICE_RESERVED_MAX; i++) {
    if (strcmp(name, reserved[i].name) == 0) {
      if (reserved[i].l.fd >= 0) {
        fprintf(stderr, "diskgate serve: systemd passed two sockets named '%s'\n", shown);
        return -EINVAL;
      }
      if (reserved[i].unix_socket != (family == AF_UNIX)) {
        fprintf(stderr, "diskgate serve: systemd socket '%s' (%s): %s\n", shown, where,
                reserved[i].needs);
        return -EINVAL;
      }
      if (service_adopt_as(fd, family, where, name, &reserved[i].l) < 0) {
        return -EINVAL;
      }
      log_info("systemd socket '%s': %s (kept for the %s)", shown, where, name);
      return 1;
    }
  }
  if (service_adopt_as(fd, family, where, name, l) < 0) {
    return -EINVAL;
  }
  log_info("systemd socket '%s': NBD listener on %s", shown, where);
  return 0;
}

/* Adopts fds[0..n) named names[0..n) (NULL: "unknown") as listeners ls[0..max). Returns
 * 0 and *nls, or -EINVAL after one line on stderr (every fd closed then). */
static int service_adopt_all(const int *fds, char **names, size_t n, struct listener *ls,
                             size_t max, size_t *nls)
{
  int rc = 0;

  *nls = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *name = names != NULL && names[i] != NULL ? names[i] : "unknown";
    if (*nls == max) {
      fprintf(stderr, "diskgate serve: systemd passed more than %zu NBD listeners\n", max);
      rc = -EINVAL;
      break;
    }
    rc = service_adopt_one(fds[i], name, &ls[*nls]);
    if (rc == 0) {
      (*nls)++;
    }
    rc = rc > 0 ? 0 : rc;
  }
  if (rc == 0 && *nls == 0) {
    fprintf(stderr, "diskgate serve: systemd passed no socket for NBD (only reserved names: "
            "%s, %s)\n", SERVICE_NAME_CONTROL, SERVICE_NAME_METRICS);
    rc = -EINVAL;
  }
  if (rc < 0) {
    /* each passed fd closed once: by its listener's close, or here */
    for (size_t i = 0; i < n; i++) {
      bool adopted = false;
      for (size_t j = 0; j < *nls; j++) {
        adopted = adopted || ls[j].fd == fds[i];
      }
      for (size_t j = 0; j < SERVICE_RESERVED_MAX; j++) {
        adopted = adopted || reserved[j].l.fd == fds[i];
      }
      if (!adopted) {
        close(fds[i]);
      }
    }
    for (size_t i = 0; i < *nls; i++) {
      listen_close(&ls[i]);
    }
    for (size_t i = 0; i < SERVICE_RESERVED_MAX; i++) {
      listen_close(&reserved[i].l);
    }
    *nls = 0;
    return rc;
  }
  activated = true;
  return 0;
}

int service_listeners_take_all(struct listener *ls, size_t max, size_t *n)
{
  char **names = NULL;
  int fds[64];
  int count = sd_listen_fds_with_names(1, &names); /* unsets LISTEN_* for children */
  int rc;

  *n = 0;
  if (count <= 0) {
    if (count < 0) {
      fprintf(stderr, "diskgate serve: the sockets passed by systemd (LISTEN_FDS): %s\n",
              strerror(-count));
    }
    return count;
  }
  if (count > (int)(sizeof fds / sizeof fds[0])) {
    fprintf(stderr, "diskgate serve: systemd passed %d sockets; at most %zu are used\n",
            count, sizeof fds / sizeof fds[0]);
    for (int i = 0; i < count; i++) {
      close(SD_LISTEN_FDS_START + i);
    }
    rc = -EINVAL;
  } else {
    for (int i = 0; i < count; i++) {
      fds[i] = SD_LISTEN_FDS_START + i;
    }
    rc = service_adopt_all(fds, names, (size_t)count, ls, max, n);
  }
  if (names != NULL) {
    for (int i = 0; i < count; i++) {
      free(names[i]);
    }
    free(names);
  }
  return rc;
}

int service_listener_take(const char *name, struct listener *l)
{
  for (size_t i = 0; i < SERVICE_RESERVED_MAX; i++) {
    if (strcmp(name, reserved[i].name) == 0 && reserved[i].l.fd >= 0) {
      *l = reserved[i].l;
      memset(&reserved[i].l, 0, sizeof reserved[i].l);
      reserved[i].l.fd = -1;
      return 0;
    }
  }
  return -ENOENT;
}

int service_restart_env(const struct listener *ls, size_t n)
{
  char names[SERVICE_HANDOVER_MAX * (sizeof ls[0].name + 1) + 1] = "";
  size_t len = 0;

  if (!activated) {
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i > 0 ? ":" : "",
                            ls[i].name);
  }
  return setenv(SERVICE_RESTART_NAMES_ENV, names, 1) < 0 ? -ENOMEM : 0;
}

void service_restart_env_clear(void)
{
  unsetenv(SERVICE_RESTART_NAMES_ENV);
}

int service_listeners_adopt_restart(const int *fds, size_t n, struct listener *ls,
                                    size_t *nls)
{
  const char *v = getenv(SERVICE_RESTART_NAMES_ENV);
  char *copy, *save = NULL, *tok;
  char *names[SERVICE_HANDOVER_MAX] = {NULL};
  size_t k = 0;
  int rc;

  *nls = 0;
  if (v == NULL) {
    return 0;
  }
  copy = strdup(v);
  unsetenv(SERVICE_RESTART_NAMES_ENV);
  if (copy == NULL) {
    fprintf(stderr, "diskgate serve: out of memory\n");
    return -ENOMEM;
  }
  for (tok = strtok_r(copy, ":", &save); tok != NULL && k < SERVICE_HANDOVER_MAX;
       tok = strtok_r(NULL, ":", &save)) {
    names[k++] = tok;
  }
  if (k != n) {
    fprintf(stderr, "diskgate serve: %s names %zu sockets, %zu were passed\n",
            SERVICE_RESTART_NAMES_ENV, k, n);
    free(copy);
    return -EINVAL;
  }
  rc = service_adopt_all(fds, names, n, ls, LISTEN_MAX, nls);
  free(copy);
  return rc < 0 ? rc : 1;
}

/* sd_notify with the text, logging a failure at debug level only: a missing or full
 * notify socket must not stop the server. */
static void service_notify(const char *text)
{
  int rc = sd_notify(0, text);

  if (rc < 0) {
    log_debug("sd_notify: %s", strerror(-rc));
  }
}

void service_notify_ready(void)
{
  char text[128] = "READY=1";

  if (status_exports != (size_t)-1) {
    snprintf(text, sizeof text, "READY=1\nSTATUS=serving %zu export%s, %u connection%s",
             status_exports, status_exports == 1 ? "" : "s", status_conns,
             status_conns == 1 ? "" : "s");
  }
  service_notify(text);
}

void service_notify_reloading(void)
{
  struct timespec ts;
  char text[96];

  clock_gettime(CLOCK_MONOTONIC, &ts);
  snprintf(text, sizeof text, "RELOADING=1\nMONOTONIC_USEC=%llu",
           (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
  service_notify(text);
}

void service_notify_stopping(void)
{
  service_notify("STOPPING=1\nSTATUS=stopping: finishing in-flight requests");
}

void service_notify_mainpid(pid_t pid)
{
  char text[48];

  snprintf(text, sizeof text, "MAINPID=%ld", (long)pid);
  service_notify(text);
}

void service_status_tick(size_t nexports, unsigned nconns)
{
  struct timespec ts;
  long long now_ms;
  char text[96];

  if (nexports == status_exports && nconns == status_conns) {
    return;
  }
  clock_gettime(CLOCK_MONOTONIC, &ts);
  now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  if (status_exports != (size_t)-1 && now_ms - status_sent_ms < 1000) {
    return; /* at most one a second: a later tick sends the change */
  }
  status_exports = nexports;
  status_conns = nconns;
  status_sent_ms = now_ms;
  snprintf(text, sizeof text, "STATUS=serving %zu export%s, %u connection%s", nexports,
           nexports == 1 ? "" : "s", nconns, nconns == 1 ? "" : "s");
  service_notify(text);
}

void service_watchdog_tick(void)
{
  static long long sent_ms = -1;
  static uint64_t interval_us;
  static int enabled = -1;
  struct timespec ts;

  if (enabled < 0) { /* WATCHDOG_USEC (and WATCHDOG_PID, if set, naming this process) */
    enabled = sd_watchdog_enabled(0, &interval_us) > 0;
    if (enabled) {
      log_info("systemd watchdog: pinging every %llu ms (WatchdogSec=%llu ms)",
               (unsigned long long)interval_us / 2000, (unsigned long long)interval_us / 1000);
    }
  }
  if (!enabled) {
    return;
  }
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long long now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  if (sent_ms >= 0 && (now_ms - sent_ms) * 1000 < (long long)(interval_us / 2)) {
    return;
  }
  sent_ms = now_ms;
  service_notify("WATCHDOG=1");
}
