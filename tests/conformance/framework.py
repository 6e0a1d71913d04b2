# SPDX-License-Identifier: MIT
"""framework.py: servers, the test registry and helpers of the conformance suite.

A test is a function registered with @rule(N, ...) (a rule of docs/spec-rules.md;
its name must start with rNN_) or @case("C02") (a field case of docs/cases.md; its name
starts with c02_). It gets a Ctx, raises AssertionError (or anything) to fail, and may
return a short note. Tests registered with counts=False are stand-ins (for instance the
NOTLS checks that stand in for the TLS rules while diskgate has no TLS): they must pass,
but do not make their rule count as covered.
"""
import ctypes
import mmap
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse

import nbdwire as W

TESTS = []


class TestDef:
    def __init__(self, fn, rules, case, counts):
        self.fn, self.rules, self.case, self.counts = fn, rules, case, counts
        self.name = fn.__name__


def rule(*numbers, counts=True):
    def deco(fn):
        want = f"r{numbers[0]:02d}_"
        assert fn.__name__.startswith(want), f"{fn.__name__} must start with {want}"
        TESTS.append(TestDef(fn, tuple(numbers), None, counts))
        return fn
    return deco


def case(cid):
    def deco(fn):
        want = cid.lower() + "_"
        assert fn.__name__.startswith(want), f"{fn.__name__} must start with {want}"
        TESTS.append(TestDef(fn, (), cid.upper(), True))
        return fn
    return deco


class NotApplicable(Exception):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


MiB = 1 << 20
KiB = 1 << 10


