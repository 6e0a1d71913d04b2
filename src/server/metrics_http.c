/* SPDX-License-Identifier: MIT */
/* metrics_http.c: see metrics_http.h. The exposition's content type is Prometheus' text
 * format 0.0.4. */
#include "server/metrics_http.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics.h"
#include "util/log.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_http {
  struct MHD_Daemon *daemon;
  struct server *server;
};

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status,
                                  const char *text)
{
  struct MHD_Response *resp =
    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
  enum MHD_Result rc;

  if (resp == NULL) {
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

/* MHD's access handler: the daemon's internal thread. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
  struct metrics_http *m = cls;
  struct MHD_Response *resp;
  enum MHD_Result rc;
  size_t len = 0;
  char *text;

  (void)version;
  (void)upload_data;
  (void)req_cls;
  if (*upload_data_size != 0) {
    *upload_data_size = 0; /* a body is ignored */
    return MHD_YES;
  }
  if (strcmp(url, "/metrics") != 0) {
    return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found; the metrics are at /metrics\n");
  }
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
  }
  text = metrics_render(m->server, &len);
  if (text == NULL) {
    return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
  }
  resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
  rc = MHD_queue_response(conn, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  return rc;
}

int metrics_http_start(struct server *s, int listen_fd, struct metrics_http **out)
{
  struct metrics_http *m = calloc(1, sizeof *m);

  if (m == NULL) {
    return -ENOMEM;
  }
  m->server = s;
  /* MHD_USE_ITC: metrics_http_stop quiesces the daemon first, which needs it */
  m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC,
                               0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, listen_fd,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
  if (m->daemon == NULL) {
    free(m);
    return -EIO;
  }
  *out = m;
  return 0;
}

void metrics_http_stop(struct metrics_http *m)
{
  if (m == NULL) {
    return;
  }
  /* A daemon stopped as it is shuts its listening socket down and closes it; quiesced
   * first, it leaves the socket to its owner, still listening (for a restart's hand-over) */
  (void)MHD_quiesce_daemon(m->daemon);
  MHD_stop_daemon(m->daemon);
  free(m);
}
