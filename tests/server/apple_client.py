# SPDX-License-Identifier: MIT
"""apple_client.py: a client that speaks as Apple's Virtualization.framework NBD client
(VZNetworkBlockDeviceStorageDeviceAttachment) is reported to (docs/apple.md), against a
`diskgate serve` this script starts, stops with SIGTERM and starts again on the same Unix
socket and TCP port while writes are in flight.

Each of two clients (one over the Unix socket, one over TCP, at once):
  - fixed newstyle with NO_ZEROES; NBD_OPT_INFO then NBD_OPT_GO, each asking for
    NBD_INFO_BLOCK_SIZE; no structured replies (every reply is simple);
  - the first client: a TRIM of the whole device and a WRITE_ZEROES of its first 3/4, each
    one request bigger than the advertised maximum block size;
  - pipelined WRITEs (up to QD at once) with no FLUSH and no FUA, each to its own place;
  - when the connection drops (the server restarting), it connects again (INFO then GO)
    and re-sends every write it had no successful reply for. A write answered with
    NBD_ESHUTDOWN counts as not done (a server that is stopping may refuse what it read in
    its grace period); any other error fails the test;
  - the export's size, transmission flags and block sizes are the same on every connection;
  - at the end every write reads back, and the zeroed range after them reads zero.
The server runs with --verbose: its end-of-connection lines must count no FLUSH and no FUA.

Usage: apple_client.py DISKGATE ENGINE CACHE_MODE TMPDIR
Prints one line and exits 0, or raises AssertionError naming what broke.
"""
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nbdproto import (  # noqa: E402
    CMD_DISC, CMD_READ, CMD_TRIM, CMD_WRITE, CMD_WRITE_ZEROES, ESHUTDOWN, FLAG_FIXED_NEWSTYLE,
    FLAG_NO_ZEROES, INFO_BLOCK_SIZE, INFO_EXPORT, OPT_GO, OPT_INFO, REP_ACK, REP_ERR_SHUTDOWN,
    REP_INFO, SIMPLE_REPLY_MAGIC, Raw, info_payload, request_header)

MiB = 1 << 20
SIZE = 256 * MiB          # the export: a sparse file
MAX_BLOCK = 32 * MiB      # the maximum block size diskgate advertises
ZEROED = SIZE * 3 // 4    # WRITE_ZEROES covers [0, ZEROED)
WRITE_LEN = 32 * 1024
WRITES = 256              # per client: 8 MiB each, the two clients side by side
QD = 32                   # writes in flight at once per connection
RESTART_AFTER = 32        # replies each client has had before the server is stopped
DEADLINE_S = 25           # the whole run


class Lost(Exception):
    """The connection ended (EOF, reset, or a refusal while the server stops): reconnect."""


class Client(Raw):
    """Raw with a dropped connection reported as Lost, not as a failure."""
    reset_is_eof = True

    def eof(self, got, wanted):
        raise Lost(f"connection closed after {got} of {wanted} bytes")

    def close_quietly(self):
        try:
            self.s.close()
        except OSError:
            pass