class Server:
    """One `diskgate serve` process with a Unix socket and a TCP listener on 127.0.0.1."""

    def __init__(self, ctx, image, args=(), export="disk", preexec=None, start=True,
                 extra=True):
        self.ctx, self.image, self.args, self.export = ctx, image, list(args), export
        self.extra = ctx.extra_args if extra else []
        self.preexec = preexec
        self.proc = None
        self.exit_checked = False
        if start:
            self.start()

    def start(self):
        n = self.ctx.counter()
        self.sock = os.path.join(self.ctx.dir, f"dg{n}.sock")
        self.port = free_port()
        self.logpath = os.path.join(self.ctx.dir, f"dg{n}.log")
        pidf = os.path.join(self.ctx.dir, f"dg{n}.pid")
        cmd = [self.ctx.diskgate, "serve", "--socket", self.sock,
               "--listen", f"127.0.0.1:{self.port}", "--pid-file", pidf,
               "--engine", self.ctx.engine]
        if self.export is not None:
            cmd += ["--export", self.export]
        cmd += self.args + self.extra + [self.image]
        self.log = open(self.logpath, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=self.preexec)
        self.ctx.servers.append(self)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(pidf) and os.path.getsize(pidf) > 0:
                return self
            if self.proc.poll() is not None:
                self.exit_checked = True
                raise AssertionError(f"diskgate exited at start ({self.proc.returncode}): "
                                     f"{self.log_tail()}")
            time.sleep(0.02)
        raise AssertionError("diskgate did not become ready in 30 s")

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        try:
            with open(self.logpath, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n=15):
        return " | ".join(self.log_text().strip().splitlines()[-n:])

    def uri(self, tcp=False):
        name = urllib.parse.quote(self.export or "", safe="")
        if tcp:
            return f"nbd://127.0.0.1:{self.port}/{name}"
        return f"nbd+unix:///{name}?socket={self.sock}"

    def addr(self, tcp=False):
        return {"tcp": ("127.0.0.1", self.port)} if tcp else {"unix": self.sock}

    def wire(self, tcp=False, timeout=10.0):
        return W.Wire(timeout=timeout, **self.addr(tcp))

    def connect(self, tcp=False, name=None, **kw):
        """A raw connection in transmission phase (see Wire.negotiate)."""
        w = self.wire(tcp)
        return w.negotiate(self.export if name is None else name, **kw)

    def libnbd(self, sr=True, strict=None, opt_mode=False, meta=(), tcp=False):
        import nbd
        h = nbd.NBD()
        h.set_request_structured_replies(sr)
        if strict is not None:
            h.set_strict_mode(strict)
        if opt_mode:
            h.set_opt_mode(True)
        for m in meta:
            h.add_meta_context(m)
        h.connect_uri(self.uri(tcp))
        return h

    def fd_count(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def stop(self, sig=signal.SIGTERM, timeout=30, expect_rc=0):
        """Stops the server and checks its exit status (expect_rc None: any)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"diskgate did not exit within {timeout} s after "
                                 f"{signal.Signals(sig).name}")
        finally:
            self.exit_checked = True
            self.log.close()
        if expect_rc is not None and rc != expect_rc:
            raise AssertionError(f"diskgate exited {rc} (expected {expect_rc}): "
                                 f"{self.log_tail()}")
        return rc

    def wait_exit(self, timeout=30, expect_rc=0):
        """Waits for an exit already under way (a signal was sent) and checks its status."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.exit_checked = True
            raise AssertionError(f"diskgate still running {timeout} s after the signal: "
                                 f"{self.log_tail()}")
        self.exit_checked = True
        self.log.close()
        if expect_rc is not None and rc != expect_rc:
            raise AssertionError(f"diskgate exited {rc} (expected {expect_rc}): "
                                 f"{self.log_tail()}")
        return rc

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.exit_checked = True


# The shared read-write image (64 MiB): its first 8 MiB have a fixed layout that no test
# writes to; tests that write take a private range from Ctx.scratch().
RW_SIZE = 64 * MiB
LAYOUT = [(0, 1 * MiB, "data"), (1 * MiB, 1 * MiB, "hole"), (2 * MiB, 1 * MiB, "data"),
          (3 * MiB, 5 * MiB, "hole")]
SCRATCH_START = 8 * MiB
RO_SIZE = 4 * MiB


class Ctx:
    def __init__(self, diskgate, engine, srcdir):
        self.diskgate, self.engine, self.srcdir = diskgate, engine, srcdir
        self.dir = tempfile.mkdtemp(prefix="dgconf.", dir="/var/tmp" if
                                    os.path.isdir("/var/tmp") else None)
        self.servers = []
        self._n = 0
        self._shared = {}
        self._scratch = SCRATCH_START
        self.rng = random.Random(0xD15C)
        self.cleanups = []
        # extra `serve` options for every server (e.g. "--cache direct"): the suite can be
        # run against other configurations
        self.extra_args = os.environ.get("CONFORMANCE_SERVER_ARGS", "").split()

    def counter(self):
        self._n += 1
        return self._n

    def path(self, name):
        return os.path.join(self.dir, name)

    def make_image(self, name, size, layout=(), fill=None):
        """A sparse file of `size` bytes; layout: (offset, length, "data") ranges get random
        bytes (or `fill`)."""
        p = self.path(name)
        with open(p, "wb") as f:
            f.truncate(size)
            for off, length, kind in layout:
                if kind == "data":
                    f.seek(off)
                    f.write(fill(off, length) if fill else os.urandom(length))
        return p

    def shared(self, kind):
        """Shared servers: "rw" (64 MiB, LAYOUT) and "ro" (--read-only, 4 MiB random)."""
        s = self._shared.get(kind)
        if s is not None and s.alive():
            return s
        if kind == "rw":
            img = self.make_image(f"rw{self.counter()}.img", RW_SIZE, LAYOUT)
            s = Server(self, img)
        elif kind == "ro":
            img = self.make_image(f"ro{self.counter()}.img", RO_SIZE, [(0, RO_SIZE, "data")])
            s = Server(self, img, ["--read-only"])
        else:
            raise KeyError(kind)
        self._shared[kind] = s
        return s

    def shared_alive(self):
        """Names of shared servers that died (and forgets them)."""
        dead = []
        for k, s in list(self._shared.items()):
            if not s.alive():
                dead.append((k, s))
                del self._shared[k]
        return dead

    def scratch(self, length, align=64 * KiB):
        """A range of the shared rw image that only the caller uses."""
        off = (self._scratch + align - 1) // align * align
        if off + length > RW_SIZE:
            off = SCRATCH_START  # wrap: ranges are reused, tests write before they read
        self._scratch = off + length
        return off

    def file_bytes(self, server, offset, length):
        with open(server.image, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def cleanup(self):
        problems = []
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                problems.append(f"cleanup: {e}")
        for s in self.servers:
            if s.exit_checked:
                continue
            try:
                if not s.alive():
                    problems.append(f"a diskgate server died during the suite "
                                    f"(exit {s.proc.returncode}): {s.log_tail()}")
                    s.exit_checked = True
                else:
                    s.stop()
            except AssertionError as e:
                problems.append(str(e))
        shutil.rmtree(self.dir, ignore_errors=True)
        return problems


# ---- helpers shared by tests ----
def expect_error(rep, want, what):
    """A reply must have failed with `want` (an NBD error or a tuple of them)."""
    want = want if isinstance(want, tuple) else (want,)
    names = "/".join(W.err_name(w) for w in want)
    assert rep.done, f"{what}: no complete reply"
    assert rep.error in want, f"{what}: got {W.err_name(rep.error)}, expected {names}"


def expect_ok(rep, what):
    assert rep.done and rep.error == 0, \
        f"{what}: failed with {W.err_name(rep.error)} {[e[2] for e in rep.errors]}"


def libnbd_errno(e):
    import errno as E
    return e.errno if isinstance(e.errno, str) else E.errorcode.get(e.errno, str(e.errno))


def libnbd_expect_error(want, what, fn, *args, **kw):
    """fn (a libnbd call) must fail with a server error reply of errno `want` (names)."""
    import nbd
    want = want if isinstance(want, tuple) else (want,)
    try:
        fn(*args, **kw)
    except nbd.Error as e:
        got = libnbd_errno(e)
        assert "command failed" in (e.string or ""), \
            f"{what}: refused by libnbd itself, not by the server: {e.string}"
        assert got in want, f"{what}: failed with {got} ({e.string}), expected {'/'.join(want)}"
        return
    raise AssertionError(f"{what}: succeeded, expected {'/'.join(want)}")


def page_flags(path, offset, length):
    """Page-cache state of a file range, from /proc/self/pagemap and /proc/kpageflags:
    returns (dirty_pages, writeback_pages, mapped_pages) among the pages of the range
    present in the page cache. Needs root (CAP_SYS_ADMIN for page frame numbers) and a disk
    file system (tmpfs pages are never clean)."""
    fstype = subprocess.run(["stat", "-f", "-c", "%T", path], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    if fstype in ("tmpfs", "ramfs"):
        raise AssertionError(f"{path} is on {fstype}: page-cache durability checks need a "
                             "disk file system")
    page = 4096
    start = offset // page * page
    end = (offset + length + page - 1) // page * page
    fd = os.open(path, os.O_RDWR)
    try:
        mm = mmap.mmap(fd, end - start, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                       offset=start)
    finally:
        os.close(fd)
    try:
        buf = (ctypes.c_char * (end - start)).from_buffer(mm)
        addr = ctypes.addressof(buf)
        for i in range(0, end - start, page):
            _ = mm[i]                                  # a read fault maps the cached page
        dirty = wb = present = 0
        with open("/proc/self/pagemap", "rb") as pm, open("/proc/kpageflags", "rb") as kf:
            for i in range(0, end - start, page):
                pm.seek((addr + i) // page * 8)
                entry = struct.unpack("<Q", pm.read(8))[0]
                if not entry >> 63:
                    continue
                pfn = entry & ((1 << 55) - 1)
                if pfn == 0:
                    raise AssertionError("pagemap gives no page frame numbers (needs "
                                         "CAP_SYS_ADMIN)")
                kf.seek(pfn * 8)
                fl = struct.unpack("<Q", kf.read(8))[0]
                present += 1
                dirty += (fl >> 4) & 1                 # KPF_DIRTY
                wb += (fl >> 8) & 1                    # KPF_WRITEBACK
        del buf
        return dirty, wb, present
    finally:
        mm.close()


def tool(name):
    p = shutil.which(name)
    if p is None:
        for d in ("/usr/sbin", "/sbin", "/usr/bin"):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
    return p


def run(cmd, check=True, timeout=120, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                       **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}: "
                             f"{r.stdout.decode(errors='replace')[-500:]}")
    return r.stdout.decode(errors="replace")
