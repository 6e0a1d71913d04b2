/* SPDX-License-Identifier: MIT */
/* keyupdate_client.c: an NBD client over TLS 1.3 that sends KeyUpdate messages (RFC 8446
 * 4.6.3), which Python's ssl module cannot, for tests/tls/keyupdate.sh.
 *
 *   keyupdate_client PORT CA_FILE ROUNDS
 *
 * Over TCP on 127.0.0.1:PORT: the fixed newstyle handshake, NBD_OPT_STARTTLS, the TLS
 * handshake (the server's certificate checked against CA_FILE for "localhost"), then
 *   1. a KeyUpdate asking the server to update too (GNUTLS_KU_PEER), in option haggling;
 *   2. NBD_OPT_GO, and a WRITE of 4 MiB of a known pattern at offset 0;
 *   3. ROUNDS times: a READ of the 4 MiB, a KeyUpdate sent while its reply streams (with
 *      GNUTLS_KU_PEER on even rounds), the reply read and compared with the pattern;
 *   4. NBD_CMD_DISC.
 * Exits 0 when every reply is whole and right; else prints what failed on stderr and exits 1.
 * Source: doc/proto.md (handshake, STARTTLS, simple replies); a test client, not a model. */
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DATA_LEN (4u << 20)

static int sock;
static gnutls_session_t tls;

static void fail(const char *what, int rc)
{
  fprintf(stderr, "keyupdate_client: %s: %d %s\n", what, rc,
          rc < 0 && rc > -1000 ? gnutls_strerror(rc) : "");
  exit(1);
}

static void put32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put64(uint8_t *p, uint64_t v)
{
  put32(p, (uint32_t)(v >> 32));
  put32(p + 4, (uint32_t)v);
}

/* Plain socket I/O, before TLS. */
static void plain_read(void *buf, size_t len)
{
  for (size_t done = 0; done < len;) {
    ssize_t n = read(sock, (uint8_t *)buf + done, len - done);
    if (n <= 0) {
      fail("read before TLS", (int)n);
    }
    done += (size_t)n;
  }
}

static void plain_write(const void *buf, size_t len)
{
  if (write(sock, buf, len) != (ssize_t)len) {
    fail("write before TLS", -1);
  }
}

/* TLS I/O (blocking socket: AGAIN and INTERRUPTED only repeat the call). */
static void tls_write(const void *buf, size_t len)
{
  for (size_t done = 0; done < len;) {
    ssize_t n = gnutls_record_send(tls, (const uint8_t *)buf + done, len - done);
    if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
      continue;
    }
    if (n < 0) {
      fail("TLS send", (int)n);
    }
    done += (size_t)n;
  }
}

static void tls_read(void *buf, size_t len, const char *what)
{
  for (size_t done = 0; done < len;) {
    ssize_t n = gnutls_record_recv(tls, (uint8_t *)buf + done, len - done);
    if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
      continue;
    }
    if (n <= 0) {
      fail(what, n == 0 ? -1000 : (int)n);
    }
    done += (size_t)n;
  }
}

static void key_update(unsigned flags, const char *when)
{
  int rc;

  do {
    rc = gnutls_session_key_update(tls, flags);
  } while (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED);
  if (rc < 0) {
    fprintf(stderr, "keyupdate_client: KeyUpdate %s: %s\n", when, gnutls_strerror(rc));
    exit(1);
  }
}

static void option_header(uint8_t h[16], uint32_t option, uint32_t len)
{
  memcpy(h, "IHAVEOPT", 8);
  put32(h + 8, option);
  put32(h + 12, len);
}

/* NBD_OPT_GO for the default export; reads the replies up to NBD_REP_ACK. */
static void option_go(void)
{
  uint8_t req[16 + 6] = {0}; /* name length 0, no information requests */
  uint8_t rep[20];
  static uint8_t data[4096];

  option_header(req, 7, 6);
  tls_write(req, sizeof req);
  for (;;) {
    tls_read(rep, sizeof rep, "NBD_OPT_GO reply");
    uint32_t type = get32(rep + 12), len = get32(rep + 16);
    if (len > sizeof data) {
      fail("NBD_OPT_GO reply too long", (int)len);
    }
    tls_read(data, len, "NBD_OPT_GO reply data");
    if (type == 1) { /* NBD_REP_ACK */
      return;
    }
    if (type & 0x80000000u) {
      fail("NBD_OPT_GO refused", (int)(type & 0xff));
    }
  }
}

