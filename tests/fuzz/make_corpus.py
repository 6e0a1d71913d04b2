#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_corpus.py: writes the seed corpus of the fuzzers (tests/fuzz/corpus/{option,request}/).

Deterministic: running it again gives the same files. Seeds are realistic client traffic
(what libnbd, qemu and nbdinfo send) plus the malformed inputs of the field cases C02, C03
and C11, in the input formats described at the top of fuzz_option.c and fuzz_request.c.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from nbdproto import info_payload as info, meta_payload as meta  # noqa: E402,F401
from nbdproto import option_header, request_header  # noqa: E402


def opt(o, data=b"", length=None):
    return option_header(o, len(data) if length is None else length) + data


def handshake(server_flags, client_flags, *options):
    return bytes([server_flags]) + struct.pack(">I", client_flags) + b"".join(options)


OPTION_SEEDS = {
    "go-default": handshake(3, 3, opt(7, info(""))),
    "go-disk-infos": handshake(3, 3, opt(8), opt(7, info("disk", [0, 1, 2, 3]))),
    "info-then-go": handshake(3, 1, opt(6, info("disk", [3])), opt(7, info("disk", [3]))),
    "export-name": handshake(1, 1, opt(1, b"disk")),
    "export-name-nozeroes": handshake(3, 3, opt(1, b"")),
    "list-abort": handshake(3, 3, opt(3), opt(2)),
    "libnbd-typical": handshake(3, 3, opt(8), opt(10, meta("disk", ["base:allocation"])),
                                opt(7, info("disk", [3, 1]))),
    "qemu-typical": handshake(3, 3, opt(8), opt(9, meta("", ["base:"])),
                              opt(10, meta("", ["base:allocation", "qemu:dirty-bitmap:b"])),
                              opt(7, info("", [3]))),
    "extended": handshake(3, 3, opt(11), opt(10, meta("disk", [])), opt(7, info("disk"))),
    "unknown-option": handshake(3, 3, opt(0xDEAD, bytes(range(100))), opt(7, info("disk"))),
    "starttls": handshake(3, 3, opt(5), opt(5, b"junk")),
    "bad-client-flags": handshake(1, 0x80000003, opt(7, info(""))),
    "nozeroes-unadvertised": handshake(1, 3, opt(7, info(""))),
    # C02: name lengths
    "name-4096": handshake(3, 3, opt(7, info("n" * 4096))),
    "name-4097": handshake(3, 3, opt(7, info("n" * 4097))),
    "name-declared-too-long": handshake(3, 3, opt(7, struct.pack(">I", 100) + b"disk\0\0")),
    "name-declared-max": handshake(3, 3, opt(6, struct.pack(">I", 0xFFFFFFFF) + b"\0\0")),
    "name-nul": handshake(3, 3, opt(7, info(b"di\0sk")), opt(1, b"di\0sk")),
    "name-utf8": handshake(3, 3, opt(7, info("dïsk-€-😀")), opt(1, "dïsk-€".encode())),
    # C03: huge and malformed options
    "option-huge-length": handshake(3, 3, opt(0xDEAD, b"\xaa" * 64, length=0xFFFFFFFF)),
    "option-list-with-data": handshake(3, 3, opt(3, b"x"), opt(3)),
    "option-go-short": handshake(3, 3, opt(7, b"\0\0\0"), opt(7, b"\0\0\0\x0adisk"),
                              opt(7, struct.pack(">I", 4) + b"disk" + struct.pack(">H", 3))),
    "option-bad-magic": handshake(3, 3, struct.pack(">QII", 0x1122334455667788, 3, 0)),
    # meta-context layouts
    "meta-bad-query-length": handshake(3, 3, opt(8), opt(9, meta("disk", []) [:-4] +
                                                            struct.pack(">I", 1) +
                                                            struct.pack(">I", 99) + b"base:")),
    "meta-many": handshake(3, 3, opt(8), opt(10, meta("disk", ["base:allocation"] * 40 +
                                                     ["x-a:" + "b" * 300]))),
    "meta-trailing": handshake(3, 3, opt(8), opt(10, meta("disk", ["base:"]) + b"xx")),
}


def limits(size, tflags, max_payload, mode):
    return struct.pack(">QHIB", size, tflags, max_payload, mode)


def req(cmd, cookie, off, ln, flags=0, payload=b""):
    return request_header(cmd, cookie, off, ln, flags) + payload


