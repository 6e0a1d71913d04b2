# SPDX-License-Identifier: MIT
"""workload.py: the mixed write load of the crash tests and its checkers (/usr/bin/python3).

  workload.py run URI LOG [--conns 4] [--threads 2] [--slots N] [--ops N] [--seconds S]
                          [--unique] [--seed N] [--ready FILE] [--write-through]
      WRITEs (some with FUA) and FLUSHes from --conns connections, --threads threads each;
      with --write-through (a server under --cache writethrough or directsync) plain WRITEs
      only, no FLUSH and no FUA, and every acknowledged write counts as durable.
      Every thread owns its slots (4 KiB blocks) and writes them with increasing versions
      (dgdur.block), one request at a time; with --unique every write goes to a fresh slot
      (version 1). Stops after --ops requests per thread, after --seconds, or at the first
      error (the server died): the requests in flight are logged as sent, not acknowledged.
      LOG (JSON) gets every write (slot, version, fua, t_send, t_ack, ok) and flush (t_send,
      t_ack, ok); times are CLOCK_MONOTONIC ns, taken before sending and after the reply.

  workload.py verify URI LOG
      After a crash and a restart: every slot must hold, in every sector, a version between
      its guaranteed one and the last one sent. Guaranteed: the highest version acknowledged
      with FUA, or acknowledged before a FLUSH (any connection: multi-conn) was sent whose
      reply came back, or acknowledged at all in a --write-through log.

  workload.py enumerate CTL LOG DIR
      Crash-point enumeration against the faulty backing's event log (recorded while the
      load ran, with `record`; --unique load): for every crash point K, the image a power loss
      there leaves (`image K`) must hold every write that the client had, by the time of
      event K, seen acknowledged with FUA or acknowledged before a FLUSH that was
      acknowledged.
Exit status 0 when the check holds; one line per violation and status 1 otherwise.
"""
import argparse
import json
import os
import random
import sys
import threading

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dgdur import BLOCK, Faults, block, decode, now  # noqa: E402


