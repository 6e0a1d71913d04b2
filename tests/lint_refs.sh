#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every spec rule and field case that src/ and tests/ cite has its row in docs/: "rule N",
# "rules N-M", "rules N, M and K", "rule N/M" and @rule(N, ...) need a row N in
# docs/spec-rules.md; a case id CNN needs a row CNN in docs/cases.md. Fails naming each
# citation without a row (file:line). Before scanning the tree it checks itself on a made-up
# text, so a pattern that matches nothing cannot pass.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source tree}"
exec /usr/bin/python3 - "$SRCDIR" <<'PY'
import os
import re
import sys

src = sys.argv[1]
RULE = re.compile(r"(?:\b[Rr]ules?\s+|@rule\()(\d+(?:\s*(?:-|–|,|/|\band\b)\s*\d+)*)")
CASE = re.compile(r"\bC(\d{2})\b")


def rule_numbers(text):
    """The rule numbers one citation names ("16-18, 20 and 33" -> 16, 17, 18, 20, 33)."""
    out = set()
    for part in re.split(r"\s*(?:,|/|\band\b)\s*", text):
        ends = re.split(r"\s*[-–]\s*", part.strip())
        if len(ends) == 2:
            out.update(range(int(ends[0]), int(ends[1]) + 1))
        elif ends[0]:
            out.add(int(ends[0]))
    return out


def citations(text):
    """[(kind, id, line number)] of the rule and case citations in text."""
    found = []
    for lineno, line in enumerate(text.split("\n"), 1):
        for m in RULE.finditer(line):
            found += [("rule", n, lineno) for n in sorted(rule_numbers(m.group(1)))]
        for m in CASE.finditer(line):
            found.append(("case", "C" + m.group(1), lineno))
    return found


def rows(path, pattern):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return {m.group(1) for m in re.finditer(pattern, f.read(), re.M)}


rules = {int(n) for n in rows("docs/spec-rules.md", r"^\| (\d+) \|")}
cases = rows("docs/cases.md", r"^\| (C\d{2}) \|")
if not rules or not cases:
    sys.exit("FAIL: no rows found in docs/spec-rules.md or docs/cases.md")


def missing(found):
    return [(k, i, ln) for k, i, ln in found
            if (k == "rule" and i not in rules) or (k == "case" and i not in cases)]


# the check checks itself: a made-up citation of each form must be reported
probe = "x rule 97 y\nrules 96-98 and 95\n@rule(94, 3)\nrule 93/92\ncase C98 here\n"
got = {(k, i) for k, i, _ in missing(citations(probe))}
want = {("rule", n) for n in range(92, 99)} | {("case", "C98")}
if want - got:
    sys.exit(f"FAIL: the scanner missed made-up citations {sorted(want - got)}")

bad, seen = [], 0
self_path = os.path.join(src, "tests", "lint_refs.sh")
for top in ("src", "tests"):
    for dirpath, dirnames, filenames in os.walk(os.path.join(src, top)):
        dirnames[:] = [d for d in dirnames if d not in ("corpus", "crashes", "__pycache__")]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if path == self_path:
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue  # binary files: fixtures, seeds
            found = citations(text)
            seen += len(found)
            rel = os.path.relpath(path, src)
            bad += [f"{rel}:{ln}: {k} {i} has no row in docs/"
                    + ("spec-rules.md" if k == "rule" else "cases.md")
                    for k, i, ln in missing(found)]
if seen == 0:
    sys.exit("FAIL: no rule or case citation found in src/ and tests/ (is SRCDIR right?)")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(f"FAIL: {len(bad)} citations without a row")
print(f"ok: {seen} citations of {len(rules)} rules and {len(cases)} cases resolve in docs/")
PY
