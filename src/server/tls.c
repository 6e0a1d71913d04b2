/* SPDX-License-Identifier: MIT */
/* tls.c: see tls.h. GnuTLS does all the cryptography; this file loads credentials, runs
 * the server handshake and moves application data.
 *
 * Concurrency. During transmission a connection's reader thread calls gnutls_record_recv
 * while its writer thread calls gnutls_record_send on the same session. The GnuTLS manual
 * (3.7, section 6.1.5 "Thread safety") allows exactly this: "A gnutls_session_t object
 * could also be shared by two threads, one sending, the other receiving", provided that
 * no re-handshake (TLS 1.2) or other sending-and-receiving operation such as a key update
 * runs meanwhile, that GNUTLS_AUTO_REAUTH is not used, and that termination is done by a
 * single active thread (or the sender with gnutls_bye(GNUTLS_SHUT_WR)). Hence: the server
 * never initiates a re-handshake, a key update or post-handshake authentication
 * (gnutls_init gets neither GNUTLS_AUTO_REAUTH nor GNUTLS_POST_HANDSHAKE_AUTH); a client's
 * TLS 1.2 renegotiation attempt (GNUTLS_E_REHANDSHAKE on the reader) ends the connection;
 * and gnutls_bye runs in tls_session_end, after both threads finished (server.c).
 * Nothing else is shared: the reader and the writer each own their own fields below.
 * A client may send a TLS 1.3 KeyUpdate at any time after the handshake (RFC 8446 4.6.3;
 * GnuTLS clients do so by themselves when a key nears its data limit). GnuTLS processes it
 * inside the reader's gnutls_record_recv, which then changes the receiving keys and, when
 * the client asks, sends a KeyUpdate and changes the sending keys: a sending-and-receiving
 * operation that the manual forbids beside a concurrent send. (Done unlocked, a tester's
 * KeyUpdates during a 16 MiB READ reply made the client fail to decrypt 13 of 32 replies.)
 * So after the TLS handshake every GnuTLS call on the session holds s->lock. The reader
 * never waits for the socket while holding it: its transport reads with MSG_DONTWAIT,
 * GnuTLS returns GNUTLS_E_AGAIN when no whole record is there, and the reader drops the
 * lock, waits with poll() and calls again. The writer sends one record (at most 16 KiB)
 * per call, blocking, under the lock: a send that returned GNUTLS_E_AGAIN would have to
 * be repeated before any other call that flushes GnuTLS's send buffer (the reader's answer
 * to a KeyUpdate does), or its record goes out twice (a first non-blocking version of this
 * sent duplicated data that decrypted fine). The writer blocks only while the client does
 * not read; the reader then waits for the lock, and with it the client's next requests.
 *
 * Timeouts. During the TLS handshake the socket is blocking and keeps the handshake's
 * SO_RCVTIMEO; gnutls_handshake_set_timeout bounds the whole TLS handshake as well
 * (GnuTLS's default pull-timeout function polls the socket). GNUTLS_E_AGAIN also comes from
 * a record cut short by the peer's close, so it means a timeout only once the handshake's
 * time is up. After it, the reader's wait for the socket lasts at most its SO_RCVTIMEO
 * (during option haggling), as a blocking read would; none is set during transmission. */
#include "server/tls.h"

#include <assert.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/tls_psk.h"
#include "util/file_read.h"
#include "util/log.h"

/* The largest certificate, key, CA or CRL file read (bytes): a CRL can be tens of MiB; the
 * limit only keeps a wrong path (a disk image) from being read into memory. */
#define TLS_PEM_FILE_MAX ((size_t)256 << 20)

/* Largest TLS plaintext record (RFC 8446 5.1): the writer packs small replies up to this. */
#define TLS_RECORD_MAX 16384u

/* Seconds a close_notify may take to leave before the socket is closed anyway. */
#define TLS_BYE_TIMEOUT_S 2

enum psk_user_state {
  PSK_USER_NONE,    /* no PSK lookup, or the file could not be read (logged) */
  PSK_USER_FOUND,   /* the user is in the file */
  PSK_USER_UNKNOWN, /* not in the file: given a random key */
};

