/* SPDX-License-Identifier: MIT */
/* listen.c: see listen.h. */
#include "server/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nbd/proto.h"
#include "server/accept_guard.h"
#include "server/admit.h"
#include "server/export_table.h"
#include "server/reload.h"
#include "server/service.h"
#include "util/log.h"

#define UNIX_SNDBUF_BYTES (4 * 1024 * 1024)
#define BACKLOG_MIN 4096 /* asked for when /proc does not tell the system's maximum */

/* The listen(2) backlog: the system's maximum, net.core.somaxconn (the kernel caps a
 * larger value to it), and at least BACKLOG_MIN. When many clients reconnect at once (a
 * host's VMs after a restart), a short queue leaves TCP clients waiting for a greeting
 * that never comes and refuses Unix clients ("server backlog overflowed"). */
static int listen_backlog(void)
{
  FILE *f = fopen("/proc/sys/net/core/somaxconn", "re");
  int max = 0;

  if (f != NULL) {
    if (fscanf(f, "%d", &max) != 1) {
      max = 0;
    }
    fclose(f);
  }
  return max > BACKLOG_MIN ? max : BACKLOG_MIN;
}

int listen_parse_address(const char *text, char *host, size_t host_size, unsigned *port)
{
  const char *colon;
  size_t hlen;

  *port = NBD_DEFAULT_PORT;
  if (text[0] == '\0') {
    return -EINVAL; /* no address at all: not the default 127.0.0.1:10809 */
  }
  if (text[0] == '[') {
    const char *end = strchr(text, ']');
    if (end == NULL) {
      return -EINVAL;
    }
    hlen = (size_t)(end - text - 1);
    if (hlen == 0 || hlen >= host_size) {
      return -EINVAL;
    }
    memcpy(host, text + 1, hlen);
    host[hlen] = '\0';
    colon = end[1] == ':' ? end + 1 : NULL;
    if (colon == NULL && end[1] != '\0') {
      return -EINVAL;
    }
  } else {
    colon = strrchr(text, ':');
    if (colon != NULL && strchr(text, ':') != colon) {
      return -EINVAL; /* an IPv6 address needs brackets */
    }
    if (colon == NULL && text[0] != '\0' && strspn(text, "0123456789") == strlen(text)) {
      return -EINVAL; /* a bare port ("--listen 10809", qemu-nbd's -p habit), not a host */
    }
    hlen = colon != NULL ? (size_t)(colon - text) : strlen(text);
    if (hlen >= host_size) {
      return -EINVAL;
    }
    memcpy(host, text, hlen);
    host[hlen] = '\0';
    if (hlen == 0) {
      if (host_size < sizeof "127.0.0.1") {
        return -EINVAL;
      }
      memcpy(host, "127.0.0.1", sizeof "127.0.0.1");
    }
  }
  if (colon != NULL) {
    char *end;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || p > 65535) {
      return -EINVAL;
    }
    *port = (unsigned)p;
  }
  return 0;
}

/* A socket bound and listening at one resolved address. Returns the fd or -errno. */
static int bind_one(const struct addrinfo *ai)
{
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc;

  if (fd < 0) {
    return -errno;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ai->ai_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, listen_backlog()) < 0) {
    rc = -errno;
    close(fd);
    return rc;
  }
  return fd;
}

int listen_open_tcp(struct listener *l, const char *host, unsigned port)
{
  struct addrinfo hints = {0}, *res = NULL;
  char port_text[16];
  int fd = -EADDRNOTAVAIL, rc;

  memset(l, 0, sizeof *l);
  l->fd = -1;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV; /* HOST may be a name, as for qemu-nbd -b */
  snprintf(port_text, sizeof port_text, "%u", port);
  errno = 0;
  rc = getaddrinfo(host, port_text, &hints, &res);
  if (rc != 0) {
    int err = errno;
    if (rc == EAI_SYSTEM) {
      return err != 0 ? -err : -EINVAL;
    }
    if (rc == EAI_MEMORY) {
      return -ENOMEM;
    }
    /* glibc answers "no such host" when it could not even open /etc/hosts or
     * nsswitch.conf, and leaves the reason in errno */
    if (err == EMFILE || err == ENFILE || err == ENOMEM) {
      return -err;
    }
    return rc == EAI_AGAIN ? -EAGAIN
           : rc == EAI_NONAME || rc == EAI_NODATA || rc == EAI_FAIL ? -ENOENT : -EINVAL;
  }
  /* The first address that binds: a name such as localhost may list ::1 before 127.0.0.1,
   * and IPv6 may be off. The first failure is the one reported when none binds. */
  for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    int r = bind_one(ai);
    if (r >= 0) {
      fd = r;
      break;
    }
    if (ai == res) {
      fd = r;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return fd;
  }
  {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    if (ss.ss_family == AF_INET6) {
      l->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
      l->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
  }
  snprintf(l->host, sizeof l->host, "%s", host);
  l->fd = fd;
  return 0;
}

int listen_open_unix(struct listener *l, const char *path)
{
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  int fd, rc;

  memset(l, 0, sizeof *l);
  l->fd = -1;
  if (strlen(path) >= sizeof addr.sun_path) {
    return -ENAMETOOLONG;
  }
  strcpy(addr.sun_path, path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -errno;
  }
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    if (errno != EADDRINUSE) {
      rc = -errno;
      close(fd);
      return rc;
    }
    /* Something exists at the path. Only a socket is ours to replace (a stale one, if
     * nobody accepts on it): never unlink a regular file, a link or anything else. */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
      close(fd);
      return -EEXIST;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && connect(probe, (struct sockaddr *)&addr, sizeof addr) == 0;
    if (probe >= 0) {
      close(probe);
    }
    if (live) {
      close(fd);
      return -EADDRINUSE;
    }
    unlink(path);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
      rc = -errno;
      close(fd);
      return rc;
    }
  }
  if (listen(fd, listen_backlog()) < 0) {
    rc = -errno;
    close(fd);
    unlink(path);
    return rc;
  }
  (void)file_ident_of_path(path, &l->unix_file); /* failing, it names nothing: kept */
  l->unix_path = strdup(path);
  l->fd = fd;
  return 0;
}