def ereq(cmd, cookie, off, ln, flags=0, payload=b""):
    return request_header(cmd, cookie, off, ln, flags, ext=True) + payload


RW = 0x1 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800   # diskgate's flags
RO = 0x1 | 0x2 | 0x4 | 0x400
SIZE = 64 << 20
MAXP = 32 << 20
REQUEST_SEEDS = {
    "simple-mix": limits(SIZE, RW, MAXP, 0) + req(0, 1, 0, 4096) +
    req(1, 2, 4096, 16, 0, b"0123456789abcdef") + req(3, 3, 0, 0) + req(4, 4, 0, 65536) +
    req(6, 5, 8192, 4096, 2) + req(2, 6, 0, 0),
    "structured-df": limits(SIZE, RW, MAXP, 1) + req(0, 7, 0, 65536, 4) + req(0, 8, 1, 1),
    "block-status": limits(SIZE, RW, MAXP, 5) + req(7, 9, 0, SIZE) + req(7, 10, 4096, 4096, 8) +
    req(7, 11, SIZE, 1),
    "extended": limits(SIZE, RW | 0x1000, MAXP, 7) + ereq(0, 12, 0, 4096) +
    ereq(1, 13, 0, 8, 0x20, b"ABCDEFGH") + ereq(7, 14, 0, 1 << 40) + ereq(4, 15, 0, 1 << 33) +
    ereq(1, 16, 0, 8, 0, b"") + ereq(3, 17, 0, 0, 0x20, b"") + ereq(5, 18, 0, 4096),
    "read-only": limits(4 << 20, RO, MAXP, 1) + req(1, 19, 0, 4, 0, b"abcd") + req(4, 20, 0, 512) +
    req(6, 21, 0, 512, 2) + req(0, 22, 0, 512),
    # C05 / C08 / C11 / rule 22: ranges, overflow, degenerate requests
    "overflow": limits(123456789, RW, MAXP, 1) + req(0, 23, 2**64 - 512, 1024) +
    req(1, 24, 2**64 - 4, 8, 0, b"\0" * 8) + req(4, 25, 2**63, 0xFFFFFFFF) +
    req(6, 26, 0xFFFFFE00, 0xFFFFFE00),
    "degenerate": limits(1000, RW, MAXP, 0) + req(0, 27, 0, 0) + req(1, 28, 0, 0) +
    req(3, 29, 512, 512) + req(0x7F, 30, 0, 0) + req(0, 31, 0, 512, 0x8000) +
    req(1, 32, 0, 4, 0x4000, b"\x25\x60\x95\x13"),
    "too-long": limits(SIZE, RW, 65536, 1) + req(0, 33, 0, 65537) + req(1, 34, 0, 65537),
    "bad-magic": limits(SIZE, RW, MAXP, 0) + struct.pack(">IHHQQI", 0x12345678, 0, 0, 1, 0, 1),
    "error-messages": limits(SIZE, RW, MAXP, 3) + ereq(6, 35, SIZE, 406, 0x20,
                                                      ("é" * 200 + "€" * 2).encode()),
    "long-message-utf8": limits(SIZE, RW, MAXP, 0) +
    req(1, 38, SIZE, 1000, 0, ("a" + "€" * 333).encode()) +
    req(1, 39, SIZE, 600, 0x8000, ("😀" * 150).encode()),
    "fast-zero": limits(SIZE, RW, MAXP, 1) + req(6, 36, 0, 1 << 20, 0x10) +
    req(6, 37, 0, 1 << 20, 0x12),
    # rule 23 with --unaligned error: minimum block 512 (mode bits 3-5 = 2), 4096 (= 3)
    "unaligned-512": limits(SIZE, RW, MAXP, 1 | (2 << 3)) + req(0, 40, 256, 512) +
    req(1, 41, 512, 100, 0, b"u" * 100) + req(4, 42, 1024, 512) + req(3, 43, 0, 0) +
    req(6, 44, 0, 511),
    "unaligned-4096-ext": limits(SIZE, RW, MAXP, 7 | (3 << 3)) + ereq(7, 45, 4096, 512) +
    ereq(1, 46, 8192, 4096, 0x20, b"v" * 4096) + ereq(5, 47, 100, 4096),
}


def main():
    for kind, seeds in (("option", OPTION_SEEDS), ("request", REQUEST_SEEDS)):
        d = os.path.join(HERE, "corpus", kind)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print(f"{len(seeds)} seeds in {d}")


if __name__ == "__main__":
    main()
