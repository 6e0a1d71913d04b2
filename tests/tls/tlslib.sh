# SPDX-License-Identifier: MIT
# tests/tls/tlslib.sh: throwaway X.509 credentials and PSK files for the TLS tests, made with
# GnuTLS's certtool (Debian package gnutls-bin) at test time. Source after tests/lib.sh.
# Layouts: a server directory holds server-cert.pem and server-key.pem (plus ca-cert.pem when
# client certificates are to be verified), as qemu's tls-creds-x509 and nbdkit's
# --tls-certificates; a client directory holds ca-cert.pem and optionally client-cert.pem and
# client-key.pem, as libnbd's tls-certificates and qemu's tls-creds-x509,endpoint=client.
command -v certtool >/dev/null || fail "certtool not found (apt-get install gnutls-bin)"

# tls_ca DIR CN: a self-signed CA in DIR/ca-cert.pem, DIR/ca-key.pem.
tls_ca() {
  mkdir -p "$1"
  printf 'cn = %s\nca\ncert_signing_key\ncrl_signing_key\nexpiration_days = 2\n' "$2" >"$1/ca.info"
  certtool --generate-privkey --key-type ecdsa --outfile "$1/ca-key.pem" >"$1/log" 2>&1 &&
    certtool --generate-self-signed --load-privkey "$1/ca-key.pem" --template "$1/ca.info" \
      --outfile "$1/ca-cert.pem" >>"$1/log" 2>&1 || { cat "$1/log" >&2; fail "certtool: CA"; }
}

# tls_cert CA_DIR OUT_DIR server|client: a key and a certificate signed by the CA, in
# OUT_DIR/{server,client}-{cert,key}.pem. Server certificates name localhost and 127.0.0.1.
tls_cert() {
  local ca=$1 out=$2 kind=$3
  mkdir -p "$out"
  if [ "$kind" = server ]; then
    printf 'organization = diskgate test\ncn = localhost\ndns_name = localhost\nip_address = 127.0.0.1\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n' >"$out/$kind.info"
  else
    printf 'organization = diskgate test\ncn = client\ntls_www_client\nencryption_key\nsigning_key\nexpiration_days = 2\n' >"$out/$kind.info"
  fi
  certtool --generate-privkey --key-type ecdsa --outfile "$out/$kind-key.pem" >"$out/log" 2>&1 &&
    certtool --generate-certificate --load-privkey "$out/$kind-key.pem" \
      --load-ca-certificate "$ca/ca-cert.pem" --load-ca-privkey "$ca/ca-key.pem" \
      --template "$out/$kind.info" --outfile "$out/$kind-cert.pem" >>"$out/log" 2>&1 ||
    { cat "$out/log" >&2; fail "certtool: $kind certificate"; }
  rm -f "$out/$kind.info" "$out/log"
}

# tls_standard: $T/ca (the CA), $T/srv (server credentials, no ca-cert.pem: no client
# certificates asked for), $T/cli (the CA only, for clients).
tls_standard() {
  tls_ca "$T/ca" "diskgate test CA"
  tls_cert "$T/ca" "$T/srv" server
  mkdir -p "$T/cli"
  cp "$T/ca/ca-cert.pem" "$T/cli/"
}

# tls_uris: after dg_start, the nbds:// URIs of the running server for a client whose
# credentials are in directory $1: DGS_TCP and DGS_UNIX.
tls_uris() {
  DGS_TCP="nbds://127.0.0.1:$DG_PORT/?tls-certificates=$1"
  DGS_UNIX="nbds+unix:///?socket=$DG_SOCK&tls-certificates=$1"
}

# qemu_tls_opts DIR [HOST PORT]: the --object and --image-opts arguments for qemu-img/qemu-io
# reaching the running server over TLS with x509 client credentials in DIR (in QEMU_ARGS).
qemu_tls_opts() {
  QEMU_ARGS=(--object "tls-creds-x509,id=tls0,dir=$1,endpoint=client"
             --image-opts "driver=nbd,host=127.0.0.1,port=$DG_PORT,tls-creds=tls0")
}
