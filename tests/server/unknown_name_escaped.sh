#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An unknown export name with a newline and a non-UTF-8 byte gets NBD_REP_ERR_UNKNOWN and goes
# into the log escaped, never as raw bytes that could forge a log line (both engines).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/server/edge_lib.sh"
edge_check_engines unknown_name_escaped LOG
pass "escaped name"