struct tls_session {
  gnutls_session_t session;
  int fd;                            /* the connection's socket (not owned) */
  pthread_mutex_t lock;              /* held around every GnuTLS call after the handshake */
  atomic_bool broken;                /* a fatal TLS error: no close_notify at the end */
  int read_error;                    /* reader: the GnuTLS error behind its last -EBADMSG */
  char psk_user[LOG_SHOWN_MAX];       /* handshake: the PSK username offered (escaped) */
  enum psk_user_state psk_user_state; /* handshake: what the PSK lookup found */
  size_t staged;                     /* writer: bytes waiting in stage */
  uint8_t stage[TLS_RECORD_MAX];     /* writer: small pieces packed into one record */
};

static struct {
  enum tls_mode mode;
  gnutls_certificate_credentials_t x509;  /* or NULL */
  gnutls_psk_server_credentials_t psk;    /* or NULL */
  char *psk_path;                         /* --tls-psk FILE, read at each handshake */
  bool verify_clients;                    /* ca-cert.pem present */
  char describe[160];
} tls_cfg;

int tls_mode_parse(const char *text, enum tls_mode *out)
{
  static const char *const names[] = {"off", "on", "require"};

  for (int i = 0; i < 3; i++) {
    if (strcmp(text, names[i]) == 0) {
      *out = (enum tls_mode)i;
      return 0;
    }
  }
  return -EINVAL;
}

const char *tls_mode_name(enum tls_mode mode)
{
  switch (mode) {
  case TLS_MODE_ON:
    return "on";
  case TLS_MODE_REQUIRE:
    return "require";
  default:
    return "off";
  }
}

enum tls_mode tls_server_mode(void)
{
  return tls_cfg.mode;
}

const char *tls_server_describe(void)
{
  return tls_cfg.describe[0] != '\0' ? tls_cfg.describe : "TLS off";
}

/* 0 when `path` is a readable regular file; else -errno, with the reason in err. With
 * `exists` non-NULL the file is optional: absent, it is 0 with *exists false. */
static int check_readable(const char *path, bool *exists, char *err, size_t errlen)
{
  struct stat st;

  if (stat(path, &st) < 0 || access(path, R_OK) < 0) {
    int e = errno;
    /* absent is fine for an optional file; a dangling symbolic link is an error */
    if (exists != NULL && e == ENOENT && lstat(path, &st) < 0) {
      *exists = false;
      return 0;
    }
    snprintf(err, errlen, "%s: %s", path, strerror(e));
    return -e;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    return -EINVAL;
  }
  if (exists != NULL) {
    *exists = true;
  }
  return 0;
}

/* Reads the PEM file `path` into `out` (file_read.h), so that a failure keeps its errno
 * (GnuTLS's *_file loaders say only "Error while reading file"). Returns 0, or -errno with
 * the reason in err (for -EMFILE, the open-files limit). */
static int pem_read(const char *path, gnutls_datum_t *out, char *err, size_t errlen)
{
  char *buf;
  size_t len;
  int rc = file_read_all_or_explain(path, TLS_PEM_FILE_MAX, &buf, &len, err, errlen);

  if (rc < 0) {
    return rc;
  }
  out->data = (unsigned char *)buf;
  out->size = (unsigned)len;
  return 0;
}

/* Wipes and frees the four files load_x509 read (a private key among them). */
static void pem_free(gnutls_datum_t pem[4])
{
  for (int i = 0; i < 4; i++) {
    file_read_free((char *)pem[i].data, pem[i].size);
    pem[i].data = NULL;
    pem[i].size = 0;
  }
}

