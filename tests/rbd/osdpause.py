# SPDX-License-Identifier: MIT
# tests/rbd/osdpause.py: pausing the test cluster's OSD (for slow.sh, case C17).
import os
import signal
import sys
import time


def all_stopped(pid):
    """True when every thread of pid is stopped (state T)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state not in "tT":
            return False
    return True


def stop_osd(pid):
    """SIGSTOP pid and wait until all its threads are stopped: the signal takes effect
    lazily, and a thread still running could answer one more request. Exits the test (after
    SIGCONT) when that takes more than 5 s."""
    os.kill(pid, signal.SIGSTOP)
    for _ in range(500):
        if all_stopped(pid):
            return
        time.sleep(0.01)
    os.kill(pid, signal.SIGCONT)
    sys.exit(f"process {pid} did not stop within 5 s of SIGSTOP")
