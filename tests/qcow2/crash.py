# SPDX-License-Identifier: MIT
"""crash.py: the allocating write load of tests/qcow2/crash.sh and its checks
(/usr/bin/python3; blocks and the faulty backing's control from tests/durability/dgdur.py).

  crash.py run URI LOG --cluster BYTES [--conns 2] [--threads 2] [--writes N]
               [--seconds S] [--seed N] [--ready FILE] [--stall S]
      Every thread (threads spread over --conns connections) writes 4 KiB blocks
      (dgdur.block: slot, version, writer in every sector) one request at a time: mostly to
      fresh slots, walking the disk cluster by cluster so that the threads of both
      connections allocate the same clusters at the same time, sometimes rewriting one of
      its own slots; a tenth of the writes with FUA; a FLUSH every few writes. Stops after
      --writes writes per thread, after --seconds, or at the first error (the server
      died). If no request completes for --stall seconds (default 20) while none has
      failed, the server stopped answering: "STALL" and exit 3. LOG (JSON): every write
      (slot, version, conn, fua, t_send, t_ack, ok) and FLUSH (conn, t_send, t_ack, ok),
      CLOCK_MONOTONIC ns; multi_conn: whether the export advertised CAN_MULTI_CONN.

  crash.py verify RAW LOG [--all]
      RAW: the guest's bytes after the crash (qemu-img convert of the image). Every write
      the client may rely on must read back, at that version or a later one it sent: FUA
      and acknowledged, or acknowledged before a FLUSH was sent (on any connection with
      CAN_MULTI_CONN, else on the same one) whose reply came back; with --all, every
      acknowledged write (a clean shutdown). Every sector of every slot written must hold
      zeroes (never written) or a version of that slot's block that was sent: no torn,
      foreign or garbage sector.

  crash.py enumerate CTL LOG IMAGE DIR
      Crash-point enumeration over the faulty backing's event log (recorded during `run`):
      the image a power loss leaves changes only when a sync of the image file completes,
      so for the start and every such sync K the image a power loss after it leaves
      (`image K+1`) must
      pass `qemu-img check` (leaks allowed, no corruption) and, read by qemu-img convert,
      hold every write required before the next sync completed (as verify, with the
      client's times), and no foreign sector.
Exit 0 when the check holds; one line per violation (the first 10) and 1 otherwise.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

import nbd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "durability"))
from dgdur import BLOCK, Faults, block, decode, now  # noqa: E402


def run(a):
    handles = []
    for _ in range(a.conns):
        h = nbd.NBD()
        h.connect_uri(a.uri)
        assert h.can_fua() and h.can_flush(), "the export cannot FUA/FLUSH"
        handles.append(h)
    multi = all(h.can_multi_conn() for h in handles)
    if a.ready:
        with open(a.ready, "w") as f:
            f.write("connected\n")
    size = handles[0].get_size()
    per_cluster = a.cluster // BLOCK
    nthreads = a.conns * a.threads
    nslots = size // BLOCK
    writes, flushes = [], []
    lock = threading.Lock()
    stop = threading.Event()
    progress = [now()]
    deadline = now() + int(a.seconds * 1e9) if a.seconds else None
    # fresh slots: cluster by cluster; inside a cluster, block j goes to thread j % nthreads,
    # so every thread (both connections) allocates the same clusters at the same time
    order = []
    for c in range(nslots // per_cluster):
        for j in range(min(per_cluster, 8 * nthreads)):
            order.append(c * per_cluster + j)
    fresh = [iter([s for k, s in enumerate(order) if k % nthreads == t]) for t in
             range(nthreads)]

    def worker(t):
        conn = t % a.conns
        h = handles[conn]
        rnd = random.Random(a.seed * 1000 + t)
        version, mine = {}, []
        for _ in range(a.writes):
            if stop.is_set() or (deadline and now() > deadline):
                return
            r = rnd.random()
            try:
                if r < 0.12:
                    rec = {"conn": conn, "t_send": now(), "t_ack": None, "ok": False}
                    with lock:
                        flushes.append(rec)
                    h.flush()
                    rec["t_ack"], rec["ok"] = now(), True
                else:
                    slot = next(fresh[t], None) if (r < 0.8 or not mine) else rnd.choice(mine)
                    if slot is None:
                        return
                    if slot not in version:
                        version[slot] = 0
                        mine.append(slot)
                    version[slot] += 1
                    fua = rnd.random() < 0.1
                    rec = {"slot": slot, "version": version[slot], "writer": t, "conn": conn,
                           "fua": fua, "t_send": now(), "t_ack": None, "ok": False}
                    with lock:
                        writes.append(rec)
                    h.pwrite(block(slot, version[slot], t), slot * BLOCK,
                             nbd.CMD_FLAG_FUA if fua else 0)
                    rec["t_ack"], rec["ok"] = now(), True
                progress[0] = now()
            except nbd.Error:
                stop.set()
                return

    threads = [threading.Thread(target=worker, args=(t,), daemon=True)
               for t in range(nthreads)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.05)
        if not stop.is_set() and now() - progress[0] > a.stall * 1e9:
            inflight = [w for w in writes if not w["ok"]] + [f for f in flushes if not f["ok"]]
            print(f"STALL: no reply for {a.stall} s; {len(inflight)} requests in flight "
                  f"(e.g. {inflight[:4]})", flush=True)
            os._exit(3)
    for h in handles:
        try:
            h.shutdown()
        except nbd.Error:
            pass
    with open(a.log, "w") as f:
        json.dump({"writes": writes, "flushes": flushes, "multi_conn": multi}, f)
    print(f"load: {len(writes)} writes ({sum(w['ok'] for w in writes)} acknowledged, "
          f"{sum(w['fua'] and w['ok'] for w in writes)} FUA) and {len(flushes)} flushes "
          f"({sum(f['ok'] for f in flushes)} acknowledged) from {nthreads} threads on "
          f"{a.conns} connections{' (multi-conn)' if multi else ''}")
    return 0


def required_from(log):
    """slot -> [(t, version)]: from client time t on, `version` of slot must read back."""
    flushes = sorted((f for f in log["flushes"] if f["ok"]), key=lambda f: f["t_ack"])
    out = {}
    for w in log["writes"]:
        if not w["ok"]:
            continue
        t = w["t_ack"] if w["fua"] else None
        for f in flushes:
            if f["t_send"] > w["t_ack"] and (log["multi_conn"] or f["conn"] == w["conn"]):
                if t is None or f["t_ack"] < t:
                    t = f["t_ack"]
                break
        if t is not None:
            out.setdefault(w["slot"], []).append((t, w["version"]))
    return out


class Checker:
    def __init__(self, log):
        self.log = log
        self.req = required_from(log)
        self.sent = {}
        for w in log["writes"]:
            self.sent[w["slot"]] = max(self.sent.get(w["slot"], 0), w["version"])
        self.bad = 0

    def say(self, line):
        self.bad += 1
        if self.bad <= 10:
            print(line)

    def check_image(self, raw, t, where, everything=False):
        """Checks the guest bytes `raw` against what was required by client time t."""
        with open(raw, "rb") as f:
            data = f.read()
        for slot, top in self.sent.items():
            got = decode(data[slot * BLOCK:(slot + 1) * BLOCK], slot)
            need = 0
            if everything:
                need = max((w["version"] for w in self.log["writes"]
                            if w["ok"] and w["slot"] == slot), default=0)
            else:
                need = max((v for tt, v in self.req.get(slot, []) if tt < t), default=0)
            for sec, v in enumerate(got):
                if v is None or v > top:
                    self.say(f"{where}: slot {slot} sector {sec}: a torn, foreign or garbage "
                             f"sector (last version sent {top})")
                elif v < need:
                    self.say(f"{where}: slot {slot} sector {sec}: version {v}, but version "
                             f"{need} was acknowledged and flushed (or FUA)")


def verify(a):
    ck = Checker(json.load(open(a.log)))
    ck.check_image(a.raw, float("inf"), "verify", everything=a.all)
    print(f"verify: {len(ck.sent)} slots written, {len(ck.req)} with a flushed or FUA "
          f"version; {ck.bad} violations")
    return 1 if ck.bad else 0


def enumerate_points(a):
    log = json.load(open(a.log))
    ck = Checker(log)
    fc = Faults(a.ctl)
    events = fc.events()
    assert events, "no events recorded"
    img = os.path.join(a.dir, "crash.qcow2")
    raw = os.path.join(a.dir, "crash.raw")
    leaks = 0
    syncs = [e for e in events if e["kind"] == "D" and e["type"] == "flush"
             and e["result"] == 0]
    # crash points where the image changes: the start of the recording, and after each
    # completed sync; a power loss anywhere until the next one leaves the same image, which
    # must hold what the client relied on until then
    points = [events[0]["seq"]] + [e["seq"] + 1 for e in syncs]
    bounds = [e["t"] for e in syncs] + [float("inf")]
    for k, t_next in zip(points, bounds):
        fc.cmd(f"image {k} {img}")
        r = subprocess.run(["qemu-img", "check", "-f", "qcow2", img], capture_output=True,
                           text=True)
        if r.returncode == 3:
            leaks += 1
        elif r.returncode != 0:
            ck.say(f"crash point {k}: qemu-img check exit {r.returncode}: "
                   + " | ".join((r.stdout + r.stderr).splitlines()[:4]))
            continue
        subprocess.run(["qemu-img", "convert", "-f", "qcow2", "-O", "raw", img, raw],
                       check=True)
        ck.check_image(raw, t_next, f"crash point {k}")
    fc.close()
    print(f"enumerate: {len(events)} events, {len(syncs)} syncs, {len(points)} distinct "
          f"crash images checked ({leaks} with leaked clusters only) and read back; "
          f"{ck.bad} violations")
    return 1 if ck.bad else 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("uri")
    r.add_argument("log")
    r.add_argument("--cluster", type=int, required=True)
    r.add_argument("--conns", type=int, default=2)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--writes", type=int, default=1 << 30)
    r.add_argument("--seconds", type=float, default=0)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--ready")
    r.add_argument("--stall", type=float, default=20)
    v = sub.add_parser("verify")
    v.add_argument("raw")
    v.add_argument("log")
    v.add_argument("--all", action="store_true")
    e = sub.add_parser("enumerate")
    e.add_argument("ctl")
    e.add_argument("log")
    e.add_argument("image")
    e.add_argument("dir")
    a = p.parse_args()
    return {"run": run, "verify": verify, "enumerate": enumerate_points}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