static int load_x509(const char *dir, char *err, size_t errlen)
{
  gnutls_datum_t pem[4] = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}}; /* cert, key, ca, crl */
  char cert[4096], key[4096], ca[4096], crl[4096];
  struct stat st;
  bool have_ca = false, have_crl = false;
  int rc;

  if (stat(dir, &st) < 0) {
    int e = errno;
    snprintf(err, errlen, "--tls-certificates %s: %s", dir, strerror(e));
    return -e;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "--tls-certificates %s: not a directory", dir);
    return -ENOTDIR;
  }
  if (snprintf(cert, sizeof cert, "%s/server-cert.pem", dir) >= (int)sizeof cert ||
      snprintf(key, sizeof key, "%s/server-key.pem", dir) >= (int)sizeof key ||
      snprintf(ca, sizeof ca, "%s/ca-cert.pem", dir) >= (int)sizeof ca ||
      snprintf(crl, sizeof crl, "%s/ca-crl.pem", dir) >= (int)sizeof crl) {
    snprintf(err, errlen, "--tls-certificates: directory name too long");
    return -ENAMETOOLONG;
  }
  if ((rc = check_readable(cert, NULL, err, errlen)) < 0 ||
      (rc = check_readable(key, NULL, err, errlen)) < 0 ||
      (rc = check_readable(ca, &have_ca, err, errlen)) < 0 ||
      (rc = check_readable(crl, &have_crl, err, errlen)) < 0) {
    return rc;
  }
  if (gnutls_certificate_allocate_credentials(&tls_cfg.x509) < 0) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  if ((rc = pem_read(cert, &pem[0], err, errlen)) < 0 ||
      (rc = pem_read(key, &pem[1], err, errlen)) < 0 ||
      (have_ca && (rc = pem_read(ca, &pem[2], err, errlen)) < 0) ||
      (have_crl && (rc = pem_read(crl, &pem[3], err, errlen)) < 0)) {
    pem_free(pem);
    return rc;
  }
  rc = gnutls_certificate_set_x509_key_mem(tls_cfg.x509, &pem[0], &pem[1], GNUTLS_X509_FMT_PEM);
  if (rc < 0) {
    snprintf(err, errlen, "%s with %s: %s", cert, key, gnutls_strerror(rc));
  } else if (have_ca) {
    rc = gnutls_certificate_set_x509_trust_mem(tls_cfg.x509, &pem[2], GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
      snprintf(err, errlen, "%s: %s", ca, rc < 0 ? gnutls_strerror(rc) : "no certificate in it");
      rc = rc < 0 ? rc : GNUTLS_E_NO_CERTIFICATE_FOUND;
    } else {
      tls_cfg.verify_clients = true;
    }
  }
  if (rc >= 0 && have_crl) {
    rc = gnutls_certificate_set_x509_crl_mem(tls_cfg.x509, &pem[3], GNUTLS_X509_FMT_PEM);
    if (rc < 0) {
      snprintf(err, errlen, "%s: %s", crl, gnutls_strerror(rc));
    }
  }
  pem_free(pem);
  if (rc < 0) {
    return rc == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL;
  }
  gnutls_certificate_set_known_dh_params(tls_cfg.x509, GNUTLS_SEC_PARAM_MEDIUM);
  return 0;
}

/* GnuTLS's PSK lookup (gnutls_psk_server_credentials_function2), in the handshake's thread:
 * the key of `username` from the --tls-psk file, read again now (tls_psk.h). It notes the
 * name, and whether the file has it, on the session for the handshake's failure line. An
 * unknown user gets a random key, so that the client fails as with a wrong key, as
 * GnuTLS's own file lookup does (no telling which usernames exist). Returns 0, or -1 (the
 * handshake fails) when the file cannot be read or memory runs out. */
static int psk_key_for_user(gnutls_session_t session, const gnutls_datum_t *username,
                            gnutls_datum_t *key)
{
  struct tls_session *s = gnutls_session_get_ptr(session);
  int rc;

  assert(s != NULL);
  log_escape(s->psk_user, sizeof s->psk_user, username->data, username->size);
  rc = tls_psk_lookup_key(tls_cfg.psk_path, username->data, username->size, key);
  if (rc == 0) {
    s->psk_user_state = PSK_USER_FOUND;
    return 0;
  }
  if (rc != -ESRCH) {
    char shown[LOG_SHOWN_MAX], text[128];
    log_error("TLS: reading the PSK file %s: %s",
              log_escape_str(shown, sizeof shown, tls_cfg.psk_path),
              file_read_strerror(rc, TLS_PSK_FILE_MAX, text, sizeof text));
    return -1;
  }
  s->psk_user_state = PSK_USER_UNKNOWN;
  key->data = gnutls_malloc(32);
  if (key->data == NULL) {
    return -1;
  }
  key->size = 32;
  return gnutls_rnd(GNUTLS_RND_KEY, key->data, key->size) == 0 ? 0 : -1;
}

