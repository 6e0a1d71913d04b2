# SPDX-License-Identifier: MIT
"""nbdtls.py: a raw-socket NBD client that can upgrade to TLS (tests/tls; reusable by the
conformance tests), and the TLS rule checks (spec rules 11, 12, 13, 33 of
docs/spec-rules.md; doc/proto.md "TLS support").

The TLS part uses Python's ssl module: it is only a test client. Every failure raises
AssertionError with a message. Run the checks as
    nbdtls.py --port PORT --ca CA_DIR [--socket PATH] [--timeout S] CHECK...
where CHECK names a function below (rule11_*, rule12_*, rule13_*, ...); the server's mode
must match the check's group (off, require or on, see GROUPS).
"""
import argparse
import os
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nbdproto import (CMD_BLOCK_STATUS, CMD_DISC, CMD_READ, CMD_WRITE,  # noqa: E402,F401
                     EINVAL, FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES, OPT_ABORT,
                     OPT_EXPORT_NAME, OPT_EXTENDED_HEADERS, OPT_GO, OPT_INFO, OPT_LIST,
                     OPT_LIST_META_CONTEXT, OPT_PEEK_EXPORT, OPT_SET_META_CONTEXT,
                     OPT_STARTTLS, OPT_STRUCTURED_REPLY, REP_ACK, REP_ERR_INVALID,
                     REP_ERR_POLICY, REP_ERR_TLS_REQD, REP_META_CONTEXT,
                     SIMPLE_REPLY_MAGIC, STRUCTURED_REPLY_MAGIC, TF_SEND_DF, Conn,
                     export_info, info_payload, meta_payload)

TFLAG_SEND_DF = TF_SEND_DF
DG_MAX_OPTION_LENGTH = 4096 + 1024


class Client(Conn):
    """One connection. `s` is the plain socket, then the TLS socket after starttls()."""

    close_errors = Conn.close_errors + (ssl.SSLError,)  # a TLS close ends it too

    def __init__(self, port=None, unix=None, timeout=10.0):
        super().__init__(unix=unix, tcp=None if unix is not None else ("127.0.0.1", port),
                         timeout=timeout)
        self.tls = False
        self.size = self.tflags = None

    # ---- handshake ----
    def negotiate(self, flags=FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES):
        sflags = self.greeting()
        self.send_client_flags(flags & (sflags | FLAG_FIXED_NEWSTYLE))
        return self

    def option_reply(self, expect_option=None):
        _, rtype, data = self.recv_option_reply(expect_option)
        return rtype, data

    def option(self, option, data=b""):
        """Sends an option; returns the list of (type, data) replies up to the final one
        (ACK or an error)."""
        return self.option_replies(option, data)

    def final(self, option, data=b""):
        """The final reply type to one option."""
        return self.option(option, data)[-1][0]

    def starttls(self, cafile, hostname="localhost", certdir=None):
        """NBD_OPT_STARTTLS, expecting ACK, then the TLS handshake (close_notify is told
        apart from a bare TCP close: suppress_ragged_eofs=False). With certdir, presents
        certdir/client-cert.pem (key client-key.pem)."""
        rtype = self.final(OPT_STARTTLS)
        assert rtype == REP_ACK, f"STARTTLS: reply {rtype:#x}, expected ACK"
        self.wrap(cafile, hostname, certdir)
        return self

    def wrap(self, cafile, hostname="localhost", certdir=None):
        ctx = ssl.create_default_context(cafile=cafile)
        if certdir is not None:
            ctx.load_cert_chain(certdir + "/client-cert.pem", certdir + "/client-key.pem")
        self.s = ctx.wrap_socket(self.s, server_hostname=hostname,
                                 suppress_ragged_eofs=False)
        self.tls = True

    def go(self, name=b"", option=OPT_GO):
        """NBD_OPT_GO (or INFO); returns (size, transmission flags)."""
        replies = self.option(option, info_payload(name))
        assert replies[-1][0] == REP_ACK, f"option {option}: final reply {replies[-1][0]:#x}"
        size, tflags = export_info(replies[:-1])
        if size is not None:
            self.size, self.tflags = size, tflags
        assert self.size is not None, "no NBD_INFO_EXPORT"
        return self.size, self.tflags

    def set_meta_context(self, name=b"", query=b"base:allocation"):
        return self.option(OPT_SET_META_CONTEXT, meta_payload(name, [query]))

    # ---- transmission (compact requests: send_request, reply_magic from nbdproto.Conn) ----
    def simple_reply(self, cookie):
        """After a simple-reply magic: returns the error; checks the cookie."""
        return self.simple_reply_tail(cookie)[0]

    def disc(self):
        self.send_request(CMD_DISC, 0)

    def disc_abort(self):
        """Leaves the handshake with NBD_OPT_ABORT."""
        assert self.final(OPT_ABORT) == REP_ACK, "ABORT not acknowledged"


