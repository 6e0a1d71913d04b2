"""rawnbd.py: a tiny raw-socket NBD client for regression tests (fixed newstyle, NBD_OPT_GO,
optional structured replies / extended headers). Only what the tests here need; the framing
is tests/lib/nbdproto.py's."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nbdproto import (EXT_REPLY_MAGIC, FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES,  # noqa: E402
                      OPT_EXTENDED_HEADERS, OPT_GO, REP_ACK, SIMPLE_REPLY_MAGIC, Conn,
                      info_payload, request_header)  # noqa: F401 (request_header: regress.py)


class Client(Conn):
    def __init__(self, sock_path):
        super().__init__(unix=sock_path, timeout=10)
        self.greeting()
        self.send_client_flags(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES)
        self.ext = False

    def eof(self, got, wanted):
        raise EOFError("server closed the connection")

    def recv(self, n):
        return self.recv_exact(n)

    def option(self, opt, data=b""):
        return self.option_replies(opt, data)

    def go(self, name=b""):
        return self.option(OPT_GO, info_payload(name))

    def extended_headers(self):
        r = self.option(OPT_EXTENDED_HEADERS)
        assert r[-1][0] == REP_ACK, "extended headers refused"
        self.ext = True

    def request(self, cmd, offset, length, flags=0, cookie=1, payload=b""):
        self.send_request(cmd, cookie, offset, length, flags, payload, ext=self.ext)

    def reply(self, read_length=0):
        """Returns (error, cookie, data) of a simple reply, or of one extended chunk."""
        if self.ext:
            magic, flags, rtype, cookie, offset, length = struct.unpack(">IHHQQQ", self.recv(32))
            assert magic == EXT_REPLY_MAGIC, hex(magic)
            body = self.recv(length)
            if rtype & 0x8000:
                return struct.unpack(">I", body[:4])[0], cookie, b""
            return 0, cookie, body[8:] if rtype == 1 else b""
        magic, error, cookie = struct.unpack(">IIQ", self.recv(16))
        assert magic == SIMPLE_REPLY_MAGIC, hex(magic)
        data = self.recv(read_length) if error == 0 and read_length else b""
        return error, cookie, data
