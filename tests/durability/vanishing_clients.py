# SPDX-License-Identifier: MIT
"""vanishing_clients.py: C01, clients that vanish at every point of a session
(tests/durability/client_vanishes.sh).

  vanishing_clients.py UNIX_SOCKET SERVER_PID CYCLES

One session's client bytes: the client flags, NBD_OPT_GO, then READ 4 KiB, READ 1 MiB,
WRITE 4 KiB (+ payload), FLUSH, WRITE 64 KiB with FUA (+ payload), READ 4 KiB, NBD_CMD_DISC.
Each cycle opens a connection, sends a prefix of that stream (cut at every byte of the
headers and options, every 512th byte of the payloads), sometimes reads what the server
sends, and closes: with FIN or with RST, at once or after a moment. So clients vanish during
option haggling, inside request headers (10 of 28 bytes, ...), inside WRITE payloads, with
READs (a large one) and WRITEs in flight, with no NBD_CMD_DISC. Meanwhile a well-behaved
libnbd connection keeps writing and reading, and must never notice.

At the end: the server process is alive; its open fds and threads come back to what they
were after the first well-behaved connection (no fd, socket or thread leak); a new client
works. Prints one summary line; exit status 1 on a violation.
"""
import os
import random
import socket
import struct
import sys
import time

import nbd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from nbdproto import (CMD_DISC, CMD_FLAG_FUA, CMD_FLUSH, CMD_READ,  # noqa: E402
                      CMD_WRITE, FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES, OPT_GO, info_payload,
                      option_header)
from nbdproto import request_header as request  # noqa: E402


def session():
    """The client's byte stream and the cut points to try."""
    out = bytearray()
    cuts = set()

    def add(data, step=1):
        start = len(out)
        out.extend(data)
        cuts.update(range(start, len(out), step))

    add(struct.pack(">I", FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
    go = info_payload("")  # empty name, no info requests
    add(option_header(OPT_GO, len(go)) + go)
    add(request(CMD_READ, 1, 0, 4096))
    add(request(CMD_READ, 2, 0, 1 << 20))
    add(request(CMD_WRITE, 3, 8192, 4096))
    add(os.urandom(4096), 512)
    add(request(CMD_FLUSH, 4, 0, 0))
    add(request(CMD_WRITE, 5, 65536, 65536, CMD_FLAG_FUA))
    add(os.urandom(65536), 4096)
    add(request(CMD_READ, 6, 0, 4096))
    add(request(CMD_DISC, 7, 0, 0))
    cuts.add(len(out))
    return bytes(out), sorted(cuts)


def census(pid):
    """Open fds and threads of the server; io_uring's kernel workers (iou-wrk-*, made and
    kept by the kernel on demand) are not the server's threads and are not counted."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{t}/comm").read().strip()
        except OSError:
            continue
        threads += not name.startswith("iou-")
    return fds, threads


def vanish(path, stream, cut, rnd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    if rnd.random() < 0.5:
        s.recv(18)  # the greeting, sometimes
    s.sendall(stream[:cut])
    style = rnd.random()
    if style < 0.3:
        time.sleep(0.002)
    elif style < 0.5:
        s.settimeout(0.01)  # read a little of whatever came back
        try:
            s.recv(4096)
        except OSError:
            pass
    if rnd.random() < 0.5:  # RST instead of FIN
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def main():
    path, pid, cycles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(int(os.environ.get("DG_TEST_SEED", "1")))
    stream, cuts = session()
    uri = f"nbd+unix:///?socket={path}"
    good = nbd.NBD()
    good.connect_uri(uri)
    good.pwrite(b"\xaa" * 4096, 1 << 20)
    assert good.pread(4096, 1 << 20) == b"\xaa" * 4096
    time.sleep(0.2)
    base = census(pid)
    order = list(cuts)
    for i in range(cycles):
        if i % len(order) == 0:
            rnd.shuffle(order)
        vanish(path, stream, order[i % len(order)], rnd)
        if i % 25 == 0:  # the well-behaved client never notices
            data = bytes([i % 251]) * 4096
            good.pwrite(data, (2 << 20) + 4096 * (i % 64))
            assert good.pread(4096, (2 << 20) + 4096 * (i % 64)) == data, f"cycle {i}: wrong data"
            good.flush()
    os.kill(pid, 0)
    deadline = time.time() + 30
    while True:
        now = census(pid)
        if now[0] <= base[0] and now[1] <= base[1]:
            break
        if time.time() > deadline:
            print(f"C01: after {cycles} cycles the server has {now[0]} fds and {now[1]} threads, "
                  f"{base[0]} and {base[1]} before")
            return 1
        time.sleep(0.2)
    good.shutdown()
    h = nbd.NBD()
    h.connect_uri(uri)
    h.pwrite(b"\x5a" * 4096, 0)
    assert h.pread(4096, 0) == b"\x5a" * 4096
    h.shutdown()
    print(f"C01: {cycles} vanishing clients ({len(cuts)} cut points of a {len(stream)}-byte "
          f"session); fds {base[0]} -> {now[0]}, threads {base[1]} -> {now[1]}; a new client works")
    return 0


if __name__ == "__main__":
    sys.exit(main())
