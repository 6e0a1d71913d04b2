#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz/coverage.sh [CORPUS_ROOT]: source coverage of src/nbd/option.c, request.c and reply.c
# reached by the fuzz corpora (llvm-cov). CORPUS_ROOT holds corpus-option/ and
# corpus-request/ as run.sh leaves them (default $FUZZ_OUT, else build/fuzz); the seed corpus
# and the crash inputs are always included. Prints llvm-cov's per-file and per-function report.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
root=${1:-${FUZZ_OUT:-$src/build/fuzz}}
out=$(mktemp -d /tmp/fuzzcov.XXXXXX)
trap 'rm -rf "$out"' EXIT
cc=${FUZZ_CC:-clang}
profdata=$(command -v llvm-profdata || command -v llvm-profdata-14)
cov=$(command -v llvm-cov || command -v llvm-cov-14)
for h in option request; do
  "$cc" -std=c17 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer -fprofile-instr-generate \
    -fcoverage-mapping -I"$src/src" -o "$out/cov_$h" "$here/fuzz_$h.c" \
    "$src/src/nbd/option.c" "$src/src/nbd/request.c" "$src/src/nbd/reply.c"
  dirs=("$here/corpus/$h")
  [ -d "$here/crashes/$h" ] && dirs+=("$here/crashes/$h")
  [ -d "$root/corpus-$h" ] && dirs+=("$root/corpus-$h")
  LLVM_PROFILE_FILE="$out/$h.profraw" "$out/cov_$h" -runs=0 "${dirs[@]}" >/dev/null 2>&1
done
"$profdata" merge -o "$out/all.profdata" "$out"/*.profraw
bins=("$out/cov_option" -object "$out/cov_request")
"$cov" report -instr-profile="$out/all.profdata" "${bins[@]}" \
  "$src/src/nbd/option.c" "$src/src/nbd/request.c" "$src/src/nbd/reply.c"
echo "functions not fully covered (name, regions, missed, cover, lines, missed, cover):"
"$cov" report -show-functions -instr-profile="$out/all.profdata" "${bins[@]}" \
  "$src/src/nbd/option.c" "$src/src/nbd/request.c" "$src/src/nbd/reply.c" |
  awk '/^nbd_|^[a-z_]+ +[0-9]/ && $4 != "100.00%"'
