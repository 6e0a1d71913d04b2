#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Extended headers: a WRITE without NBD_CMD_FLAG_PAYLOAD_LEN gets EINVAL and its data is
# skipped, never parsed as requests; the next request is served (both engines).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/server/edge_lib.sh"
edge_check_engines ext_write_without_flag
pass "ext write without flag"
