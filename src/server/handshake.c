/* SPDX-License-Identifier: MIT */
/* handshake.c: option haggling over a socket (doc/proto.md "Newstyle negotiation",
 * "Option types", "TLS support"; spec rules 1-15). The wire format is in nbd/option.c; this
 * file makes the decisions. Runs on the connection's thread with SO_RCVTIMEO as the
 * handshake deadline, which also bounds the TLS handshake after NBD_OPT_STARTTLS. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nbd/option.h"
#include "nbd/proto.h"
#include "server/admit.h"
#include "server/conn.h"
#include "server/export_table.h"
#include "server/tls.h"
#include "server/transport.h"
#include "util/log.h"
#include "util/log_rate.h"

/* Options longer than this are not read: up to DRAIN_LIMIT they are skipped and refused
 * with NBD_REP_ERR_TOO_BIG; beyond it the connection is closed (case C03). */
#define DRAIN_LIMIT (1024u * 1024u)

static const uint16_t server_handshake_flags = NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES;

static int reply_send(struct conn *c, uint32_t option, uint32_t type, const void *payload,
                      uint32_t length)
{
  uint8_t hdr[NBD_OPTION_REPLY_SIZE];
  struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)payload, length}};

  nbd_option_reply_encode(hdr, option, type, length);
  return transport_writev_full(&c->transport, iov, length > 0 ? 2 : 1);
}

/* An error reply with a human-readable message (no NUL, at most 4096 bytes), and one log
 * line naming the option, the reply and the message. A client can repeat a refused option
 * as fast as it reads the replies, so the lines are thinned out as refused requests' are
 * (log_rate.h, counted in c->option_refusals); NBD_REP_ERR_SHUTDOWN, which every client
 * gets while the server stops, only at --verbose. Returns reply_send's result: 0 or -errno. */
static int reply_error(struct conn *c, uint32_t option, uint32_t type, const char *msg)
{
  bool stopping = type == NBD_REP_ERR_SHUTDOWN;
  const char *more = "";

  if (stopping || log_rate_allows(&c->option_refusals, "refusals", &more)) {
    log_msg(stopping ? LOG_DEBUG : LOG_INFO, "%s: %s (%u) refused with %s: %s%s", c->peer,
            nbd_option_name(option), option, nbd_rep_error_name(type), msg, more);
  }
  return reply_send(c, option, type, msg, (uint32_t)strlen(msg));
}

static int send_info(struct conn *c, uint32_t option, const struct export *e,
                     const struct nbd_info_request *req)
{
  uint8_t buf[2 + NBD_MAX_STRING];
  size_t n;
  int rc;
  uint16_t flags = export_transmission_flags(e, c->structured_replies);

  uint64_t size;
  if (backing_refresh_size(e->backing, &size) < 0) {
    size = e->backing->geo.size;
  }
  n = nbd_info_export_encode(buf, size, flags);
  rc = reply_send(c, option, NBD_REP_INFO, buf, (uint32_t)n);
  if (rc == 0 && req->want_name) {
    n = nbd_info_text_encode(buf, NBD_INFO_NAME, e->name, (uint32_t)strlen(e->name));
    rc = reply_send(c, option, NBD_REP_INFO, buf, (uint32_t)n);
  }
  if (rc == 0 && req->want_description) {
    char text[NBD_MAX_STRING + 1];
    export_table_describe(c->server, e, text, sizeof text); /* a reload may change it */
    if (text[0] != '\0') {
      n = nbd_info_text_encode(buf, NBD_INFO_DESCRIPTION, text, (uint32_t)strlen(text));
      rc = reply_send(c, option, NBD_REP_INFO, buf, (uint32_t)n);
    }
  }
  c->block_size_sent = req->want_block_size; /* what the last INFO/GO told the client */
  if (rc == 0 && req->want_block_size) {
    n = nbd_info_block_size_encode(buf, e->min_block, e->preferred_block, e->max_payload);
    rc = reply_send(c, option, NBD_REP_INFO, buf, (uint32_t)n);
  }
  if (rc == 0 && option == NBD_OPT_GO) {
    rc = admit_commit(c); /* past negotiation: no longer closed to make room */
  }
  if (rc == 0) {
    rc = reply_send(c, option, NBD_REP_ACK, NULL, 0);
  }
  c->transmission_flags = flags;
  return rc;
}

/* The client of c as an allow list sees it (export_allow.h): storage for
 * export_table_get's peer. */
struct conn_peer {
  char names[3][TLS_NAME_MAX];
  const char *list[4];
  struct sockaddr_storage ss;
  struct export_peer peer;
};