static void request(uint16_t type, uint64_t cookie, uint64_t offset, uint32_t len)
{
  uint8_t q[28];

  put32(q, 0x25609513); /* NBD_REQUEST_MAGIC */
  q[4] = q[5] = 0;      /* flags */
  q[6] = (uint8_t)(type >> 8);
  q[7] = (uint8_t)type;
  put64(q + 8, cookie);
  put64(q + 16, offset);
  put32(q + 24, len);
  tls_write(q, sizeof q);
}

static void simple_reply(uint64_t cookie, const char *what)
{
  uint8_t r[16];

  tls_read(r, sizeof r, what);
  if (get32(r) != 0x67446698 || get32(r + 4) != 0) {
    fprintf(stderr, "keyupdate_client: %s: magic 0x%x, error %u\n", what, get32(r), get32(r + 4));
    exit(1);
  }
  if (memcmp(r + 8, (uint8_t[8]){0, 0, 0, 0, (uint8_t)(cookie >> 24), (uint8_t)(cookie >> 16),
                                  (uint8_t)(cookie >> 8), (uint8_t)cookie}, 8) != 0) {
    fail("reply cookie", -1001);
  }
}

int main(int argc, char **argv)
{
  if (argc != 4) {
    fprintf(stderr, "usage: keyupdate_client PORT CA_FILE ROUNDS\n");
    return 2;
  }
  int rounds = atoi(argv[3]);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  gnutls_certificate_credentials_t cred;
  uint8_t greeting[18], rep[20], hdr[16];
  uint8_t *pattern = malloc(DATA_LEN), *got = malloc(DATA_LEN);
  int rc;

  if (pattern == NULL || got == NULL) {
    fail("malloc", -1);
  }
  for (uint32_t i = 0; i < DATA_LEN; i++) {
    pattern[i] = (uint8_t)(i * 2654435761u >> 24);
  }
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  sock = socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof addr) < 0) {
    fail("connect", -1);
  }
  plain_read(greeting, sizeof greeting);
  put32(hdr, 3); /* NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES */
  plain_write(hdr, 4);
  option_header(hdr, 5, 0); /* NBD_OPT_STARTTLS */
  plain_write(hdr, 16);
  plain_read(rep, sizeof rep);
  if (get32(rep + 12) != 1) {
    fail("NBD_OPT_STARTTLS not acknowledged", (int)get32(rep + 12));
  }

  gnutls_certificate_allocate_credentials(&cred);
  if (gnutls_certificate_set_x509_trust_file(cred, argv[2], GNUTLS_X509_FMT_PEM) <= 0) {
    fail("CA file", -1);
  }
  gnutls_init(&tls, GNUTLS_CLIENT);
  gnutls_set_default_priority(tls);
  gnutls_credentials_set(tls, GNUTLS_CRD_CERTIFICATE, cred);
  gnutls_server_name_set(tls, GNUTLS_NAME_DNS, "localhost", 9);
  gnutls_session_set_verify_cert(tls, "localhost", 0);
  gnutls_transport_set_int(tls, sock);
  do {
    rc = gnutls_handshake(tls);
  } while (rc < 0 && !gnutls_error_is_fatal(rc));
  if (rc < 0) {
    fail("TLS handshake", rc);
  }
  if (gnutls_protocol_get_version(tls) != GNUTLS_TLS1_3) {
    fail("not TLS 1.3", -1);
  }

  key_update(GNUTLS_KU_PEER, "in option haggling");
  option_go();
  request(1, 1, 0, DATA_LEN); /* NBD_CMD_WRITE */
  tls_write(pattern, DATA_LEN);
  simple_reply(1, "WRITE reply");
  for (int i = 0; i < rounds; i++) {
    uint64_t cookie = 100 + (uint64_t)i;
    request(0, cookie, 0, DATA_LEN); /* NBD_CMD_READ */
    key_update(i % 2 == 0 ? GNUTLS_KU_PEER : 0, "while a READ reply streams");
    simple_reply(cookie, "READ reply");
    tls_read(got, DATA_LEN, "READ data");
    if (memcmp(got, pattern, DATA_LEN) != 0) {
      fprintf(stderr, "keyupdate_client: round %d: the data read back differs\n", i);
      return 1;
    }
  }
  request(2, 2, 0, 0); /* NBD_CMD_DISC */
  gnutls_bye(tls, GNUTLS_SHUT_WR);
  printf("keyupdate_client: %d rounds of a 4 MiB READ with a KeyUpdate: all replies right\n",
         rounds);
  gnutls_deinit(tls);
  gnutls_certificate_free_credentials(cred);
  close(sock);
  free(pattern);
  free(got);
  return 0;
}