# ---------------------------------------------------------------------------------------
# Checks. Each takes the parsed arguments; each opens its own connections.

def connect(a):
    return Client(port=a.port, unix=a.socket, timeout=a.timeout).negotiate()


def cafile(a):
    return a.ca + "/ca-cert.pem"


def options_before_tls(entering=True):
    """Every option a client might send before TLS, with a payload, except STARTTLS and
    ABORT: all must get ERR_TLS_REQD in FORCEDTLS mode. With entering=False, without GO
    and EXTENDED_HEADERS (which would change what follows where they succeed)."""
    go = struct.pack(">I", 0) + struct.pack(">H", 0)
    meta = struct.pack(">II", 0, 1) + struct.pack(">I", 15) + b"base:allocation"
    opts = [(OPT_LIST, b""), (OPT_PEEK_EXPORT, b""), (OPT_INFO, go), (OPT_GO, go),
            (OPT_STRUCTURED_REPLY, b""), (OPT_LIST_META_CONTEXT, meta),
            (OPT_SET_META_CONTEXT, meta), (OPT_EXTENDED_HEADERS, b""),
            (0xDEAD, bytes(100)), (0x7FFFFFFF, b""), (OPT_LIST, b"junk"),
            (0xDEAD, bytes(DG_MAX_OPTION_LENGTH + 1))]
    if not entering:
        opts = [(o, d) for o, d in opts if o not in (OPT_GO, OPT_EXTENDED_HEADERS)]
    return opts


def rule11_starttls_policy(a):
    """NOTLS: STARTTLS gets ERR_POLICY (never TLS_REQD); STARTTLS with data ERR_INVALID;
    no option gets TLS_REQD; the client can go on in the clear."""
    c = connect(a)
    rtype = c.final(OPT_STARTTLS)
    assert rtype == REP_ERR_POLICY, f"STARTTLS in NOTLS mode: {rtype:#x}, expected ERR_POLICY"
    rtype = c.final(OPT_STARTTLS, b"x")
    assert rtype == REP_ERR_INVALID, f"STARTTLS with data: {rtype:#x}, expected ERR_INVALID"
    for opt, data in options_before_tls(entering=False):
        rtype = c.final(opt, data)
        assert rtype != REP_ERR_TLS_REQD, f"NOTLS mode sent ERR_TLS_REQD to option {opt:#x}"
    c.go()
    c.disc()


def rule30_block_status_without_context(a):
    """In the clear and without structured replies, BLOCK_STATUS fails with EINVAL in a
    simple reply (and trips no assertion in the reply encoder)."""
    c = connect(a)
    c.go()
    c.send_request(CMD_BLOCK_STATUS, 5, 0, 4096)
    magic = c.reply_magic()
    assert magic == SIMPLE_REPLY_MAGIC, f"BLOCK_STATUS reply magic {magic:#x}: not simple"
    error = c.simple_reply(5)
    assert error == EINVAL, f"BLOCK_STATUS without a context: error {error}, expected EINVAL"
    read_simple(c, 0, 512)
    c.disc()


def rule12_every_option_tls_reqd(a):
    """FORCEDTLS: every option but STARTTLS and ABORT, unknown ones and INFO included, gets
    ERR_TLS_REQD before TLS; the stream stays in sync, then STARTTLS works."""
    c = connect(a)
    for opt, data in options_before_tls():
        rtype = c.final(opt, data)
        assert rtype == REP_ERR_TLS_REQD, \
            f"option {opt:#x} ({len(data)} bytes) before TLS: {rtype:#x}, expected ERR_TLS_REQD"
    c.starttls(cafile(a))
    c.go()
    c.disc()