static const struct export_peer *conn_peer_get(struct conn *c, struct conn_peer *p)
{
  socklen_t len = sizeof p->ss;
  size_t n = 0;

  memset(p->list, 0, sizeof p->list);
  if (c->transport.tls != NULL) {
    n = tls_session_peer_names(c->transport.tls, p->names, 3);
  }
  for (size_t i = 0; i < n; i++) {
    p->list[i] = p->names[i];
  }
  if (getpeername(c->transport.fd, (struct sockaddr *)&p->ss, &len) < 0) {
    p->ss.ss_family = AF_UNIX;
  }
  p->peer.addr = (const struct sockaddr *)&p->ss;
  p->peer.tls_names = p->list;
  return &p->peer;
}

/* export_table_get for this client: an export its allow list refuses is unknown to it,
 * with one log line naming the option. Returns a reference (export_table_put), or NULL
 * and *miss. */
static struct export *conn_find_export(struct conn *c, uint32_t option, const uint8_t *name,
                                       size_t length, enum export_miss *miss)
{
  struct conn_peer p;
  struct export *e = export_table_get(c->server, name, length, conn_peer_get(c, &p), miss);

  if (*miss == EXPORT_MISS_REFUSED) {
    char shown[EXPORT_LOG_NAME_MAX];
    log_info("%s: refused export '%s' by its allow list (%s)", c->peer,
             log_escape(shown, sizeof shown, name, length), nbd_option_name(option));
  }
  return e;
}

/* NBD_OPT_INFO and NBD_OPT_GO. Returns 1 when GO succeeded (enter transmission), 0 to keep
 * haggling, -errno to close. */
static int option_info_go(struct conn *c, uint32_t option, const uint8_t *payload,
                          uint32_t length)
{
  struct nbd_info_request req;
  struct export *e;
  int rc = nbd_info_request_decode(payload, length, &req);

  if (rc < 0) {
    return reply_error(c, option, NBD_REP_ERR_INVALID,
                       rc == -ENAMETOOLONG ? "export name too long" : "malformed request");
  }
  enum export_miss miss;
  e = conn_find_export(c, option, req.name, req.name_length, &miss);
  if (e == NULL) {
    static const char msg[] = "unknown export";
    char name[96];
    const char *more;
    /* libnbd's tools ask with NBD_OPT_INFO and then NBD_OPT_GO: the two lines differ. The
     * line names the export, so it stands for reply_error's. */
    if (miss == EXPORT_MISS_UNKNOWN && /* else logged */
        log_rate_allows(&c->option_refusals, "refusals", &more)) {
      log_info("%s: client asked for unknown export '%s' (%s)%s", c->peer,
               log_escape(name, sizeof name, req.name, req.name_length),
               nbd_option_name(option), more);
    }
    return reply_send(c, option, NBD_REP_ERR_UNKNOWN, msg, sizeof msg - 1);
  }
  /* A lazy export's backing (a Ceph image) is opened by the first INFO or GO naming it;
   * if that fails the export is "not available" (NBD_REP_ERR_UNKNOWN) and the client may
   * retry. */
  if (export_attach(e) < 0) {
    /* export_attach has logged why: no second line for the same event */
    static const char msg[] =
        "export unavailable: its backing cannot be opened (see the server log)";
    export_table_put(c->server, e);
    return reply_send(c, option, NBD_REP_ERR_UNKNOWN, msg, sizeof msg - 1);
  }
  rc = send_info(c, option, e, &req);
  if (rc < 0 || option != NBD_OPT_GO) {
    export_table_put(c->server, e);
    return rc < 0 ? rc : 0;
  }
  pthread_mutex_lock(&c->server->lock); /* a removal looks for its connections under it */
  c->export = e; /* its reference is the connection's until it ends (server.c) */
  pthread_mutex_unlock(&c->server->lock);
  c->meta_contexts = c->meta_export_id == e->id ? c->meta_set : 0;
  c->meta_context = c->meta_contexts != 0;
  return 1;
}

/* The contexts one query names (CONN_META_*): an exact name, or for LIST a namespace
 * alone ("base:", "qemu:"), which names every context in it. Unknown namespaces and leaf
 * names name nothing (doc/proto.md "Metadata querying"). */
static unsigned meta_query_contexts(const uint8_t *q, uint32_t qlen, bool set)
{
  static const struct {
    const char *name;
    size_t ns_len; /* bytes of the namespace, colon included */
    unsigned bit;
  } known[] = {{NBD_META_BASE_ALLOCATION, 5, CONN_META_BASE},
               {NBD_META_QEMU_ALLOCATION_DEPTH, 5, CONN_META_DEPTH}};
  unsigned bits = 0;

  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    bool exact = qlen == strlen(known[i].name) && memcmp(q, known[i].name, qlen) == 0;
    bool wildcard = !set && qlen == known[i].ns_len && memcmp(q, known[i].name, qlen) == 0;
    if (exact || wildcard) {
      bits |= known[i].bit;
    }
  }
  return bits;
}

/* NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT with the contexts diskgate has:
 * base:allocation (context id 1) and qemu:allocation-depth (id 2; QEMU's
 * docs/interop/nbd.txt, as qemu-nbd -A) (doc/proto.md "Metadata querying"; spec rule 14).
 * Each context is replied once, however many queries name it. */
static int option_meta_context(struct conn *c, uint32_t option, const uint8_t *payload,
                               uint32_t length)
{
  static const struct {
    unsigned bit;
    const char *name;
  } contexts[] = {{CONN_META_BASE, NBD_META_BASE_ALLOCATION},
                  {CONN_META_DEPTH, NBD_META_QEMU_ALLOCATION_DEPTH}};
  bool set = option == NBD_OPT_SET_META_CONTEXT;
  struct nbd_meta_request m;
  const uint8_t *q;
  uint32_t qlen, pos = 0;
  unsigned selected = 0;
  struct export *e;
  uint8_t buf[4 + sizeof NBD_META_QEMU_ALLOCATION_DEPTH];

  if (set) {
    c->meta_export_id = 0; /* SET replaces the selection, even when it fails */
    c->meta_set = 0;
  }
  if (!c->structured_replies) {
    return reply_error(c, option, NBD_REP_ERR_INVALID,
                       "negotiate structured replies or extended headers first");
  }
  if (nbd_meta_request_decode(payload, length, &m) < 0) {
    return reply_error(c, option, NBD_REP_ERR_INVALID, "malformed metadata context request");
  }
  enum export_miss miss;
  e = conn_find_export(c, option, m.name, m.name_length, &miss);
  if (e == NULL) {
    return reply_error(c, option, NBD_REP_ERR_UNKNOWN, "unknown export");
  }
  uint64_t id = e->id;
  export_table_put(c->server, e); /* only its id is kept: the selection names it */
  if (m.query_count == 0 && !set) {
    selected = CONN_META_BASE | CONN_META_DEPTH; /* LIST with no query lists everything */
  }
  while (nbd_meta_query_next(&m, &pos, &q, &qlen)) {
    selected |= meta_query_contexts(q, qlen, set);
  }
  for (size_t i = 0; i < sizeof contexts / sizeof contexts[0]; i++) {
    if (selected & contexts[i].bit) {
      size_t n = nbd_rep_meta_context_encode(buf, set ? contexts[i].bit : 0, contexts[i].name);
      int rc = reply_send(c, option, NBD_REP_META_CONTEXT, buf, (uint32_t)n);
      if (rc < 0) {
        return rc;
      }
    }
  }
  if (set && selected != 0) {
    c->meta_export_id = id;
    c->meta_set = selected;
  }
  return reply_send(c, option, NBD_REP_ACK, NULL, 0);
}

/* NBD_OPT_EXPORT_NAME: no error reply exists, so failure is a hard close (spec rule 7). */
static int option_export_name(struct conn *c, const uint8_t *payload, uint32_t length)
{
  uint8_t buf[134];
  struct export *e;
  size_t n;
  int rc;

  if (c->extended_headers) {
    log_info("%s: NBD_OPT_EXPORT_NAME after extended headers; closing", c->peer);
    return -EPROTO;
  }
  if (nbd_export_name_check(payload, length) < 0) {
    log_info("%s: invalid export name in NBD_OPT_EXPORT_NAME; closing", c->peer);
    return -EINVAL;
  }
  enum export_miss miss;
  e = conn_find_export(c, NBD_OPT_EXPORT_NAME, payload, length, &miss);
  if (e == NULL) {
    log_info("%s: unknown export in NBD_OPT_EXPORT_NAME; closing", c->peer);
    return -ENOENT;
  }
  if (export_attach(e) < 0) {
    log_info("%s: export '%s' unavailable in NBD_OPT_EXPORT_NAME; closing", c->peer,
             e->log_name);
    export_table_put(c->server, e);
    return -ENOENT;
  }
  rc = admit_commit(c); /* -ECONNABORTED: closed to make room or by the deadline meanwhile */
  if (rc < 0) {
    export_table_put(c->server, e);
    return rc;
  }
  pthread_mutex_lock(&c->server->lock); /* a removal looks for its connections under it */
  c->export = e; /* its reference is the connection's until it ends (server.c) */
  pthread_mutex_unlock(&c->server->lock);
  /* as after GO: the final SET_META_CONTEXT's selection holds iff it named this export */
  c->meta_contexts = c->meta_export_id == e->id ? c->meta_set : 0;
  c->meta_context = c->meta_contexts != 0;
  c->transmission_flags = export_transmission_flags(e, c->structured_replies);
  n = nbd_export_name_reply_encode(buf, e->backing->geo.size, c->transmission_flags,
                                   c->no_zeroes);
  return transport_write_full(&c->transport, buf, n);
}