int listen_adopt(struct listener *l, int fd, const char *host, const char *unix_path)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;

  memset(l, 0, sizeof *l);
  l->fd = -1;
  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
      (unix_path != NULL) != (ss.ss_family == AF_UNIX)) {
    return -EINVAL;
  }
  if (unix_path != NULL) {
    l->unix_path = strdup(unix_path);
    if (l->unix_path == NULL) {
      return -ENOMEM;
    }
    (void)file_ident_of_path(unix_path, &l->unix_file);
  } else {
    l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    snprintf(l->host, sizeof l->host, "%s", host);
  }
  l->fd = fd;
  return 0;
}

void listen_keep_file(struct listener *l)
{
  free(l->unix_path);
  l->unix_path = NULL;
}

/* The connection's name in the log: ADDR:PORT for TCP; for a Unix socket, which has no
 * peer address, the socket's path and the connection's number since start-up (the fd
 * would be reused by the next connection and name two clients alike). Accept thread. */
static void peer_name(int fd, const struct listener *l, char *out, size_t size)
{
  static unsigned long unix_conns;
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  char addr[INET6_ADDRSTRLEN] = "?";

  if (l->unix_path != NULL) {
    char shown[LOG_SHOWN_MAX];
    snprintf(out, size, "unix:%s#%lu", log_escape_str(shown, sizeof shown, l->unix_path),
             ++unix_conns);
    return;
  }
  if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof addr);
      snprintf(out, size, "[%s]:%u", addr, ntohs(s6->sin6_port));
      return;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
    snprintf(out, size, "%s:%u", addr, ntohs(s4->sin_port));
    return;
  }
  snprintf(out, size, "peer#%d", fd);
}

int listen_run(struct server *s, struct listener *ls, size_t n, int stop_fd,
               const struct reload *reload)
{
  struct pollfd pfd[LISTEN_MAX + 1];
  struct accept_guard guard;
  int rc;

  accept_guard_init(&guard);
  for (size_t i = 0; i < n; i++) {
    pfd[i].fd = ls[i].fd;
    pfd[i].events = POLLIN;
  }
  pfd[n].fd = stop_fd;
  pfd[n].events = POLLIN;
  for (;;) {
    int ready = poll(pfd, (nfds_t)(n + 1), 1000); /* wake each second for the deadlines */
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == ENOMEM) {
        usleep(100000); /* the kernel is short of memory for now: try again */
        continue;
      }
      rc = -errno; /* EINVAL: RLIMIT_NOFILE lowered below the listeners (prlimit) */
      break;
    }
    server_reap_handshakes(s);
    admit_tick(s);
    pthread_mutex_lock(&s->lock);
    unsigned nconns = s->nconns;
    pthread_mutex_unlock(&s->lock);
    service_status_tick(export_table_count(s), nconns);
    service_watchdog_tick();
    accept_guard_tick(&guard);
    if (ready == 0) {
      continue;
    }
    if (pfd[n].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(stop_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGHUP && reload != NULL) {
          log_info("signal %d (%s): reloading the config", SIGHUP, strsignal(SIGHUP));
          reload_apply(reload);
          continue;
        }
        rc = (int)si.ssi_signo;
        break;
      }
    }
    for (size_t i = 0; i < n; i++) {
      if (!(pfd[i].revents & POLLIN)) {
        continue;
      }
      int fd = accept4(ls[i].fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          accept_guard_refuse(&guard, ls[i].fd, errno);
        } else if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
          log_warn("accept: %s", strerror(errno));
        }
        continue;
      }
      if (ls[i].unix_path == NULL) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* spec rule 35 */
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
      } else {
        /* A Unix socket's default send buffer (about 200 KiB) splits every 1 MiB read
         * reply into many wake-ups of the client; 4 MiB lets a reply go out at once.
         * SO_SNDBUFFORCE passes wmem_max when we are root; else SO_SNDBUF is capped. */
        int size = UNIX_SNDBUF_BYTES;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0) {
          setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
        }
      }
      char peer[96];
      peer_name(fd, &ls[i], peer, sizeof peer);
      accept_guard_start_failed(&guard, server_conn_start(s, fd, peer));
    }
  }
  /* Why it stops, before the spells' last lines, which say "before the server stopped". */
  if (rc == SIGUSR2) {
    log_info("signal %d (%s): starting a new server on these listeners, then finishing "
             "in-flight requests and exiting", rc, strsignal(rc));
  } else if (rc > 0) {
    service_notify_stopping();
    log_info("signal %d (%s): finishing in-flight requests, then exiting", rc, strsignal(rc));
  } else {
    service_notify_stopping();
    log_error("cannot wait for connections (poll: %s): finishing in-flight requests, then "
              "exiting", strerror(-rc));
  }
  accept_guard_finish(&guard);
  admit_finish(s);
  return rc;
}

void listen_close(struct listener *l)
{
  /* The socket file first, while this listener still accepts there: a server starting on
   * the same path cannot yet take it for a dead one and replace it, so the file checked
   * here is ours when it has our inode. */
  if (l->unix_path != NULL) {
    if (!l->keep_file) {
      file_ident_unlink(l->unix_path, &l->unix_file);
    }
    free(l->unix_path);
    l->unix_path = NULL;
  }
  if (l->fd >= 0) {
    close(l->fd);
    l->fd = -1;
  }
}
