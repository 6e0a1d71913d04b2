#!/usr/bin/python3
"""bench/compare's --size: K, M and G as fio and rbd read them (powers of 1024), not only G.

The fault this guards (helper-31): the test file's size was checked as int(size minus "G")
GiB, so `--size 64M` crashed with a Python traceback once a compare.img existed, and a
size in M was never compared with the file's."""
import os
import subprocess
import sys

from compare_lib import Checks, load_compare

compare = load_compare()
checks = Checks()
check = checks.check

check("1G", compare.size_bytes("1G"), 1 << 30)
check("64M", compare.size_bytes("64M"), 64 << 20)
check("512k", compare.size_bytes("512k"), 512 << 10)
check("1GB", compare.size_bytes("1GB"), 1 << 30)
# fio (kb_base=1024) reads 1GiB as 10^9 bytes, and a bare number as bytes where rbd reads
# MiB: both refused rather than compared with the wrong size (helper-33)
check("1GiB", compare.size_bytes("1GiB"), 0)
check("bytes", compare.size_bytes("1048576"), 0)
check("not a size", compare.size_bytes("big"), 0)
check("a fraction", compare.size_bytes("1.5G"), 0)

# A bad --size is one line and exit status 2, before any tool runs.
script = os.path.join(os.path.dirname(os.path.abspath(compare.__file__)), "compare")
r = subprocess.run([sys.executable, script, "--size", "64", "--out", "/nonexistent/x"],
                   capture_output=True, text=True)
check("exit status for --size 64", r.returncode, 2)
check("one line naming --size", r.stderr.count("\n") == 1 and "--size" in r.stderr, True)

checks.finish("bench/compare --size")