def run(a):
    handles = []
    for _ in range(a.conns):
        h = nbd.NBD()
        h.connect_uri(a.uri)
        assert h.can_multi_conn(), "the export does not advertise CAN_MULTI_CONN"
        assert h.can_fua() and h.can_flush(), "the export cannot FUA/FLUSH"
        handles.append(h)
    if a.ready:
        open(a.ready, "w").write("connected\n")
    size = handles[0].get_size()
    nthreads = a.conns * a.threads
    slots = min(a.slots, size // BLOCK)
    per = slots // nthreads
    assert per >= 1, "too few slots"
    writes, flushes = [], []
    lock = threading.Lock()
    stop = threading.Event()
    deadline = now() + int(a.seconds * 1e9) if a.seconds else None

    def worker(i):
        h = handles[i % a.conns]
        rnd = random.Random(a.seed * 1000 + i)
        mine = list(range(i * per, (i + 1) * per))
        version = {s: 0 for s in mine}
        fresh = iter(mine)
        for _ in range(a.ops):
            if stop.is_set() or (deadline and now() > deadline):
                return
            r = rnd.random()
            try:
                if r < 0.15 and not a.write_through:
                    rec = {"t_send": now(), "t_ack": None, "ok": False}
                    with lock:
                        flushes.append(rec)
                    h.flush()
                    rec["t_ack"], rec["ok"] = now(), True
                else:
                    if a.unique:
                        slot = next(fresh, None)
                        if slot is None:
                            return
                    else:
                        slot = rnd.choice(mine)
                    version[slot] += 1
                    fua = r > 0.75 and not a.write_through
                    rec = {"slot": slot, "version": version[slot], "fua": fua,
                           "t_send": now(), "t_ack": None, "ok": False}
                    with lock:
                        writes.append(rec)
                    h.pwrite(block(slot, version[slot], i), slot * BLOCK,
                             nbd.CMD_FLAG_FUA if fua else 0)
                    rec["t_ack"], rec["ok"] = now(), True
            except nbd.Error:
                stop.set()  # the server is gone (or failed us): stop everyone
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for h in handles:
        try:
            h.shutdown()
        except nbd.Error:
            pass
    json.dump({"writes": writes, "flushes": flushes, "slots": slots,
               "write_through": a.write_through}, open(a.log, "w"))
    print(f"workload: {len(writes)} writes ({sum(w['ok'] for w in writes)} acknowledged, "
          f"{sum(w['fua'] and w['ok'] for w in writes)} with FUA), {len(flushes)} flushes "
          f"({sum(f['ok'] for f in flushes)} acknowledged)")


def guaranteed_at(log, t):
    """For a crash at time t: {(slot, version)} the client may rely on."""
    flush_acks = sorted(f["t_send"] for f in log["flushes"]
                        if f["ok"] and f["t_ack"] < t)
    latest_flush_send = flush_acks[-1] if flush_acks else None
    out = set()
    for w in log["writes"]:
        if not w["ok"] or w["t_ack"] >= t:
            continue
        if w["fua"] or log.get("write_through") or (latest_flush_send is not None and w["t_ack"] < latest_flush_send):
            out.add((w["slot"], w["version"]))
    return out


def verify(a):
    log = json.load(open(a.log))
    h = nbd.NBD()
    h.connect_uri(a.uri)
    need, sent = {}, {}
    for slot, version in guaranteed_at(log, float("inf")):
        need[slot] = max(need.get(slot, 0), version)
    for w in log["writes"]:
        sent[w["slot"]] = max(sent.get(w["slot"], 0), w["version"])
    bad = 0
    for slot in sorted(sent):
        versions = decode(h.pread(BLOCK, slot * BLOCK), slot)
        g, top = need.get(slot, 0), sent[slot]
        for sec, v in enumerate(versions):
            if v is None or v < g or v > top:
                bad += 1
                if bad <= 10:
                    print(f"verify: slot {slot} sector {sec}: found version {v}, guaranteed "
                          f"{g}, last sent {top}")
    h.shutdown()
    print(f"verify: {len(sent)} slots, {len(need)} with a guaranteed version, "
          f"{sum(1 for s in sent if need.get(s, 0) == sent[s])} fully guaranteed; "
          f"{bad} bad sectors")
    return 1 if bad else 0


def enumerate_points(a):
    log = json.load(open(a.log))
    fc = Faults(a.ctl)
    events = fc.events()
    assert events, "no events recorded"
    writes = [w for w in log["writes"] if w["ok"]]
    slot_version = {}
    for w in log["writes"]:
        assert w["version"] == 1 and w["slot"] not in slot_version, "enumerate needs --unique"
        slot_version[w["slot"]] = w
    # When (client time) each acknowledged write became required: FUA at its ack; else at
    # the ack of the first acknowledged FLUSH sent after its ack.
    flushes = sorted((f for f in log["flushes"] if f["ok"]), key=lambda f: f["t_ack"])
    required_from = {}
    for w in writes:
        t = w["t_ack"] if w["fua"] or log.get("write_through") else None
        for f in flushes:
            if f["t_send"] > w["t_ack"]:
                if t is None or f["t_ack"] < t:
                    t = f["t_ack"]
                break  # sorted by ack: later ones are acknowledged later
        if t is not None:
            required_from[w["slot"]] = t
    # Crash point K: the first K events happened; event K (time events[K].t) did not. A
    # write required at client time t < events[K].t must be in image K.
    first = events[0]["seq"]
    last = events[-1]["seq"] + 1
    times = {e["seq"]: e["t"] for e in events}
    path = os.path.join(a.dir, "crash.img")
    order = sorted(required_from.items(), key=lambda kv: kv[1])
    idx, checked_required = 0, []
    images = checks = 0
    fd = None
    bad = 0
    for k in range(first, last + 1):
        t_k = times.get(k, float("inf"))
        prev = events[k - 1 - first] if k > first else None
        rebuild = prev is None or (prev["kind"] == "D" and prev["type"] == "flush"
                                   and prev["result"] == 0)
        if rebuild:
            fc.cmd(f"image {k} {path}")
            if fd is not None:
                os.close(fd)
            fd = os.open(path, os.O_RDONLY)
            images += 1
        new = []
        while idx < len(order) and order[idx][1] < t_k:
            new.append(order[idx][0])
            idx += 1
        to_check = checked_required + new if rebuild else new
        checked_required += new
        for slot in to_check:
            data = os.pread(fd, BLOCK, slot * BLOCK)
            v = decode(data, slot)
            checks += 1
            if v != [1] * (BLOCK // 512):
                bad += 1
                if bad <= 10:
                    w = slot_version[slot]
                    how = "write-through" if log.get("write_through") else \
                        "FUA" if w["fua"] else "flushed"
                    print(f"enumerate: crash point {k}: slot {slot} ({how}"
                          f" write acknowledged at {w['t_ack']}, required from "
                          f"{required_from[slot]}) reads back as versions {v}")
    if fd is not None:
        os.close(fd)
    fc.close()
    print(f"enumerate: {last - first} events, {last - first + 1} crash points, {images} "
          f"distinct images, {len(required_from)} of {len(writes)} acknowledged writes "
          f"required at some point, {checks} checks, {bad} violations")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("uri")
    r.add_argument("log")
    r.add_argument("--conns", type=int, default=4)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--slots", type=int, default=1024)
    r.add_argument("--ops", type=int, default=1 << 30)
    r.add_argument("--seconds", type=float, default=0)
    r.add_argument("--unique", action="store_true")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--ready", help="file to create once connected")
    r.add_argument("--write-through", action="store_true",
                   help="no FLUSH, no FUA: every acknowledged write must be durable")
    v = sub.add_parser("verify")
    v.add_argument("uri")
    v.add_argument("log")
    e = sub.add_parser("enumerate")
    e.add_argument("ctl")
    e.add_argument("log")
    e.add_argument("dir")
    a = p.parse_args()
    if a.cmd == "run":
        run(a)
        return 0
    if a.cmd == "verify":
        return verify(a)
    return enumerate_points(a)


if __name__ == "__main__":
    sys.exit(main())
