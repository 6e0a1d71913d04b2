#!/usr/bin/python3
"""bench/compare's record of the measured binary (compare.json's "diskgate", and one console
line): its SHA-256, --version, linked libraries and the source tree's commit.

The fault this guards: runs 18-22 recorded T6 at 17 MiB and runs 2-17 and 23 at 35 MiB with
the same server code, and nothing in their results said which binaries had librbd linked
(bench/results/2026-12-03-rbd-dlopen/)."""
import hashlib
import os
import shutil
import subprocess

from compare_lib import SRC, Checks, load_compare

compare = load_compare()
checks = Checks()
check = checks.check

dg = os.environ["DISKGATE"]
ident = compare.binary_identity(dg)
check("path", ident["path"], os.path.abspath(dg))
with open(dg, "rb") as f:
    check("sha256", ident["sha256"], hashlib.sha256(f.read()).hexdigest())
check("version", ident["version"].startswith("diskgate "), True)
check("libc among the libraries", "libc.so.6" in ident["libraries"], True)
check("liburing among the libraries", "liburing.so.2" in ident["libraries"], True)
check("the libraries sorted", ident["libraries"], sorted(ident["libraries"]))
check("no Ceph library linked (loaded at run time by an rbd: export)",
      [lib for lib in ident["libraries"] if lib.startswith(("librbd", "librados"))], [])

head = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], capture_output=True,
                      text=True)
if head.returncode == 0:
    check("source tree", ident["source_tree"].split("+")[0], head.stdout.strip())
    check("source tree suffix", ident["source_tree"][len(head.stdout.strip()):] in ("", "+changes"),
          True)
else:
    check("source tree outside git", ident["source_tree"], "")

# A program that is not diskgate: ldd still lists libc; --version's first line is kept.
true = shutil.which("true")
other = compare.binary_identity(true)
check("another binary's libc", "libc.so.6" in other["libraries"], True)
check("another binary's version", other["version"],
      subprocess.run([true, "--version"], capture_output=True, text=True).stdout.splitlines()[0])

line = compare.identity_line(dict(ident, libraries=["libc.so.6", "librados.so.2", "librbd.so.1"]))
check("console line names linked Ceph libraries",
      line.endswith("3 linked libraries, with librados.so.2 librbd.so.1; source tree %s)"
                    % (ident["source_tree"] or "not in git")), True)
check("console line starts with the path", line.startswith("diskgate: %s (" % ident["path"]), True)
check("console line's sha256 prefix", ("sha256 %s," % ident["sha256"][:12]) in line, True)
line = compare.identity_line(dict(ident, libraries=["libc.so.6"], source_tree=""))
check("console line without Ceph or git",
      line.endswith("1 linked libraries, none of Ceph's; source tree not in git)"), True)

checks.finish("bench/compare records the measured binary")