static int load_psk(const char *path, char *err, size_t errlen)
{
  char why[LOG_SHOWN_MAX + 128];
  int rc = check_readable(path, NULL, why, sizeof why);

  if (rc == 0) {
    rc = tls_psk_check_file(path, why, sizeof why);
  }
  if (rc < 0) {
    snprintf(err, errlen, "--tls-psk %s", why); /* named as --tls-certificates' errors are */
    return rc;
  }
  tls_cfg.psk_path = strdup(path);
  if (tls_cfg.psk_path == NULL || gnutls_psk_allocate_server_credentials(&tls_cfg.psk) < 0) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  gnutls_psk_set_server_credentials_function2(tls_cfg.psk, psk_key_for_user);
  gnutls_psk_set_server_known_dh_params(tls_cfg.psk, GNUTLS_SEC_PARAM_MEDIUM);
  return 0;
}

int tls_server_setup(enum tls_mode mode, const char *cert_dir, const char *psk_file,
                     char *err, size_t errlen)
{
  int rc;

  err[0] = '\0';
  if (mode == TLS_MODE_OFF) {
    if (cert_dir != NULL || psk_file != NULL) {
      snprintf(err, errlen, "--tls off cannot take %s (use --tls on or require)",
               cert_dir != NULL ? "--tls-certificates" : "--tls-psk");
      return -EINVAL;
    }
    return 0;
  }
  if (cert_dir == NULL && psk_file == NULL) {
    snprintf(err, errlen, "--tls %s needs --tls-certificates DIR or --tls-psk FILE",
             tls_mode_name(mode));
    return -EINVAL;
  }
  if (cert_dir != NULL && psk_file != NULL) {
    snprintf(err, errlen, "--tls-certificates and --tls-psk cannot be combined");
    return -EINVAL;
  }
  rc = cert_dir != NULL ? load_x509(cert_dir, err, errlen) : load_psk(psk_file, err, errlen);
  if (rc < 0) {
    tls_server_teardown();
    return rc;
  }
  tls_cfg.mode = mode;
  snprintf(tls_cfg.describe, sizeof tls_cfg.describe, "TLS %s (%s)", tls_mode_name(mode),
           psk_file != NULL ? "PSK"
           : tls_cfg.verify_clients ? "X.509, client certificates required and verified"
                                    : "X.509");
  return 0;
}

void tls_server_teardown(void)
{
  if (tls_cfg.x509 != NULL) {
    gnutls_certificate_free_credentials(tls_cfg.x509);
  }
  if (tls_cfg.psk != NULL) {
    gnutls_psk_free_server_credentials(tls_cfg.psk);
  }
  free(tls_cfg.psk_path);
  memset(&tls_cfg, 0, sizeof tls_cfg);
}

/* Maps a GnuTLS error to -errno. Callers handle GNUTLS_E_AGAIN themselves (a socket not
 * ready, a record cut short by a close, or a record that carried no data, such as a
 * KeyUpdate); here it is a timeout. */
static int tls_errno(int rc)
{
  switch (rc) {
  case GNUTLS_E_AGAIN:
  case GNUTLS_E_TIMEDOUT:
    return -ETIMEDOUT;
  case GNUTLS_E_PREMATURE_TERMINATION:
  case GNUTLS_E_PULL_ERROR:
    return -ECONNRESET;
  case GNUTLS_E_PUSH_ERROR:
    return -EPIPE;
  case GNUTLS_E_MEMORY_ERROR:
    return -ENOMEM;
  default:
    return -EPROTO;
  }
}

/* Set once by tls_readers_stop, at shutdown; never cleared. */
static atomic_bool readers_stopping;

void tls_readers_stop(void)
{
  atomic_store(&readers_stopping, true);
}

