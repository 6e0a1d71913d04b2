# SPDX-License-Identifier: MIT
"""edge_clients.py: clients at the edges of the protocol, one per check of tests/server
(write_zeroes_sector_edges.sh, ext_write_without_payload_len.sh, cache_zero_length.sh,
unknown_name_escaped.sh, non_reading_client.sh, cut_writes_shutdown.sh); each docstring
states what the server must do. Usage: edge_clients.py CHECK SOCKET [ARGS...]; exits
non-zero with one line on failure. Uses Debian's python3 with python3-libnbd."""
import os
import sys
import time

import nbd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nbdproto import OPT_GO, Raw, info_payload, request_header  # noqa: E402


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def connect(sock):
    h = nbd.NBD()
    h.set_strict_mode(0)
    h.connect_uri("nbd+unix:///?socket=" + sock)
    return h


def zero_edges(sock, sector):
    """WRITE_ZEROES ranges that cross one sector boundary with no whole sector inside zero
    exactly their bytes on block devices, and the server stays up."""
    sector = int(sector)
    h = connect(sock)
    size = h.get_size()
    h.pwrite(b"\x5a" * (4 * sector), 0)
    cases = [(sector - 12, 24), (sector // 2, sector), (0, 1), (sector - 1, 2),
             (sector + 7, sector), (2 * sector - 100, 2 * sector + 300 - 2 * sector + 100)]
    for off, length in cases:
        h.pwrite(b"\x5a" * (4 * sector), 0)
        h.zero(length, off)
        got = h.pread(4 * sector, 0)
        want = bytearray(b"\x5a" * (4 * sector))
        want[off:off + length] = bytes(length)
        if got != bytes(want):
            fail("WRITE_ZEROES offset %d length %d on %d-byte sectors: wrong data" % (off, length, sector))
    h.trim(24, sector - 12)  # a TRIM inside partial sectors is advisory: must succeed
    if h.get_size() != size:
        fail("size changed")
    h.shutdown()


def ext_write_without_flag(sock):
    """Extended headers: a WRITE without NBD_CMD_FLAG_PAYLOAD_LEN is refused with EINVAL and
    its data is skipped, never parsed as requests (here: WRITE_ZEROES headers)."""
    c = Raw.haggling(unix=sock)
    c.extended_headers()
    c.go()
    c.send_request(1, 1, 0, 4096, flags=0x20, payload=b"D" * 4096)
    if c.reply()[0] != 0:
        fail("setup write failed")
    evil = request_header(6, 0xBAD, 0, 4096, ext=True)  # a WRITE_ZEROES header
    c.send_request(1, 2, 8192, 512, flags=0, payload=(evil * 16)[:512])
    err, cookie, _ = c.reply()
    if cookie != 2 or err != 22:
        fail("WRITE without PAYLOAD_LEN: cookie %d error %d, expected cookie 2 EINVAL" % (cookie, err))
    c.send_request(0, 3, 0, 16)
    err, cookie, data = c.reply()
    if cookie == 0xBAD:
        fail("the server executed the WRITE's data as a request")
    if cookie != 3 or err != 0 or data != b"D" * 16:
        fail("after the refused WRITE: cookie %#x error %d data %r" % (cookie, err, data))


def cache_zero_length(sock):
    """CACHE with length 0 succeeds, as every other zero-length command does."""
    h = connect(sock)
    if h.can_cache():
        h.cache(0, 0)
    h.shutdown()


def unknown_name_escaped(sock, log):
    """Export names go into the log escaped, never as raw bytes (a newline could forge a log
    line)."""
    c = Raw.haggling(unix=sock)
    r = c.option_replies(OPT_GO, info_payload(b"bad\nname\xff"))
    if r[-1][0] != 0x80000006:
        fail("unknown export: reply %#x, expected NBD_REP_ERR_UNKNOWN" % r[-1][0])
    time.sleep(0.2)
    text = open(log, "rb").read()
    if b"bad\nname" in text or b"\xff" in text:
        fail("raw export name bytes in the log")
    if b"bad\\x0aname\\xff" not in text:
        fail("escaped export name missing from the log")


def slow_reader(sock, pid):
    """A client that never reads its replies: the server's memory stays bounded and other
    clients are served promptly."""
    pid = int(pid)
    bad = Raw.haggling(unix=sock)
    bad.go()
    bad.s.setblocking(False)
    sent = 0
    try:
        for i in range(128):
            hdr = request_header(0, i, 0, 4 << 20)  # READ 4 MiB
            bad.s.send(hdr)
            sent += 1
    except BlockingIOError:
        pass
    time.sleep(1.5)
    h = connect(sock)
    t0 = time.time()
    for i in range(20):
        h.pread(4096, i * 4096)
    took = time.time() - t0
    rss_kib = int([l for l in open("/proc/%d/status" % pid) if l.startswith("VmRSS")][0].split()[1])
    if took > 3.0:
        fail("a well-behaved client took %.1f s for 20 reads beside a non-reading one" % took)
    if rss_kib > 200 * 1024:
        fail("server RSS %d MiB with one non-reading client (the budget is 64 MiB)" % (rss_kib // 1024))
    h.shutdown()
    bad.s.setblocking(True)
    return bad  # kept open by the caller's process until SIGTERM


def cut_writes(sock):
    """WRITEs whose payload is cut short by peers that also stopped reading their replies:
    every such connection ends, even when the failed send and the last payload bytes
    complete in one batch (so a half-received WRITE is never left counted in flight)."""
    import random
    import socket
    import struct
    import threading

    def one(seed):
        rnd = random.Random(seed)
        for it in range(40):
            c = Raw.haggling(unix=sock)
            c.go()
            for k in range(rnd.randrange(5)):
                ln = rnd.choice([4096, 1 << 20, 65536])
                c.send_request(1, k, 0, ln, payload=os.urandom(ln))
                c.send_request(0, 100 + k, 0, ln)
            ln = rnd.choice([4096, 1 << 20, 300000, 8 << 20])
            c.s.sendall(request_header(1, 99, 4096, ln) + os.urandom(rnd.randrange(ln)))
            if rnd.random() < 0.5:
                c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.s.close()
    ts = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    check = sys.argv[1]
    if check == "slow_reader":
        keep = slow_reader(*sys.argv[2:])
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.read()  # hold the non-reading connection until the test ends
    else:
        globals()[check](*sys.argv[2:])
