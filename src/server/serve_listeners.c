/* SPDX-License-Identifier: MIT */
/* serve_listeners.c: the listeners of `diskgate serve`: see serve_listeners.h. */
#include "server/serve_listeners.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/reexec.h"
#include "server/service.h"
#include "util/cli.h"
#include "util/log.h"

/* Why a TCP listener on HOST:PORT could not be opened (listen_open_tcp's -errno). */
static const char *tcp_error(int rc, char *text, size_t size)
{
  return rc == -ENOENT   ? "no such host"
         : rc == -EAGAIN ? "the host name could not be resolved now; try again"
                         : cli_startup_error(rc, text, size);
}

int serve_listeners_open(const struct serve_config *cfg, struct listener *ls, size_t *n)
{
  char host[256], abs[PATH_MAX];
  int inherited[SERVICE_HANDOVER_MAX];
  int ninherited = reexec_inherited(inherited, SERVICE_HANDOVER_MAX); /* a takeover (reexec.h) */
  unsigned port;
  int rc;

  *n = 0;
  if (ninherited < 0) {
    fprintf(stderr, "diskgate serve: %s does not name listening sockets\n", REEXEC_FDS_ENV);
    return 2;
  }
  /* systemd's sockets, passed by socket activation or through a restart of a server that
   * had them: served instead of --listen and --socket (service.h) */
  rc = ninherited > 0 ? service_listeners_adopt_restart(inherited, (size_t)ninherited, ls, n)
                      : service_listeners_take_all(ls, LISTEN_MAX, n);
  if (rc < 0) {
    return 2;
  }
  if (rc > 0 || *n > 0) {
    return 0;
  }
  if (ninherited > LISTEN_MAX) {
    fprintf(stderr, "diskgate serve: %s names more than %d listening sockets\n",
            REEXEC_FDS_ENV, LISTEN_MAX);
    return 2;
  }
  if (cfg->listen_addr != NULL || cfg->socket_path == NULL) {
    const char *addr = cfg->listen_addr != NULL ? cfg->listen_addr : "127.0.0.1:10809";
    rc = listen_parse_address(addr, host, sizeof host, &port);
    if (rc == 0 && ninherited > 0) {
      rc = (int)*n < ninherited ? listen_adopt(&ls[*n], inherited[*n], host, NULL) : -EINVAL;
    } else if (rc == 0) {
      rc = listen_open_tcp(&ls[*n], host, port);
    }
    if (rc < 0) {
      char shown[LOG_SHOWN_MAX], text[128];
      fprintf(stderr, "diskgate serve: cannot listen on %s: %s\n",
              log_escape_str(shown, sizeof shown, addr), tcp_error(rc, text, sizeof text));
      return cli_startup_status(rc);
    }
    (*n)++;
  }
  if (cfg->socket_path != NULL) {
    if (cfg->socket_path[0] != '/') {
      if (getcwd(abs, sizeof abs) == NULL ||
          strlen(abs) + 1 + strlen(cfg->socket_path) >= sizeof abs) {
        char shown[LOG_SHOWN_MAX];
        fprintf(stderr, "diskgate serve: socket path %s too long\n",
                log_escape_str(shown, sizeof shown, cfg->socket_path));
        rc = -ENAMETOOLONG;
      } else {
        strcat(abs, "/");
        strcat(abs, cfg->socket_path);
        rc = 0;
      }
    } else {
      rc = snprintf(abs, sizeof abs, "%s", cfg->socket_path) >= (int)sizeof abs ? -ENAMETOOLONG : 0;
    }
    if (rc == 0 && ninherited > 0) {
      rc = (int)*n < ninherited ? listen_adopt(&ls[*n], inherited[*n], NULL, abs) : -EINVAL;
      if (rc < 0) {
        fprintf(stderr, "diskgate serve: %s does not match --listen and --socket\n",
                REEXEC_FDS_ENV);
      }
    } else if (rc == 0) {
      rc = listen_open_unix(&ls[*n], abs);
      if (rc < 0) {
        char shown[LOG_SHOWN_MAX], text[128];
        fprintf(stderr, "diskgate serve: cannot listen on %s: %s\n",
                log_escape_str(shown, sizeof shown, abs),
                rc == -EADDRINUSE ? "another server is accepting there"
                : rc == -EEXIST   ? "the path exists and is not a socket (it is left alone)"
                                  : cli_startup_error(rc, text, sizeof text));
      }
    }
    if (rc < 0) {
      for (size_t i = 0; i < *n; i++) {
        listen_close(&ls[i]);
      }
      *n = 0;
      return cli_startup_status(rc);
    }
    (*n)++;
  }
  return 0;
}

