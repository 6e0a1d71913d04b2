# SPDX-License-Identifier: MIT
"""dgdur.py: helpers of the tests/durability scripts (run with /usr/bin/python3).

  Faults       the control socket of the fault-injecting backing (src/backing/faulty/faulty.h)
  block()      self-describing 4 KiB blocks: (slot, version, writer) in every 512-byte sector
  decode()     the inverse, per sector
  now()        CLOCK_MONOTONIC in ns, the clock of the faulty backing's event log
"""
import socket
import struct
import time
import zlib

BLOCK = 4096
SECTOR = 512
MAGIC = 0xD15C6A7E


def now():
    return time.monotonic_ns()


class Faults:
    """A client of the faulty backing's control socket: one command per line, one reply."""

    def __init__(self, path, timeout=60.0):
        deadline = time.time() + 10
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.settimeout(timeout)
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.f = self.s.makefile("rw")

    def raw(self, line):
        self.f.write(line + "\n")
        self.f.flush()
        reply = self.f.readline()
        if not reply:
            raise ConnectionError(f"control socket closed after '{line}'")
        return reply.rstrip("\n")

    def cmd(self, line):
        """Runs a command that must succeed; returns the words after "ok"."""
        reply = self.raw(line)
        assert reply.startswith("ok"), f"faulty control '{line}': {reply}"
        return reply.split()[1:]

    def events(self):
        """The recorded events: dicts with seq, t, kind, id, type, flags, off, len, result, aux."""
        self.f.write("events\n")
        self.f.flush()
        head = self.f.readline().split()
        assert head[0] == "ok", f"events: {head}"
        out = []
        for _ in range(int(head[1])):
            seq, t, kind, oid, typ, flags, off, ln, res, aux = self.f.readline().split()
            out.append(dict(seq=int(seq), t=int(t), kind=kind, id=int(oid), type=typ,
                            flags=int(flags), off=int(off), len=int(ln), result=int(res),
                            aux=int(aux)))
        return out

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass


def block(slot, version, writer=0):
    """4 KiB whose every 512-byte sector says (slot, version, writer, sector) + a checksum."""
    out = bytearray()
    for sec in range(BLOCK // SECTOR):
        head = struct.pack(">IQQII", MAGIC, slot, version, writer, sec)
        body = (head * (SECTOR // len(head) + 1))[:SECTOR - 4]
        out += body + struct.pack(">I", zlib.crc32(body))
    return bytes(out)


def decode(data, slot):
    """Per sector of a block read back: its version, 0 for all zeroes, None if torn or
    foreign (another slot's data, a bad checksum)."""
    versions = []
    for sec in range(BLOCK // SECTOR):
        s = data[sec * SECTOR:(sec + 1) * SECTOR]
        if s == bytes(SECTOR):
            versions.append(0)
            continue
        body, crc = s[:-4], struct.unpack(">I", s[-4:])[0]
        magic, sl, ver, _writer, sn = struct.unpack(">IQQII", body[:28])
        if zlib.crc32(body) != crc or magic != MAGIC or sl != slot or sn != sec:
            versions.append(None)
        else:
            versions.append(ver)
    return versions