/* The reader's transport after the handshake: never blocks, so that the reader does not
 * wait for the socket while it holds s->lock. GnuTLS reads errno (EAGAIN: GNUTLS_E_AGAIN).
 * The end of the stream that the drain's shutdown(SHUT_RD) makes is not shown to GnuTLS:
 * it would take it for a truncation attack (GNUTLS_E_PREMATURE_TERMINATION) and invalidate
 * the session, and the replies still in flight and the close_notify could not be sent
 * then. It reads as "no data yet"; socket_wait_readable then ends the reads. */
static ssize_t pull_nowait(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
  ssize_t n = recv((int)(intptr_t)ptr, buf, len, MSG_DONTWAIT);

  if (n == 0 && atomic_load(&readers_stopping)) {
    errno = EAGAIN;
    return -1;
  }
  return n;
}

/* Waits until s->fd is readable (or closed, or in error: the next GnuTLS call tells), at
 * most the socket's SO_RCVTIMEO (0: no limit). Returns 0, -ETIMEDOUT, or -ECONNRESET once
 * tls_readers_stop was called (checked before each wait: the drain's SHUT_RD that follows
 * it wakes a waiting reader). Reader, without s->lock. */
static int socket_wait_readable(const struct tls_session *s)
{
  struct timeval tv = {0, 0};
  socklen_t tvlen = sizeof tv;
  int timeout = -1;

  if (getsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tvlen) == 0 &&
      (tv.tv_sec > 0 || tv.tv_usec > 0)) {
    timeout = (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
  }
  for (;;) {
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (atomic_load(&readers_stopping)) {
      return -ECONNRESET; /* shutdown: the drain's SHUT_RD, kept from GnuTLS (pull_nowait) */
    }
    int n = poll(&p, 1, timeout);
    if (n > 0) {
      return 0;
    }
    if (n == 0) {
      return -ETIMEDOUT;
    }
    if (errno != EINTR) {
      return 0; /* let the next call meet the socket's error */
    }
  }
}

/* Remembers a fatal TLS-level error (not a mere end of the TCP stream: after the drain's
 * shutdown(SHUT_RD) the replies in flight and the close_notify still go out). */
static void note_error(struct tls_session *s, int rc)
{
  if (gnutls_error_is_fatal(rc) && rc != GNUTLS_E_PREMATURE_TERMINATION &&
      rc != GNUTLS_E_PULL_ERROR) {
    atomic_store(&s->broken, true);
  }
}

/* Sets s's priorities and credentials: PSK (with the PSK key exchanges added) or X.509,
 * asking for a client certificate when clients are verified. Returns 0 or a GnuTLS error. */
static int session_credentials_set(struct tls_session *s)
{
  const char *errpos = NULL;
  int rc;

  gnutls_session_set_ptr(s->session, s); /* for psk_key_for_user */
  if (tls_cfg.psk != NULL) {
    rc = gnutls_set_default_priority_append(s->session, "+ECDHE-PSK:+DHE-PSK:+PSK", &errpos, 0);
    if (rc == 0) {
      rc = gnutls_credentials_set(s->session, GNUTLS_CRD_PSK, tls_cfg.psk);
    }
  } else {
    rc = gnutls_set_default_priority(s->session);
    if (rc == 0) {
      rc = gnutls_credentials_set(s->session, GNUTLS_CRD_CERTIFICATE, tls_cfg.x509);
    }
    if (rc == 0 && tls_cfg.verify_clients) {
      gnutls_certificate_server_set_request(s->session, GNUTLS_CERT_REQUIRE);
      gnutls_session_set_verify_cert(s->session, NULL, 0); /* chain checked in the handshake */
    }
  }
  return rc;
}

/* Logs why s's handshake failed with GnuTLS error rc (a departed client only at debug
 * level: server.c says so) and returns it as -errno (tls_errno; -EPIPE counts as
 * -ECONNRESET). */