/* Takes into *l the socket systemd passed as `name` (service.h), if it did; when the
 * command line also named one (`option` `value`), a line says which is served. True when
 * taken. */
static bool systemd_socket_take(const char *name, const char *option, const char *value,
                                struct listener *l)
{
  char shown[LOG_SHOWN_MAX];

  if (service_listener_take(name, l) < 0) {
    return false;
  }
  if (value != NULL) {
    log_info("%s: serving on systemd's socket '%s', not on %s %s", name, name, option,
             log_escape_str(shown, sizeof shown, value));
  }
  return true;
}

int serve_metrics_listener_open(const struct serve_config *cfg, struct listener *ml)
{
  char host[256];
  unsigned port;
  int rc;

  ml->fd = -1;
  if (systemd_socket_take(SERVICE_NAME_METRICS, "--metrics", cfg->metrics_addr, ml)) {
    return 0;
  }
  if (cfg->metrics_addr == NULL) {
    return 0;
  }
  rc = listen_parse_address(cfg->metrics_addr, host, sizeof host, &port); /* checked */
  if (rc == 0) {
    rc = listen_open_tcp(ml, host, port);
  }
  if (rc < 0) {
    char shown[LOG_SHOWN_MAX], text[128];
    fprintf(stderr, "diskgate serve: cannot serve metrics on %s: %s\n",
            log_escape_str(shown, sizeof shown, cfg->metrics_addr),
            tcp_error(rc, text, sizeof text));
    ml->fd = -1;
    return cli_startup_status(rc);
  }
  return 0;
}

/* Warns when the control socket's file lets others than its owner connect: whoever can
 * connect can add and remove exports. */
static void control_mode_check(const struct listener *cl)
{
  struct stat st;
  char shown[LOG_SHOWN_MAX];

  if (cl->unix_path != NULL && stat(cl->unix_path, &st) == 0 && (st.st_mode & 077) != 0) {
    log_warn("the control socket %s is mode %03o: whoever can connect can add and remove "
             "exports (SocketMode=0600 in the socket unit keeps it to its owner)",
             log_escape_str(shown, sizeof shown, cl->unix_path), (unsigned)(st.st_mode & 0777));
  }
}

int serve_control_listener_open(const struct serve_config *cfg, struct listener *cl)
{
  char shown[LOG_SHOWN_MAX];
  mode_t old;
  int rc;

  cl->fd = -1;
  if (systemd_socket_take(SERVICE_NAME_CONTROL, "--control", cfg->control_path, cl)) {
    control_mode_check(cl);
    return 0;
  }
  if (cfg->control_path == NULL) {
    return 0;
  }
  old = umask(0177); /* the socket is created 0600; main thread, before other files */
  rc = listen_open_unix(cl, cfg->control_path);
  umask(old);
  if (rc < 0) {
    char text[128];
    fprintf(stderr, "diskgate serve: cannot open the control socket %s: %s\n",
            log_escape_str(shown, sizeof shown, cfg->control_path),
            rc == -EADDRINUSE ? "another server accepts there"
            : rc == -EEXIST   ? "the path exists and is not a socket"
                              : cli_startup_error(rc, text, sizeof text));
    cl->fd = -1;
    return cli_startup_status(rc);
  }
  return 0;
}