def rule12_export_name_before_tls_closes(a):
    """FORCEDTLS: NBD_OPT_EXPORT_NAME before TLS cannot be refused: a hard close."""
    c = connect(a)
    c.send_option(OPT_EXPORT_NAME, b"")
    assert c.closed_by_server(), "EXPORT_NAME before TLS: the connection stayed open"


def rule12_abort_before_tls(a):
    """FORCEDTLS: ABORT before TLS is not refused with TLS_REQD: it gets ACK."""
    c = connect(a)
    rtype = c.final(OPT_ABORT)
    assert rtype == REP_ACK, f"ABORT before TLS: {rtype:#x}, expected ACK"


def rule12_starttls_with_data_invalid(a):
    """STARTTLS carrying data gets ERR_INVALID (rule 6), and the stream stays in sync."""
    c = connect(a)
    rtype = c.final(OPT_STARTTLS, b"data")
    assert rtype == REP_ERR_INVALID, f"STARTTLS with data: {rtype:#x}, expected ERR_INVALID"
    c.starttls(cafile(a))
    c.go()
    c.disc()


def rule12_second_starttls_invalid(a):
    """A second STARTTLS once TLS is up gets ERR_INVALID (over TLS); nothing after TLS gets
    ERR_TLS_REQD; EXPORT_NAME over TLS works."""
    c = connect(a).starttls(cafile(a))
    rtype = c.final(OPT_STARTTLS)
    assert rtype == REP_ERR_INVALID, f"second STARTTLS: {rtype:#x}, expected ERR_INVALID"
    for opt, data in options_before_tls(entering=False):
        rtype = c.final(opt, data)
        assert rtype != REP_ERR_TLS_REQD, f"ERR_TLS_REQD after TLS for option {opt:#x}"
    c.disc_abort()
    c = connect(a).starttls(cafile(a))
    c.send_option(OPT_EXPORT_NAME, b"")
    c.size, c.tflags = struct.unpack(">QH", c.recv_exact(10))
    data = read_simple(c, 0, 4096)
    assert len(data) == 4096
    c.disc()


def rule12_tls_handshake_timeout(a):
    """A client that gets the ACK to STARTTLS and never starts (or never finishes) the TLS
    handshake is dropped within the handshake timeout (a.hs_timeout seconds)."""
    for partial in (b"", b"\x16\x03\x01\x00\xc8\x01\x00"):
        c = connect(a)
        assert c.final(OPT_STARTTLS) == REP_ACK, "STARTTLS not acknowledged"
        c.s.sendall(partial)
        start = time.monotonic()
        assert c.closed_by_server(a.hs_timeout + 5), \
            f"TLS handshake stalled ({len(partial)} bytes sent): connection still open"
        took = time.monotonic() - start
        assert took < a.hs_timeout + 3, f"closed after {took:.1f} s, timeout {a.hs_timeout}"


def rule12_bad_ca_refused(a):
    """A client that does not trust the server's certificate fails the TLS handshake; the
    server stays up."""
    c = connect(a)
    assert c.final(OPT_STARTTLS) == REP_ACK, "STARTTLS not acknowledged"
    ctx = ssl.create_default_context()  # the system's CAs: our test CA is not among them
    try:
        ctx.wrap_socket(c.s, server_hostname="localhost")
    except ssl.SSLCertVerificationError:
        pass
    else:
        raise AssertionError("a certificate from an unknown CA was accepted")
    c = connect(a).starttls(cafile(a))
    c.go()
    c.disc()


def read_simple(c, offset, length, cookie=0xC00C1E):
    c.send_request(CMD_READ, cookie, offset, length)
    magic = c.reply_magic()
    assert magic == SIMPLE_REPLY_MAGIC, f"READ reply magic {magic:#x}, expected a simple reply"
    error = c.simple_reply(cookie)
    assert error == 0, f"READ failed with {error}"
    return c.recv_exact(length)


