"""nbdraw.py: a tiny raw-socket NBD client for what libnbd will not send (tests/interop).

Newstyle-fixed handshake with any client flags, NBD_OPT_EXPORT_NAME / NBD_OPT_GO, and
requests with any type, flags, cookie, offset, length and payload. No structured replies:
every reply is a simple reply (16 bytes, then the READ payload only on success).
Every failure raises AssertionError with a message, so a test prints one line and fails.
"""
import socket
import struct

NBDMAGIC, IHAVEOPT, REPLY_MAGIC = 0x4E42444D41474943, 0x49484156454F5054, 0x3E889045565A9
REQUEST_MAGIC, SIMPLE_REPLY_MAGIC = 0x25609513, 0x67446698
FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2                        # handshake flags
OPT_EXPORT_NAME, OPT_GO, OPT_ABORT = 1, 7, 2
REP_ACK, REP_INFO = 1, 3
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WRITE_ZEROES = 0, 1, 2, 3, 4, 6
CMD_FLAG_FUA, CMD_FLAG_NO_HOLE = 1, 2
TFLAG_HAS_FLAGS, TFLAG_READ_ONLY = 1, 2
EPERM, EIO, ENOMEM, EINVAL, ENOSPC = 1, 5, 12, 22, 28              # NBD error values


class Raw:
    def __init__(self, unix=None, tcp=None, timeout=10.0):
        if unix is not None:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.connect(unix)
        else:
            self.s = socket.create_connection(tcp)
        self.s.settimeout(timeout)
        self.size = self.tflags = None

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            assert chunk, f"server closed the connection after {len(buf)} of {n} bytes"
            buf += chunk
        return buf

    def pending(self, wait=0.3):
        """Bytes the server sent that nobody asked for (waits `wait` s; b'' if none)."""
        self.s.settimeout(wait)
        try:
            return self.s.recv(65536)
        except socket.timeout:
            return b""
        finally:
            self.s.settimeout(10.0)

    def closed_by_server(self, wait=5.0):
        """True if the server closes the connection (EOF or reset) within `wait` s."""
        self.s.settimeout(wait)
        try:
            while True:
                data = self.s.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    # ---- handshake ----
    def greeting(self):
        """Reads NBDMAGIC, IHAVEOPT and the 16-bit handshake flags; returns the flags."""
        magic, opt, flags = struct.unpack(">QQH", self.recv_exact(18))
        assert magic == NBDMAGIC and opt == IHAVEOPT, f"bad greeting {magic:#x} {opt:#x}"
        return flags

    def send_client_flags(self, flags):
        self.s.sendall(struct.pack(">I", flags))

    def send_option(self, option, data=b""):
        self.s.sendall(struct.pack(">QII", IHAVEOPT, option, len(data)) + data)

    def option_reply(self):
        magic, opt, rtype, length = struct.unpack(">QIII", self.recv_exact(20))
        assert magic == REPLY_MAGIC, f"bad option reply magic {magic:#x}"
        return opt, rtype, self.recv_exact(length)

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
        n = name.encode()
        self.send_option(OPT_GO, struct.pack(">I", len(n)) + n + struct.pack(">H", 0))
        while True:
            opt, rtype, data = self.option_reply()
            assert opt == OPT_GO, f"option reply for option {opt}, expected {OPT_GO}"
            if rtype == REP_ACK:
                break
            assert rtype == REP_INFO, f"NBD_OPT_GO failed: reply type {rtype:#x} {data!r}"
            if struct.unpack(">H", data[:2])[0] == 0:  # NBD_INFO_EXPORT
                self.size, self.tflags = struct.unpack(">QH", data[2:12])
        assert self.size is not None, "no NBD_INFO_EXPORT before NBD_REP_ACK"
        return self.size, self.tflags

    @classmethod
    def negotiated(cls, unix=None, tcp=None, name=""):
        """A connection in transmission phase (fixed newstyle + NO_ZEROES, NBD_OPT_GO)."""
        c = cls(unix=unix, tcp=tcp)
        flags = c.greeting()
        c.send_client_flags(FLAG_FIXED_NEWSTYLE | (flags & FLAG_NO_ZEROES))
        c.go(name)
        return c

    # ---- transmission ----
    def send_request(self, cmd, cookie, offset=0, length=0, flags=0, payload=b""):
        self.s.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, flags, cmd, cookie, offset,
                                   length) + payload)

    def simple_reply(self):
        """Returns (error, cookie) of the next simple reply."""
        magic, error, cookie = struct.unpack(">IIQ", self.recv_exact(16))
        assert magic == SIMPLE_REPLY_MAGIC, f"reply magic {magic:#x}, expected a simple reply"
        return error, cookie

    def request(self, cmd, cookie, offset=0, length=0, flags=0, payload=b"", read_len=None):
        """Sends one request and waits for its reply. Returns (error, data): data is read only
        when error == 0 and the command is READ (read_len bytes, default `length`)."""
        self.send_request(cmd, cookie, offset, length, flags, payload)
        error, got = self.simple_reply()
        assert got == cookie, f"reply cookie {got:#x}, expected {cookie:#x}"
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
