#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --socket naming an existing regular file is a bad command line (exit 2, one line on
# stderr), and the file is left as it was.
. "$SRCDIR/tests/lib.sh"
echo precious >"$T/precious.txt"
truncate -s 1M "$T/disk.img"
rc=0; "$DISKGATE" serve --socket "$T/precious.txt" "$T/disk.img" >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "exit status with a regular file as --socket"
assert_eq "$(wc -l <"$T/err")" 1 "stderr lines"
assert_eq "$(cat "$T/precious.txt")" precious "the file at --socket"
pass "--socket over a regular file: refused, the file kept"
