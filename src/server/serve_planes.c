/* SPDX-License-Identifier: MIT */
/* serve_planes.c: see serve_planes.h. */
#include "server/serve_planes.h"

#include <string.h>

#include "server/control.h"
#include "server/metrics_http.h"
#include "server/serve_listeners.h"
#include "server/server.h"
#include "util/log.h"

int serve_planes_open(const struct serve_config *cfg, struct serve_planes *p)
{
  int status;

  memset(p, 0, sizeof *p);
  p->control_l.fd = -1;
  p->metrics_l.fd = -1;
  status = serve_metrics_listener_open(cfg, &p->metrics_l);
  if (status == 0) {
    status = serve_control_listener_open(cfg, &p->control_l);
  }
  if (status != 0) {
    serve_planes_close(p);
  }
  return status;
}

/* The thread of whichever listener is open and has none. */
static void serve_planes_threads_start(struct serve_planes *p, struct server *s,
                                       struct engine *engine)
{
  int rc;

  if (p->metrics_l.fd >= 0 && p->metrics == NULL) {
    rc = metrics_http_start(s, p->metrics_l.fd, &p->metrics);
    if (rc < 0) {
      log_error("cannot serve metrics on %s:%u: %s; serving without them", p->metrics_l.host,
                p->metrics_l.port, strerror(-rc));
      p->metrics = NULL;
    }
  }
  if (p->control_l.fd >= 0 && p->control == NULL) {
    rc = control_start(p->control_l.fd, s, engine, &p->control);
    if (rc < 0) {
      log_error("cannot serve the control socket: %s; serving without it", strerror(-rc));
      p->control = NULL;
    }
  }
}

void serve_planes_start(struct serve_planes *p, struct server *s, struct engine *engine)
{
  serve_planes_threads_start(p, s, engine);
  s->metrics_on = p->metrics != NULL;
}

/* Stops both threads; the listeners stay open. */
static void serve_planes_threads_stop(struct serve_planes *p)
{
  control_stop(p->control);
  p->control = NULL;
  metrics_http_stop(p->metrics); /* its thread reads the server: before it goes */
  p->metrics = NULL;
}

size_t serve_planes_hand_over(struct serve_planes *p, struct listener **out)
{
  struct listener *ls[2] = {&p->control_l, &p->metrics_l};
  size_t n = 0;

  serve_planes_threads_stop(p);
  for (size_t i = 0; i < 2; i++) {
    if (ls[i]->fd < 0) {
      continue;
    }
    if (ls[i]->name[0] != '\0') {
      out[n++] = ls[i]; /* systemd's: the new server serves it */
      continue;
    }
    listen_close(ls[i]); /* the new server binds its port or path */
    if (ls[i] == &p->metrics_l) {
      log_info("metrics no longer served here: the new server serves them");
    }
  }
  return n;
}

void serve_planes_resume(const struct serve_config *cfg, struct serve_planes *p,
                         struct server *s, struct engine *engine)
{
  if (p->control_l.fd < 0 && cfg->control_path != NULL &&
      serve_control_listener_open(cfg, &p->control_l) != 0) {
    log_warn("the control socket could not be opened again; serving without it");
  }
  if (p->metrics_l.fd < 0 && cfg->metrics_addr != NULL &&
      serve_metrics_listener_open(cfg, &p->metrics_l) != 0) {
    log_warn("the metrics endpoint could not be opened again; serving without it");
  }
  serve_planes_threads_start(p, s, engine);
}

void serve_planes_close(struct serve_planes *p)
{
  serve_planes_threads_stop(p);
  listen_close(&p->control_l);
  listen_close(&p->metrics_l);
}