class Apple:
    """One client: `addr` is a Unix socket path or a (host, port) pair; its writes go to
    [base, base + WRITES * WRITE_LEN)."""

    def __init__(self, name, addr, base, pool):
        self.name, self.addr, self.base = name, addr, base
        self.data = [struct.pack(">II", base // MiB, i) +
                     pool[(i * 4099) % MiB:(i * 4099) % MiB + WRITE_LEN - 8]
                     for i in range(WRITES)]
        self.geometry = None      # (size, flags, min, preferred, max) of the first connection
        self.connections = 0
        self.resent = 0           # writes sent again after a reconnect
        self.sent = set()         # writes sent at least once
        self.eshutdown = 0        # NBD_ESHUTDOWN replies (not done: re-sent)
        self.replies_ok = 0
        self.left_at_stop = None
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.outstanding = {}     # cookie -> write index
        self.cookie = 0

    # ---- the handshake ----
    def select_export(self, c, option):
        """NBD_OPT_INFO or NBD_OPT_GO asking for NBD_INFO_BLOCK_SIZE: returns (size, flags,
        min, preferred, max)."""
        replies = c.option_replies(option, info_payload("", [INFO_BLOCK_SIZE]))
        rtype, data = replies[-1]
        if rtype == REP_ERR_SHUTDOWN:
            raise Lost("NBD_REP_ERR_SHUTDOWN: the server is stopping")
        assert rtype == REP_ACK, f"{self.name}: option {option} failed: {rtype:#x} {data!r}"
        export = blocks = None
        for rtype, data in replies[:-1]:
            assert rtype == REP_INFO, f"{self.name}: option reply {rtype:#x} before the ACK"
            kind = struct.unpack(">H", data[:2])[0]
            if kind == INFO_EXPORT:
                export = struct.unpack(">QH", data[2:12])
            elif kind == INFO_BLOCK_SIZE:
                blocks = struct.unpack(">III", data[2:14])
        assert export is not None and blocks is not None, \
            f"{self.name}: option {option} gave no NBD_INFO_EXPORT or NBD_INFO_BLOCK_SIZE"
        return export + blocks

    def connect(self, deadline):
        """Connects (again, until `deadline`) and selects the export: INFO, then GO."""
        while True:
            c = None
            try:
                if isinstance(self.addr, str):
                    c = Client(unix=self.addr, timeout=5)
                else:
                    c = Client(tcp=self.addr, timeout=5)
                flags = c.greeting()
                assert flags & FLAG_FIXED_NEWSTYLE and flags & FLAG_NO_ZEROES, \
                    f"{self.name}: the server offers handshake flags {flags:#x}"
                c.send_client_flags(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES)
                info = self.select_export(c, OPT_INFO)
                go = self.select_export(c, OPT_GO)
                break
            except (Lost, OSError) as e:  # refused, no socket yet, reset, timed out
                if c is not None:
                    c.close_quietly()
                assert time.monotonic() < deadline, f"{self.name}: no reconnection: {e}"
                time.sleep(0.01)
        assert info == go, f"{self.name}: NBD_OPT_INFO said {info}, NBD_OPT_GO {go}"
        if self.geometry is None:
            self.geometry = go
            size, _flags, _min, _pref, maxb = go
            assert size == SIZE, f"{self.name}: export size {size}, expected {SIZE}"
            assert maxb == MAX_BLOCK, f"{self.name}: maximum block size {maxb}"
        assert go == self.geometry, \
            f"{self.name}: after a reconnect the export is {go}, it was {self.geometry}"
        self.connections += 1
        return c

    # ---- requests ----
    def request(self, c, cmd, offset, length, payload=b"", read=False):
        """One request and its simple reply; returns (error, data)."""
        self.cookie += 1
        c.send(request_header(cmd, self.cookie, offset, length) + payload)
        error, _ = c.simple_reply(self.cookie)
        return error, c.recv_exact(length) if error == 0 and read else b""

    def receiver(self, c, done, state):
        """Reads the write replies until the sender is done and nothing is outstanding, or
        the connection ends. Simple replies only: 16 bytes each."""
        try:
            while True:
                with self.lock:
                    if state["sent_all"] and not self.outstanding:
                        return
                if not select.select([c.s], [], [], 0.05)[0]:
                    continue
                magic, error, cookie = struct.unpack(">IIQ", c.recv_exact(16))
                assert magic == SIMPLE_REPLY_MAGIC, f"{self.name}: reply magic {magic:#x}"
                with self.lock:
                    assert cookie in self.outstanding, f"{self.name}: reply to cookie {cookie}"
                    i = self.outstanding.pop(cookie)
                    if error == 0:
                        done.add(i)
                        self.replies_ok += 1
                    elif error == ESHUTDOWN:
                        self.eshutdown += 1
                        state["shutdown"] = True
                    else:
                        state["error"] = f"{self.name}: WRITE {i} failed with NBD error {error}"
                    self.cond.notify_all()
        except (Lost, OSError) as e:
            with self.lock:
                state["lost"] = str(e)
                self.cond.notify_all()
        except AssertionError as e:
            with self.lock:
                state["error"] = str(e)
                self.cond.notify_all()

    def write_all(self, c, pending, done):
        """Sends the writes `pending` pipelined (QD at once) on c. Returns True when every
        one was answered, False when the connection ended or the server said it is stopping
        (then c is closed; what has no successful reply is not in `done`)."""
        state = {"sent_all": False, "lost": None, "shutdown": False, "error": None}
        rx = threading.Thread(target=self.receiver, args=(c, done, state))
        rx.start()
        try:
            for i in pending:
                with self.lock:
                    while (len(self.outstanding) >= QD and not state["lost"] and
                           not state["shutdown"] and not state["error"]):
                        self.cond.wait(1)
                    if state["lost"] or state["shutdown"] or state["error"]:
                        break
                    self.cookie += 1
                    self.outstanding[self.cookie] = i
                    cookie = self.cookie
                header = request_header(CMD_WRITE, cookie, self.base + i * WRITE_LEN, WRITE_LEN)
                self.sent.add(i)
                c.send(header + self.data[i])
        except OSError as e:  # EPIPE, reset: the server went
            with self.lock:
                state["lost"] = str(e)
        with self.lock:
            state["sent_all"] = True
            while self.outstanding and not state["lost"] and not state["error"]:
                if not self.cond.wait(10):
                    break
        if state["shutdown"] and not state["lost"]:
            try:  # told the server is stopping: leave cleanly, then reconnect
                c.send(request_header(CMD_DISC, 0))
            except OSError:
                pass
        rx.join(15)
        assert not rx.is_alive(), f"{self.name}: the reply reader did not finish"
        if state["lost"] or state["shutdown"]:
            c.close_quietly()
        assert state["error"] is None, state["error"]
        with self.lock:
            self.outstanding.clear()
            return not (state["lost"] or state["shutdown"])

    def retried(self, c, deadline, cmd, offset, length, read=False):
        """One request, again on a new connection for as long as the server is restarting
        (NBD_ESHUTDOWN, or the connection lost): returns (c, data) once it succeeded."""
        while True:
            try:
                err, data = self.request(c, cmd, offset, length, read=read)
                if err == 0:
                    return c, data
                assert err == ESHUTDOWN, \
                    f"{self.name}: request {cmd} at {offset}+{length}: NBD error {err}"
            except (Lost, OSError):
                pass
            c.close_quietly()
            c = self.connect(deadline)

    def run(self, deadline, first, zeroed, restarted, errors):
        """The client's life: (the first one) TRIM and WRITE_ZEROES, then `zeroed` is set;
        the writes, re-sent across the restart; once `restarted` is set, the read-back."""
        try:
            c = self.connect(deadline)
            if first:  # the whole device trimmed, 3/4 zeroed: single requests > MAX_BLOCK
                c, _ = self.retried(c, deadline, CMD_TRIM, 0, SIZE)
                c, _ = self.retried(c, deadline, CMD_WRITE_ZEROES, 0, ZEROED)
                zeroed.set()
            assert zeroed.wait(max(0, deadline - time.monotonic())), "no zeroing"
            done = set()
            pending = list(range(WRITES))
            while not self.write_all(c, pending, done):
                pending = [i for i in range(WRITES) if i not in done]
                self.resent += sum(1 for i in pending if i in self.sent)
                c = self.connect(deadline)
            assert restarted.wait(max(0, deadline - time.monotonic())), "no restart"
            for off in range(0, WRITES * WRITE_LEN, 8 * MiB):
                c, got = self.retried(c, deadline, CMD_READ, self.base + off, 8 * MiB, True)
                for k in range(0, 8 * MiB, WRITE_LEN):
                    i = (off + k) // WRITE_LEN
                    assert got[k:k + WRITE_LEN] == self.data[i], \
                        f"{self.name}: write {i} (offset {self.base + off + k}) does not read back"
            if first:  # between the writes and the last quarter (trimmed): zeroes
                for off in (2 * WRITES * WRITE_LEN, ZEROED // 2, ZEROED - MiB):
                    c, got = self.retried(c, deadline, CMD_READ, off, MiB, True)
                    assert got == bytes(MiB), f"{self.name}: the zeroed range at {off} is not zero"
            c.send(request_header(CMD_DISC, 0))
            c.close_quietly()
        except BaseException as e:  # noqa: B036 - reported by the main thread
            errors.append(f"{type(e).__name__}: {e}")


class Server:
    def __init__(self, diskgate, engine, cache, tmp, img):
        self.sock = os.path.join(tmp, "apple.sock")
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.log = os.path.join(tmp, f"apple-{engine}-{cache}.log")
        self.argv = [diskgate, "serve", "--socket", self.sock, "--listen",
                     f"127.0.0.1:{self.port}", "--engine", engine, "--cache", cache,
                     "--verbose", img]
        self.proc = None
        self.starts = 0

    def start(self):
        start_at = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=out)
        self.starts += 1
        for _ in range(400):
            with open(self.log, "rb") as f:
                f.seek(start_at)
                if f.read().count(b"listening on") >= 2:
                    return
            assert self.proc.poll() is None, f"diskgate exited at start: {self.tail()}"
            time.sleep(0.01)
        raise AssertionError(f"diskgate did not become ready: {self.tail()}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(20)
        assert rc == 0, f"diskgate exited {rc} after SIGTERM: {self.tail()}"

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def tail(self):
        return " | ".join(self.text().splitlines()[-8:])

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def main():
    diskgate, engine, cache, tmp = sys.argv[1:5]
    img = os.path.join(tmp, f"apple-{engine}-{cache}.img")
    with open(img, "wb") as f:
        f.truncate(SIZE)
    pool = os.urandom(2 * MiB)
    srv = Server(diskgate, engine, cache, tmp, img)
    what = f"--engine {engine} --cache {cache}"
    deadline = time.monotonic() + DEADLINE_S
    try:
        srv.start()
        clients = [Apple("unix", srv.sock, 0, pool),
                   Apple("tcp", ("127.0.0.1", srv.port), WRITES * WRITE_LEN, pool)]
        # the Unix client trims and zeroes, then both write at once; each reads back only
        # after the restart (one done writing early meets the restart idle)
        errors = []
        zeroed, restarted = threading.Event(), threading.Event()
        threads = [threading.Thread(target=cl.run, args=(deadline, cl is clients[0], zeroed,
                                                         restarted, errors))
                   for cl in clients]
        for t in threads:
            t.start()
        # the restart, once both have had RESTART_AFTER replies: writes are in flight
        while any(cl.replies_ok < RESTART_AFTER for cl in clients) and not errors:
            assert time.monotonic() < deadline, f"{what}: no progress before the restart"
            time.sleep(0.001)
        for cl in clients:  # writes still to do: the restart cuts into the stream
            cl.left_at_stop = WRITES - cl.replies_ok
        if not errors:
            srv.stop()
            srv.start()
        restarted.set()
        for t in threads:
            t.join(max(1, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in threads), f"{what}: clients still running: " \
            f"{srv.tail()}"
        assert not errors, f"{what}: {'; '.join(errors)} | {srv.tail()}"
        for cl in clients:
            assert cl.connections >= 2, f"{what}: {cl.name}: never reconnected"
        # the restart cut into the stream of writes (of one client at least, under load)
        assert any(cl.left_at_stop > 0 for cl in clients), \
            f"{what}: every write was done before the server was stopped"
        assert sum(cl.resent for cl in clients) > 0, \
            f"{what}: no write was left without a reply by the restart"
        srv.stop()
    finally:
        srv.kill()
    # every connection's end line (--verbose): no FLUSH, no FUA
    ends = [ln for ln in srv.text().splitlines() if ": connection closed: " in ln]
    want = sum(cl.connections for cl in clients)
    assert len(ends) >= want, f"{what}: {len(ends)} end lines for {want} connections"
    for ln in ends:
        assert " flushes=0 fua=0 " in ln, f"{what}: the client sent FLUSH or FUA: {ln}"
    resent = sum(cl.resent for cl in clients)
    eshut = sum(cl.eshutdown for cl in clients)
    print(f"{what}: {2 * WRITES} writes read back across a restart, Unix socket and TCP "
          f"({resent} re-sent, {eshut} answered NBD_ESHUTDOWN)")


if __name__ == "__main__":
    main()
