#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh SECONDS [HARNESS...]: builds the libFuzzer harnesses (clang,
# -fsanitize=fuzzer,address,undefined) against the code they test directly (src/nbd/,
# src/backing/qcow2/qcow2_header.c, or src/backing/asif/asif_header.c and asif_entry.c) and
# runs them all at once for SECONDS seconds of wall time (they share the machine's cores:
# the run takes SECONDS however many harnesses it has). HARNESS: option, request, qcow2,
# asif (default option, request and asif).
#
# Seeds: tests/fuzz/corpus/NAME/ (qcow2 and asif: written into $FUZZ_OUT/seeds-NAME by
# make_NAME_corpus.py) and the past crashes tests/fuzz/crashes/NAME/ (read only,
# run first). New inputs go to $FUZZ_OUT/corpus-NAME/, crash
# inputs to $FUZZ_OUT/artifacts-NAME/ (FUZZ_OUT defaults to $BUILDDIR/fuzz, else
# build/fuzz). A crash fails the run: copy the input to tests/fuzz/crashes/NAME/ (the
# fuzz-replay tests then run it forever), fix the bug, and say so in docs/fuzzing.md.
# Prints one line per harness: executions, coverage, corpus size, and the verdict.
# Environment: FUZZ_CC (default clang, else clang-14), FUZZ_JOBS=1 to run one at a time
# (then the run takes SECONDS per harness).
set -euo pipefail
secs=${1:?usage: run.sh SECONDS [option|request|qcow2|asif ...]}
shift
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(option request asif)

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${FUZZ_OUT:-${BUILDDIR:-$src/build}/fuzz}
mkdir -p "$out"

cc=${FUZZ_CC:-}
if [ -z "$cc" ]; then
  for c in clang clang-14 clang-15 clang-16; do
    command -v "$c" >/dev/null 2>&1 && { cc=$c; break; }
  done
fi
[ -n "$cc" ] || { echo "run.sh: clang not found (Debian: apt-get install clang)" >&2; exit 2; }

cflags=(-std=c17 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$src/src")
declare -A maxlen=([option]=16384 [request]=8192 [qcow2]=4096 [asif]=8192)
nbd_sources=("$src/src/nbd/option.c" "$src/src/nbd/request.c" "$src/src/nbd/reply.c")
declare -A seeds=([option]="$here/corpus/option" [request]="$here/corpus/request"
                  [qcow2]="$out/seeds-qcow2" [asif]="$out/seeds-asif")
# build HARNESS: writes its seeds (if it has a seed maker) and compiles it.
build() {
  local h=$1 sources=("${nbd_sources[@]}")
  case "$h" in
    qcow2) sources=("$src/src/backing/qcow2/qcow2_header.c") ;;
    asif) sources=("$src/src/backing/asif/asif_header.c" "$src/src/backing/asif/asif_entry.c") ;;
  esac
  if [ -f "$here/make_${h}_corpus.py" ]; then
    python3 "$here/make_${h}_corpus.py" "$out/seeds-$h" ||
      { echo "run.sh: writing the $h seeds failed" >&2; exit 2; }
  fi
  "$cc" "${cflags[@]}" -o "$out/fuzz_$h" "$here/fuzz_$h.c" "${sources[@]}" \
    || { echo "run.sh: building fuzz_$h failed" >&2; exit 2; }
}
builds=()
for h in "${harnesses[@]}"; do
  [ -f "$here/fuzz_$h.c" ] || { echo "run.sh: no harness fuzz_$h.c" >&2; exit 2; }
  build "$h" &
  builds+=($!)
done
for pid in "${builds[@]}"; do
  wait "$pid" || exit 2
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pids=()
for h in "${harnesses[@]}"; do
  mkdir -p "$out/corpus-$h" "$out/artifacts-$h"
  log="$out/fuzz_$h.log"
  (cd "$out" && exec "./fuzz_$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -max_len="${maxlen[$h]}" -dict="$here/$h.dict" -print_final_stats=1 \
      -artifact_prefix="$out/artifacts-$h/" "$out/corpus-$h" "${seeds[$h]}" \
      $( [ -d "$here/crashes/$h" ] && echo "$here/crashes/$h" )) \
      >"$log" 2>&1 &
  pids+=($!)
  [ "${FUZZ_JOBS:-2}" = 1 ] && { wait "${pids[-1]}" || true; }
done

rc=0
i=0
for h in "${harnesses[@]}"; do
  st=0
  wait "${pids[$i]}" || st=$?
  i=$((i + 1))
  log="$out/fuzz_$h.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[^ ]*\).*/\1/p' <<<"$last")
  crashes=$(find "$out/artifacts-$h" -type f | wc -l)
  if [ "$st" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    echo "fuzz_$h: FAILED after ${execs:-?} executions (exit $st); crash inputs:"
    find "$out/artifacts-$h" -type f | sed 's/^/  /'
    grep -E 'ERROR|invariant failed|SUMMARY' "$log" | head -5 | sed 's/^/  /'
    echo "  copy each input to tests/fuzz/crashes/$h/ and see $log"
    rc=1
  else
    echo "fuzz_$h: ${secs} s, ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, no crash"
  fi
done
exit $rc