static int option_list(struct conn *c, uint32_t length)
{
  uint8_t buf[4 + 2 * NBD_MAX_STRING];
  struct export_listing *l;
  struct conn_peer p;
  size_t n;
  int rc = 0;

  if (length != 0) {
    return reply_error(c, NBD_OPT_LIST, NBD_REP_ERR_INVALID, "NBD_OPT_LIST takes no data");
  }
  /* copies taken under the table's lock: a reload may change a description meanwhile;
   * a client not allowed must not learn the export exists (not listed) */
  if (export_table_list(c->server, conn_peer_get(c, &p), &l, &n) < 0) {
    log_warn("%s: out of memory listing the exports; closing", c->peer);
    return -ENOMEM;
  }
  for (size_t i = 0; i < n && rc == 0; i++) {
    /* the description as NBD_INFO_DESCRIPTION gives it (export_description) */
    size_t len = nbd_rep_server_encode(buf, l[i].name, (uint32_t)strlen(l[i].name),
                                       l[i].description, (uint32_t)strlen(l[i].description));
    rc = reply_send(c, NBD_OPT_LIST, NBD_REP_SERVER, buf, (uint32_t)len);
  }
  export_table_listing_free(l, n);
  return rc < 0 ? rc : reply_send(c, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
}

/* FORCEDTLS before TLS is up (spec rule 12): true when `option` must be refused with
 * NBD_REP_ERR_TLS_REQD (or, for NBD_OPT_EXPORT_NAME, which cannot fail, a hard close). Only
 * STARTTLS and ABORT pass. Never true in the other modes or once TLS is up. */
static bool tls_required_for(const struct conn *c, uint32_t option)
{
  return tls_server_mode() == TLS_MODE_REQUIRE && !transport_is_tls(&c->transport) &&
         option != NBD_OPT_STARTTLS && option != NBD_OPT_ABORT;
}

/* NBD_OPT_STARTTLS (doc/proto.md "TLS support"; spec rules 6, 11, 12, 13). Returns 0 to
 * keep haggling (now over TLS after an ACK), -errno to close. */
static int option_starttls(struct conn *c, uint32_t length)
{
  int rc;

  if (length != 0) {
    return reply_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "STARTTLS takes no data");
  }
  if (tls_server_mode() == TLS_MODE_OFF) {
    return reply_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_POLICY, "TLS is not configured");
  }
  if (transport_is_tls(&c->transport)) {
    return reply_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "TLS is already in use");
  }
  rc = reply_send(c, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0);
  if (rc < 0) {
    return rc;
  }
  /* After the ACK there is no way back: a failed TLS handshake closes the connection. */
  rc = transport_starttls(&c->transport, c->server->handshake_timeout_s, c->peer);
  if (rc < 0) {
    return rc;
  }
  /* Spec rule 13: what was negotiated in the clear is forgotten. */
  c->structured_replies = false;
  c->extended_headers = false;
  c->meta_export_id = 0;
  c->meta_set = 0;
  c->meta_contexts = 0;
  c->meta_context = false;
  return 0;
}

/* Handles one option whose payload has been read. Returns 1 to enter transmission,
 * 0 to continue, -errno to close. */
