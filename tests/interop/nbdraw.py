"""nbdraw.py: a tiny raw-socket NBD client for what libnbd will not send (tests/interop).

Newstyle-fixed handshake with any client flags, NBD_OPT_EXPORT_NAME / NBD_OPT_GO, and
requests with any type, flags, cookie, offset, length and payload. No structured replies:
every reply is a simple reply (16 bytes, then the READ payload only on success).
Every failure raises AssertionError with a message, so a test prints one line and fails.
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nbdproto import *  # noqa: E402,F401,F403  (re-exported: the case scripts `from nbdraw import *`)
from nbdproto import Conn  # noqa: E402

TFLAG_HAS_FLAGS, TFLAG_READ_ONLY = TF_HAS_FLAGS, TF_READ_ONLY


class Raw(Conn):
    def __init__(self, unix=None, tcp=None, timeout=10.0):
        super().__init__(unix=unix, tcp=tcp, timeout=timeout)
        self.size = self.tflags = None

    def pending(self, wait=0.3):
        """Bytes the server sent that nobody asked for (waits `wait` s; b'' if none)."""
        self.s.settimeout(wait)
        try:
            return self.s.recv(65536)
        except socket.timeout:
            return b""
        finally:
            self.s.settimeout(self.timeout)

    # ---- handshake (greeting, send_client_flags, send_option: nbdproto.Conn) ----
    def option_reply(self):
        """(option, type, data) of the next option reply."""
        return self.recv_option_reply()

    def export_name(self, name, no_zeroes):
        """NBD_OPT_EXPORT_NAME: reads exactly 10 (+124 zero) bytes; no more may follow."""
        self.send_option(OPT_EXPORT_NAME, name.encode())
        self.size, self.tflags = struct.unpack(">QH", self.recv_exact(10))
        if not no_zeroes:
            pad = self.recv_exact(124)
            assert pad == bytes(124), "the 124 bytes after size+flags are not all zero"
        return self.size, self.tflags

    def go(self, name=""):
        """NBD_OPT_GO (no info requests): reads REP_INFO(s) up to REP_ACK."""
        self.send_option(OPT_GO, info_payload(name))
        while True:
            opt, rtype, data = self.recv_option_reply()
            assert opt == OPT_GO, f"option reply for option {opt}, expected {OPT_GO}"
            if rtype == REP_ACK:
                break
            assert rtype == REP_INFO, f"NBD_OPT_GO failed: reply type {rtype:#x} {data!r}"
            size, tflags = export_info([(rtype, data)])
            if size is not None:
                self.size, self.tflags = size, tflags
        assert self.size is not None, "no NBD_INFO_EXPORT before NBD_REP_ACK"
        return self.size, self.tflags

    @classmethod
    def haggling(cls, unix=None, tcp=None):
        """A connection in option haggling: the greeting read, fixed newstyle (+ NO_ZEROES
        when the server offers it) sent."""
        c = cls(unix=unix, tcp=tcp)
        flags = c.greeting()
        c.send_client_flags(FLAG_FIXED_NEWSTYLE | (flags & FLAG_NO_ZEROES))
        return c

    @classmethod
    def negotiated(cls, unix=None, tcp=None, name=""):
        """A connection in transmission phase (haggling, then NBD_OPT_GO)."""
        c = cls.haggling(unix=unix, tcp=tcp)
        c.go(name)
        return c

    # ---- transmission (send_request, simple_reply: nbdproto.Conn) ----
    def request(self, cmd, cookie, offset=0, length=0, flags=0, payload=b"", read_len=None):
        """Sends one request and waits for its reply. Returns (error, data): data is read only
        when error == 0 and the command is READ (read_len bytes, default `length`)."""
        self.send_request(cmd, cookie, offset, length, flags, payload)
        error, _ = self.simple_reply(cookie)
        data = b""
        if error == 0 and cmd == CMD_READ:
            data = self.recv_exact(length if read_len is None else read_len)
        return error, data

    def read(self, offset, length, cookie=0x5EAD):
        error, data = self.request(CMD_READ, cookie, offset, length)
        assert error == 0, f"READ {offset}+{length} failed with NBD error {error}"
        return data

    def close(self):
        try:
            self.send_request(CMD_DISC, 0)
        except OSError:
            pass
        self.s.close()