static int handshake_failure_log(const struct tls_session *s, const char *peer, int rc)
{
  int err = tls_errno(rc);

  if (err == -EPIPE) {
    err = -ECONNRESET; /* the peer left while we sent: the same as while we read */
  }
  if (err == -ECONNRESET) {
    /* the client went away ("Error in the pull function"): server.c says so (debug),
     * as for a close before TLS */
  } else if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
    gnutls_datum_t why = {NULL, 0};
    unsigned status = gnutls_session_get_verify_cert_status(s->session);
    gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
    while (why.data != NULL && why.size > 0 && why.data[why.size - 1] <= ' ') {
      why.data[--why.size] = '\0'; /* GnuTLS ends the text with a space */
    }
    log_info("%s: client certificate refused: %s", peer,
             why.data != NULL ? (const char *)why.data : "not trusted");
    gnutls_free(why.data);
  } else if (err == -ETIMEDOUT) {
    log_debug("%s: TLS handshake timed out", peer); /* server.c logs the deadline */
  } else if (s->psk_user_state == PSK_USER_UNKNOWN) {
    log_info("%s: TLS handshake failed: unknown PSK user '%s'", peer, s->psk_user);
  } else if (s->psk_user_state == PSK_USER_FOUND) {
    char shown[LOG_SHOWN_MAX];
    log_info("%s: TLS handshake failed for PSK user '%s' (not the key in %s?): %s", peer,
             s->psk_user, log_escape_str(shown, sizeof shown, tls_cfg.psk_path),
             gnutls_strerror(rc));
  } else {
    log_info("%s: TLS handshake failed: %s", peer, gnutls_strerror(rc));
  }
  return err;
}

int tls_session_start(int fd, unsigned timeout_s, const char *peer, struct tls_session **out)
{
  struct tls_session *s = calloc(1, sizeof *s);
  int rc;

  *out = NULL;
  if (s == NULL) {
    return -ENOMEM;
  }
  atomic_init(&s->broken, false);
  rc = gnutls_init(&s->session, GNUTLS_SERVER | GNUTLS_NO_SIGNAL);
  if (rc < 0) {
    free(s);
    return -ENOMEM;
  }
  rc = session_credentials_set(s);
  if (rc < 0) {
    log_error("%s: cannot set up a TLS session: %s", peer, gnutls_strerror(rc));
    gnutls_deinit(s->session);
    free(s);
    return -EPROTO;
  }
  gnutls_transport_set_int(s->session, fd);
  gnutls_handshake_set_timeout(s->session, timeout_s * 1000u);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    rc = gnutls_handshake(s->session);
    if (rc == GNUTLS_E_AGAIN) { /* SO_RCVTIMEO, or a record cut short by the peer's close */
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec < (time_t)timeout_s) {
        continue; /* not the timeout: the next read meets the close (or the rest) */
      }
    }
    if (rc != GNUTLS_E_INTERRUPTED && rc != GNUTLS_E_WARNING_ALERT_RECEIVED) {
      break;
    }
  }
  if (rc < 0) {
    int err = handshake_failure_log(s, peer, rc);
    gnutls_deinit(s->session);
    free(s);
    return err;
  }
  if (tls_cfg.verify_clients) { /* belt and braces: the handshake already checked it */
    unsigned status = 0;
    if (gnutls_certificate_verify_peers2(s->session, &status) < 0 || status != 0) {
      log_info("%s: client certificate refused", peer);
      gnutls_deinit(s->session);
      free(s);
      return -EPROTO;
    }
  }
  {
    char *desc = gnutls_session_get_desc(s->session);
    log_debug("%s: TLS established: %s", peer, desc != NULL ? desc : "?");
    gnutls_free(desc);
  }
  /* From here on no GnuTLS call waits for the socket (see the top of this file). */
  s->fd = fd;
  pthread_mutex_init(&s->lock, NULL);
  gnutls_transport_set_pull_function(s->session, pull_nowait);
  *out = s;
  return 0;
}