static int option_dispatch(struct conn *c, uint32_t option, const uint8_t *payload,
                           uint32_t length)
{
  if (tls_required_for(c, option)) {
    if (option == NBD_OPT_EXPORT_NAME) {
      log_info("%s: NBD_OPT_EXPORT_NAME without TLS, which is required; closing", c->peer);
      return -EACCES;
    }
    return reply_error(c, option, NBD_REP_ERR_TLS_REQD,
                       "TLS is required: send NBD_OPT_STARTTLS first");
  }
  if (atomic_load(&c->server->stopping) && option != NBD_OPT_ABORT) {
    reply_error(c, option, NBD_REP_ERR_SHUTDOWN, "server shutting down");
    return -ESHUTDOWN;
  }
  switch (option) {
  case NBD_OPT_EXPORT_NAME: {
    int rc = option_export_name(c, payload, length);
    return rc < 0 ? rc : 1;
  }
  case NBD_OPT_GO:
  case NBD_OPT_INFO:
    return option_info_go(c, option, payload, length);
  case NBD_OPT_LIST:
    return option_list(c, length);
  case NBD_OPT_ABORT:
    reply_send(c, option, NBD_REP_ACK, NULL, 0); /* the client may already be gone */
    return -ECONNABORTED;
  case NBD_OPT_STRUCTURED_REPLY:
    if (length != 0) {
      return reply_error(c, option, NBD_REP_ERR_INVALID, "option takes no data");
    }
    if (c->extended_headers) {
      return reply_error(c, option, NBD_REP_ERR_EXT_HEADER_REQD,
                         "extended headers are already in use");
    }
    c->structured_replies = true;
    return reply_send(c, option, NBD_REP_ACK, NULL, 0);
  case NBD_OPT_EXTENDED_HEADERS:
    if (length != 0) {
      return reply_error(c, option, NBD_REP_ERR_INVALID, "option takes no data");
    }
    c->extended_headers = true;
    c->structured_replies = true;
    return reply_send(c, option, NBD_REP_ACK, NULL, 0);
  case NBD_OPT_LIST_META_CONTEXT:
  case NBD_OPT_SET_META_CONTEXT:
    return option_meta_context(c, option, payload, length);
  case NBD_OPT_STARTTLS:
    return option_starttls(c, length);
  default:
    return reply_error(c, option, NBD_REP_ERR_UNSUP, "option not supported");
  }
}

int handshake_run(struct conn *c)
{
  uint8_t greeting[NBD_GREETING_SIZE];
  uint8_t hdr[NBD_OPTION_HEADER_SIZE];
  uint8_t *payload;
  uint32_t client_flags_be;
  int rc;

  nbd_greeting_encode(greeting, server_handshake_flags);
  rc = transport_write_full(&c->transport, greeting, sizeof greeting);
  if (rc < 0) {
    return rc;
  }
  rc = transport_read_full(&c->transport, &client_flags_be, 4);
  if (rc < 0) {
    return rc;
  }
  {
    const uint8_t *b = (const uint8_t *)&client_flags_be;
    uint32_t flags = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
    if (nbd_client_flags_check(flags, server_handshake_flags, &c->no_zeroes) < 0) {
      log_info("%s: client flags 0x%x not supported; closing", c->peer, flags);
      return -EPROTO;
    }
  }
  payload = malloc(DG_MAX_OPTION_LENGTH);
  if (payload == NULL) {
    return -ENOMEM;
  }
  for (;;) {
    struct nbd_option_header opt;

    /* The first byte alone: a peer gone before it closed between options (server.c logs
     * that at --verbose only, as port probes do it); one gone after it cut an option short
     * (c->handshake_cut, logged by server.c). */
    rc = transport_read_full(&c->transport, hdr, 1);
    if (rc < 0) {
      break;
    }
    rc = transport_read_full(&c->transport, hdr + 1, sizeof hdr - 1);
    if (rc < 0) {
      c->handshake_cut = ""; /* server.c logs it, unless the server closed it */
      break;
    }
    if (nbd_option_header_decode(hdr, &opt) < 0) {
      log_info("%s: bad option magic; closing", c->peer);
      rc = -EPROTO;
      break;
    }
    if (opt.length > DG_MAX_OPTION_LENGTH) {
      if (opt.option == NBD_OPT_EXPORT_NAME || opt.length > DRAIN_LIMIT) {
        log_info("%s: option %u with %u bytes of data refused; closing", c->peer, opt.option,
                 opt.length);
        rc = -E2BIG;
        break;
      }
      rc = transport_discard(&c->transport, opt.length);
      if (rc < 0) {
        c->handshake_cut = nbd_option_name(opt.option);
      } else if (rc == 0 && tls_required_for(c, opt.option)) {
        rc = reply_error(c, opt.option, NBD_REP_ERR_TLS_REQD,
                         "TLS is required: send NBD_OPT_STARTTLS first");
      } else if (rc == 0) {
        rc = reply_error(c, opt.option, NBD_REP_ERR_TOO_BIG, "option data too long");
      }
      if (rc < 0) {
        break;
      }
      continue;
    }
    rc = transport_read_full(&c->transport, payload, opt.length);
    if (rc < 0) {
      c->handshake_cut = nbd_option_name(opt.option);
      break;
    }
    rc = option_dispatch(c, opt.option, payload, opt.length);
    if (rc != 0) {
      break;
    }
  }
  free(payload);
  return rc > 0 ? 0 : rc;
}