def rule13_structured_replies_forgotten(a):
    """SELECTIVETLS (--tls on): structured replies and a meta context negotiated in the
    clear are forgotten after STARTTLS: no SEND_DF, READ gets a simple reply, BLOCK_STATUS
    fails with EINVAL, SET_META_CONTEXT needs structured replies again."""
    c = connect(a)
    assert c.final(OPT_STRUCTURED_REPLY) == REP_ACK, "STRUCTURED_REPLY in the clear refused"
    replies = c.set_meta_context()
    assert [t for t, _ in replies] == [REP_META_CONTEXT, REP_ACK], f"SET_META_CONTEXT {replies}"
    c.starttls(cafile(a))
    rtype = c.set_meta_context()[-1][0]
    assert rtype == REP_ERR_INVALID, \
        f"SET_META_CONTEXT after STARTTLS without structured replies: {rtype:#x}"
    _, tflags = c.go()
    assert not tflags & TFLAG_SEND_DF, "SEND_DF advertised: structured replies survived STARTTLS"
    read_simple(c, 0, 512)
    c.send_request(CMD_BLOCK_STATUS, 7, 0, 4096)
    magic = c.reply_magic()
    assert magic == SIMPLE_REPLY_MAGIC, f"BLOCK_STATUS reply magic {magic:#x}: not simple"
    error = c.simple_reply(7)
    assert error == EINVAL, f"BLOCK_STATUS without a context after STARTTLS: error {error}"
    c.disc()


def rule13_extended_headers_forgotten(a):
    """Extended headers negotiated in the clear are forgotten after STARTTLS: compact
    requests are read and answered with simple replies."""
    c = connect(a)
    assert c.final(OPT_EXTENDED_HEADERS) == REP_ACK, "EXTENDED_HEADERS in the clear refused"
    c.starttls(cafile(a))
    c.go()
    assert read_simple(c, 0, 4096) is not None
    c.disc()


def rule13_renegotiated_after_tls(a):
    """Structured replies negotiated again over TLS work: a structured READ reply."""
    c = connect(a).starttls(cafile(a))
    assert c.final(OPT_STRUCTURED_REPLY) == REP_ACK, "STRUCTURED_REPLY over TLS refused"
    c.go()
    c.send_request(CMD_READ, 9, 0, 4096)
    magic = c.reply_magic()
    assert magic == STRUCTURED_REPLY_MAGIC, f"READ after SR over TLS: magic {magic:#x}"
    c.disc()


def selective_plain_allowed(a):
    """SELECTIVETLS (--tls on): a client that never upgrades is served in the clear."""
    c = connect(a)
    replies = c.option(OPT_LIST)
    assert replies[-1][0] == REP_ACK, f"LIST in the clear: {replies[-1][0]:#x}"
    c.go()
    read_simple(c, 0, 512)
    c.disc()


def rule33_tls_bye(a):
    """After NBD_CMD_DISC over TLS the server sends close_notify before closing TCP; also
    after NBD_OPT_ABORT over TLS."""
    c = connect(a).starttls(cafile(a))
    c.go()
    c.disc()
    try:
        assert c.s.recv(1) == b"", "data after NBD_CMD_DISC"
    except ssl.SSLEOFError:
        raise AssertionError("TCP closed without a TLS close_notify after NBD_CMD_DISC")
    c = connect(a).starttls(cafile(a))
    assert c.final(OPT_ABORT) == REP_ACK, "ABORT over TLS not acknowledged"
    try:
        assert c.s.recv(1) == b"", "data after ABORT"
    except ssl.SSLEOFError:
        raise AssertionError("TCP closed without a TLS close_notify after NBD_OPT_ABORT")


def tls_client_cert_accepted(a):
    """With ca-cert.pem on the server: the client certificate in a.cert is accepted."""
    c = connect(a).starttls(cafile(a), certdir=a.cert)
    c.go()
    read_simple(c, 0, 512)
    c.disc()


def tls_client_cert_refused(a):
    """With ca-cert.pem on the server: the client certificate in a.cert (another CA's,
    sent anyway) is refused: the handshake, or the first exchange after it, fails."""
    c = connect(a)
    try:
        c.starttls(cafile(a), certdir=a.cert)
        c.go()  # TLS 1.3: the server's verdict arrives after the client's last flight
    except (ssl.SSLError, ConnectionError, AssertionError):
        return
    raise AssertionError("a client certificate from another CA was accepted")


def rule34_tls_drain_bye(a):
    """SIGTERM (a.pid) with a TLS client in transmission: the server finishes, then sends
    close_notify before closing TCP (the drain's shutdown(SHUT_RD) must not cost the bye).
    The server exits: run this last."""
    import os
    import signal
    assert a.pid, "rule34_tls_drain_bye needs --pid"
    c = connect(a).starttls(cafile(a))
    c.go()
    read_simple(c, 0, 512)
    os.kill(a.pid, signal.SIGTERM)
    try:
        assert c.s.recv(1) == b"", "data after SIGTERM"
    except ssl.SSLEOFError:
        raise AssertionError("TCP closed without a TLS close_notify at shutdown")


