#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tracked tree holds the product, not a lab notebook, and every source file says its
# licence. Fails, naming each offender, when:
# - a file in bench/results/ is cited by no document (by its path, or its run's folder as
#   a whole), or any .patch file is tracked;
# - docs/performance.md is over 250 lines or README.md over 150;
# - a tracked source file (*.c, *.h, *.py, *.sh, meson.build, scripts with a shebang)
#   lacks an `SPDX-License-Identifier: MIT` line within its first three lines.
# With --self-test it first checks that the SPDX scan catches a file without the line.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"
cd "$SRCDIR"

fails=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# spdx_missing FILE...: prints each FILE without the licence line in its first 3 lines.
spdx_missing() {
  awk 'FNR == 1 { if (seen != "" && !ok) print seen; seen = FILENAME; ok = 0 }
       FNR <= 3 && /SPDX-License-Identifier: MIT/ { ok = 1 }
       END { if (seen != "" && !ok) print seen }' "$@"
}

probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
printf '#!/bin/sh\necho no licence here\n' >"$probe"
[ "$(spdx_missing "$probe")" = "$probe" ] || bad "the SPDX scan missed a file without the line"
printf '#!/bin/sh\n# SPDX-License-Identifier: MIT\n' >"$probe"
[ -z "$(spdx_missing "$probe")" ] || bad "the SPDX scan flagged a file with the line"

if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
  files=$(git ls-files)
else
  files=$(find . -type f ! -path './build*' ! -path './.git/*' | sed 's|^\./||')
fi

# bench/results/: only what a document cites (README.md, docs/): each file by its path, or
# by its run's folder named as a whole ("bench/results/RUN/`" or ".../RUN/)")
for f in $(printf '%s\n' "$files" | grep '^bench/results/' || true); do
  run=${f%/*}
  grep -rF "$f" README.md docs >/dev/null || grep -rE "$run/[\`)]" README.md docs >/dev/null ||
    bad "$f is cited by no document (README.md, docs/): drop it (git keeps it)"
done
patches=$(printf '%s\n' "$files" | grep '\.patch$' || true)
[ -z "$patches" ] || bad "tracked .patch files: $(echo $patches)"
lines=$(wc -l <docs/performance.md)
[ "$lines" -le 250 ] || bad "docs/performance.md has $lines lines (at most 250)"
lines=$(wc -l <README.md)
[ "$lines" -le 150 ] || bad "README.md has $lines lines (at most 150)"

sources=()
while IFS= read -r f; do
  [ -f "$f" ] || continue
  case "$f" in
    tests/fuzz/corpus/* | tests/fuzz/crashes/* | tests/bench/fixtures/* | tests/bench/expected/*) continue ;;
    *.c | *.h | *.py | *.sh | */meson.build | meson.build | meson_options.txt | Makefile) sources+=("$f") ;;
    *) head -c 2 "$f" | grep '^#!' >/dev/null && sources+=("$f") ;;
  esac
done <<<"$files"
missing=$(spdx_missing "${sources[@]}")
[ -z "$missing" ] || bad "no SPDX-License-Identifier line in: $(echo $missing)"

[ "$fails" -eq 0 ] || exit 1
echo "ok: tree (${#sources[@]} source files carry the licence line)"
