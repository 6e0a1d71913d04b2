#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A --pid-file in a missing directory is a bad command line: exit 2, one line on stderr.
. "$SRCDIR/tests/lib.sh"
truncate -s 1M "$T/disk.img"
rc=0; "$DISKGATE" serve --socket "$T/p.sock" --pid-file "$T/nodir/pid" "$T/disk.img" >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "exit status with --pid-file in a missing directory"
assert_eq "$(wc -l <"$T/err")" 1 "stderr lines"
pass "--pid-file in a missing directory: exit 2, one line"
