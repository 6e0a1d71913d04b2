#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# NBD_CMD_CACHE of length 0 succeeds, as every other zero-length command does (both
# engines).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/server/edge_lib.sh"
edge_check_engines cache_zero_length
pass "cache length 0"