def tls_idle_transmission(a):
    """Idle longer than the handshake timeout once in transmission over TLS, then a READ
    still works (the handshake deadline must not apply to transmission)."""
    c = connect(a).starttls(cafile(a))
    c.go()
    time.sleep(a.hs_timeout + 1)
    read_simple(c, 0, 65536)
    c.disc()


def tls_big_io(a):
    """WRITE and READ of 4 MiB (many TLS records each way) and a pipeline of small
    requests, over TLS."""
    import os
    c = connect(a).starttls(cafile(a))
    c.go()
    data = os.urandom(4 << 20)
    c.send_request(CMD_WRITE, 1, 0, len(data), payload=data)
    assert c.reply_magic() == SIMPLE_REPLY_MAGIC and c.simple_reply(1) == 0, "WRITE failed"
    assert read_simple(c, 0, len(data)) == data, "4 MiB read back differs"
    for i in range(64):
        c.send_request(CMD_READ, 100 + i, i * 512, 512)
    seen = set()
    for _ in range(64):
        assert c.reply_magic() == SIMPLE_REPLY_MAGIC
        error, cookie = struct.unpack(">IQ", c.recv_exact(12))
        assert error == 0 and 100 <= cookie < 164 and cookie not in seen, f"reply {cookie}"
        seen.add(cookie)
        i = cookie - 100
        assert c.recv_exact(512) == data[i * 512:(i + 1) * 512], f"pipelined read {i}"
    c.disc()


def bad_record():
    """A TLS 1.2/1.3 application-data record whose 64 bytes are random: it cannot
    authenticate under the session's keys."""
    return b"\x17\x03\x03\x00\x40" + os.urandom(64)


def tls_bad_record_in_transmission(a):
    """A record that fails to authenticate, after NBD_OPT_GO and one good READ: the server
    closes the connection (rules.sh checks the log line names the TLS error)."""
    c = connect(a).starttls(cafile(a))
    c.go()
    assert read_simple(c, 0, 512) is not None, "READ before the bad record failed"
    os.write(c.s.fileno(), bad_record())  # under the TLS layer, on the socket itself
    assert c.closed_by_server(), "a bad TLS record in transmission: the connection stayed open"


def tls_bad_record_in_haggling(a):
    """The same during option haggling, right after the TLS handshake."""
    c = connect(a).starttls(cafile(a))
    os.write(c.s.fileno(), bad_record())
    assert c.closed_by_server(), "a bad TLS record in option haggling: the connection stayed open"


GROUPS = {
    "off": ["rule11_starttls_policy", "rule30_block_status_without_context"],
    "require": ["rule12_every_option_tls_reqd", "rule12_export_name_before_tls_closes",
                "rule12_abort_before_tls", "rule12_starttls_with_data_invalid",
                "rule12_second_starttls_invalid", "rule12_tls_handshake_timeout",
                "rule12_bad_ca_refused", "rule33_tls_bye", "tls_idle_transmission",
                "tls_big_io"],
    "on": ["rule13_structured_replies_forgotten", "rule13_extended_headers_forgotten",
           "rule13_renegotiated_after_tls", "selective_plain_allowed"],
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int)
    p.add_argument("--socket")
    p.add_argument("--ca", help="directory holding ca-cert.pem")
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("--cert", help="directory holding client-cert.pem and client-key.pem")
    p.add_argument("--pid", type=int, help="the server's process id (rule34_tls_drain_bye)")
    p.add_argument("--hs-timeout", type=float, default=2.0,
                   help="the server's --handshake-timeout")
    p.add_argument("checks", nargs="+", help="check names, or a group: " + ", ".join(GROUPS))
    a = p.parse_args()
    names = []
    for n in a.checks:
        names += GROUPS.get(n, [n])
    failed = 0
    for n in names:
        try:
            globals()[n](a)
            print(f"ok: {n}")
        except (AssertionError, OSError, ssl.SSLError) as e:
            print(f"FAIL: {n}: {type(e).__name__}: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
