#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kill -9 durability against RBD: clients write with FUA and with WRITE + FLUSH through 2-4
# connections, logging every reply; diskgate is killed with SIGKILL at a random moment and
# started again on the same image; every write that was acknowledged with FUA, or
# acknowledged before an acknowledged FLUSH, must read back (tests/rbd/crash.py has the
# details and the exact rule). DG_CRASH_TRIALS trials (default 5; the long run is
# 30), DG_CRASH_SEED to repeat a run's random choices.
#
# Between the kill and the restart the test fences the dead gateway (blocklists its
# watchers), as an orchestrator fails a gateway over. Without that the new gateway's first
# write waits about 30 s (osd_client_watch_timeout) for the dead one's RBD exclusive lock.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

TRIALS=${DG_CRASH_TRIALS:-5}
# Default features: exclusive-lock and object-map included, as a real image has them.
rbdc create --size 64M rbd/img
$PY "$SRCDIR/tests/rbd/crash.py" "$DISKGATE" "$CEPH_CONF" rbd/img "$TRIALS" "$T" \
  "${DG_ENGINE:-uring}" ${DG_CRASH_SEED:+"$DG_CRASH_SEED"} \
  || fail "kill -9 durability (above)"
pass "kill -9, $TRIALS trials: every FUA or flushed write read back after the restart"