int tls_session_read_full(struct tls_session *s, void *buf, size_t len)
{
  size_t done = 0;

  while (done < len) {
    pthread_mutex_lock(&s->lock);
    ssize_t n = gnutls_record_recv(s->session, (char *)buf + done, len - done);
    pthread_mutex_unlock(&s->lock);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n == 0) {
      return -ECONNRESET; /* close_notify */
    }
    if (n == GNUTLS_E_AGAIN) { /* no whole record yet, or one with no data (KeyUpdate) */
      int rc = socket_wait_readable(s);
      if (rc < 0) {
        return rc;
      }
      continue;
    }
    if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_WARNING_ALERT_RECEIVED) {
      continue;
    }
    note_error(s, (int)n);
    int err = tls_errno((int)n); /* GNUTLS_E_REHANDSHAKE included: renegotiation is refused */
    if (err == -EPROTO) {
      s->read_error = (int)n;
      return -EBADMSG; /* told apart from the callers' own -EPROTO (bad magic) */
    }
    return err;
  }
  return 0;
}

const char *tls_session_read_error(const struct tls_session *s)
{
  return s->read_error != 0 ? gnutls_strerror(s->read_error) : "no TLS error";
}

/* Sends len bytes as records of at most TLS_RECORD_MAX. Writer side. */
static int send_all(struct tls_session *s, const uint8_t *p, size_t len)
{
  while (len > 0) {
    pthread_mutex_lock(&s->lock); /* one record per call (see the top of this file) */
    ssize_t n = gnutls_record_send(s->session, p, len);
    pthread_mutex_unlock(&s->lock);
    if (n == GNUTLS_E_INTERRUPTED) {
      continue; /* GnuTLS wants the same arguments again */
    }
    if (n < 0) {
      note_error(s, (int)n);
      return tls_errno((int)n);
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int tls_session_writev_full(struct tls_session *s, const struct iovec *iov, int n)
{
  int rc;

  s->staged = 0;
  for (int i = 0; i < n; i++) {
    const uint8_t *p = iov[i].iov_base;
    size_t len = iov[i].iov_len;

    while (len > 0) {
      if (s->staged == 0 && len >= TLS_RECORD_MAX) {
        size_t whole = len - len % TLS_RECORD_MAX; /* full records straight from the buffer */
        rc = send_all(s, p, whole);
        if (rc < 0) {
          return rc;
        }
        p += whole;
        len -= whole;
        continue;
      }
      size_t take = TLS_RECORD_MAX - s->staged;
      take = take < len ? take : len;
      memcpy(s->stage + s->staged, p, take);
      s->staged += take;
      p += take;
      len -= take;
      if (s->staged == TLS_RECORD_MAX) {
        rc = send_all(s, s->stage, s->staged);
        s->staged = 0;
        if (rc < 0) {
          return rc;
        }
      }
    }
  }
  rc = s->staged > 0 ? send_all(s, s->stage, s->staged) : 0;
  s->staged = 0;
  return rc;
}

void tls_session_end(struct tls_session *s, bool bye)
{
  if (s == NULL) {
    return;
  }
  if (bye && !atomic_load(&s->broken)) {
    struct timeval tv = {.tv_sec = TLS_BYE_TIMEOUT_S, .tv_usec = 0};
    int rc;
    setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    do {
      rc = gnutls_bye(s->session, GNUTLS_SHUT_WR); /* spec: end TLS before TCP */
    } while (rc == GNUTLS_E_INTERRUPTED);
  }
  gnutls_deinit(s->session);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

size_t tls_session_peer_names(struct tls_session *s, char names[][TLS_NAME_MAX], size_t max)
{
  size_t n = 0;
  unsigned ncerts = 0;
  const gnutls_datum_t *certs;
  gnutls_x509_crt_t crt;

  pthread_mutex_lock(&s->lock);
  const char *user = gnutls_psk_server_get_username(s->session);
  if (user != NULL && s->psk_user_state == PSK_USER_FOUND && n < max) {
    snprintf(names[n++], TLS_NAME_MAX, "%s", user);
  }
  certs = gnutls_certificate_get_peers(s->session, &ncerts);
  if (certs != NULL && ncerts > 0 && gnutls_x509_crt_init(&crt) == 0) {
    if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0) {
      size_t len = TLS_NAME_MAX;
      if (n < max && gnutls_x509_crt_get_dn(crt, names[n], &len) == 0) {
        n++;
      }
      len = TLS_NAME_MAX;
      if (n < max &&
          gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, names[n],
                                        &len) == 0) {
        n++;
      }
    }
    gnutls_x509_crt_deinit(crt);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}
