#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# tests/rbd/crash.py: the kill -9 durability test against an RBD export (run by crash.sh,
# which starts the cluster and creates the image; read that file's header first).
#
# Each trial: 2-4 connections (TCP and Unix socket) write 4 KiB-aligned extents at queue
# depth 8 each, with FUA, or followed now and then by a FLUSH (see SCHEDULE); every reply
# is logged against one event clock. At a random moment diskgate is killed with
# SIGKILL. The dead gateway is fenced as an orchestrator would (its watchers are
# blocklisted, so the next one takes RBD's exclusive lock at once), a new diskgate is started
# on the same image, and the whole image is read back through it and checked block by block:
#   - a write is durable when it was acknowledged with FUA, or acknowledged before a FLUSH
#     (on any connection: the export advertises multi-conn) that was itself acknowledged;
#   - every 4 KiB block must hold exactly one version the clients wrote (a header names the
#     write; the rest is derived from it, so torn or misplaced blocks are caught), and that
#     version must be the block's last durable one or a later one (a later write may have
#     landed without being acknowledged); blocks nobody wrote keep their previous content.
# Writes to a block are never in flight together, so each block's versions are ordered.
# The new diskgate then serves the next trial.
#
# Cache modes. librbd's default (writearound, writethrough until the first flush)
# acknowledges a write once it is on its way to the OSD, and a killed process's sent
# messages still arrive, so a server that dropped FUA or FLUSH would rarely lose anything
# there. The "writeback" trials therefore ask librbd (CEPH_ARGS) for a writeback cache that
# is active from the start and keeps dirty data up to 5 s: there durability rests entirely
# on diskgate passing FUA and FLUSH on to librbd. Since any flush empties the whole cache,
# those trials use one mechanism at a time (FUA only, or FLUSH only), so that one cannot
# hide the other's absence.
#
# Usage: crash.py DISKGATE CEPH_CONF POOL/IMAGE TRIALS WORKDIR ENGINE [SEED]
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import nbd

sys.stdout.reconfigure(line_buffering=True)
dg_bin, ceph_conf, image, trials, workdir, engine = sys.argv[1:7]
trials = int(trials)
seed = int(sys.argv[7]) if len(sys.argv) > 7 else random.randrange(1 << 30)
rng = random.Random(seed)
print(f"crash: {trials} trials, seed {seed} (DG_CRASH_SEED={seed} repeats the choices)")

KiB, MiB = 1 << 10, 1 << 20
BS = 4096
MAGIC = b"DGCRASH1"
QD = 8                      # requests in flight per connection
HOT = 256                   # the first HOT blocks get half the writes (many rewrites)
WRITEBACK_ARGS = ("--rbd-cache-policy writeback --rbd-cache-writethrough-until-flush false "
                  "--rbd-cache-max-dirty-age 5")
# Trial n uses SCHEDULE[(n - 1) % 4]: librbd's cache mode, and what the connections do:
#   mixed: a third of the writes with FUA, a FLUSH after every 12 writes;
#   flush: no FUA, a FLUSH after every 8-32 writes;  fua: every write with FUA, no FLUSH.
SCHEDULE = [("default", "mixed"), ("writeback", "flush"), ("default", "flush"),
            ("writeback", "fua")]


def block(seq, blk):
    """The 4 KiB a write with sequence number seq puts at block blk (seq 0: zeroes)."""
    if seq == 0:
        return bytes(BS)
    hdr = MAGIC + seq.to_bytes(8, "little") + blk.to_bytes(8, "little")
    fill = hashlib.blake2b(hdr, digest_size=64).digest()
    return hdr + (fill * (BS // 64))[:BS - len(hdr)]


def run(cmd, **kw):
    return subprocess.run(["timeout", "60"] + cmd, check=True, capture_output=True,
                          text=True, **kw).stdout


class Server:
    """One `diskgate serve` on the image, with a Unix socket and a TCP port."""
    n = 0

    def __init__(self, env_args):
        Server.n += 1
        tag = f"{workdir}/dg{Server.n}"
        self.sock, self.pidf, self.log = tag + ".sock", tag + ".pid", tag + ".log"
        s = __import__("socket").socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        env = dict(os.environ)
        if env_args:
            env["CEPH_ARGS"] = env_args
        else:
            env.pop("CEPH_ARGS", None)
        self.proc = subprocess.Popen(
            [dg_bin, "serve", "--socket", self.sock, "--listen", f"127.0.0.1:{self.port}",
             "--pid-file", self.pidf, "--engine", engine, "--ceph-conf", ceph_conf,
             "rbd:" + image], stdout=open(self.log, "w"), stderr=subprocess.STDOUT, env=env)
        for _ in range(400):
            if os.path.exists(self.pidf) and os.path.getsize(self.pidf) > 0:
                break
            if self.proc.poll() is not None:
                sys.exit(f"diskgate exited at start:\n{open(self.log).read()}")
            time.sleep(0.05)
        else:
            sys.exit("diskgate did not become ready")
        self.uris = [f"nbd+unix:///?socket={self.sock}", f"nbd://127.0.0.1:{self.port}/"]

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        if rc != 0:
            sys.exit(f"diskgate exited {rc} after SIGTERM:\n{open(self.log).read()}")


class Write:
    __slots__ = ("seq", "blk", "nblk", "fua", "conn", "acked", "durable")

    def __init__(self, seq, blk, nblk, fua, conn):
        self.seq, self.blk, self.nblk, self.fua, self.conn = seq, blk, nblk, fua, conn
        self.acked = None     # event clock of the reply, when it succeeded
        self.durable = None   # why it is durable: "fua", or the FLUSH that covered it


class Trial:
    def __init__(self, number, server, base, next_seq):
        self.number, self.server, self.base = number, server, base
        self.lock = threading.Lock()
        self.clock = 0
        self.next_seq = next_seq
        self.busy = set()         # blocks with a write in flight
        self.hist = {}            # blk -> [Write, ...] in issue order
        self.writes = []
        self.unflushed = []       # acknowledged, not (yet) known durable
        self.flushes_ok = self.flushes_sent = 0
        self.stop = threading.Event()
        self.errors = []
        self.killed_at = None     # event clock of the kill
        self.durable_count = 0
        self.failed_early = []    # requests that failed before the kill

    def tick(self):
        self.clock += 1
        return self.clock

    def pick(self, r):
        """A free extent (under self.lock): half in the hot area, half anywhere."""
        for _ in range(100):
            nblk = r.choice((1, 1, 2, 4, 8, 16))
            area = HOT if r.random() < 0.5 else NBLK
            blk = r.randrange(0, area - nblk + 1)
            if not any(b in self.busy for b in range(blk, blk + nblk)):
                return blk, nblk
        return None

    def writer(self, idx, uri, r, role):
        fua_share = {"fua": 1.0, "flush": 0.0, "mixed": 0.33}[role]
        flush_every = {"fua": 0, "flush": r.randint(8, 32), "mixed": 12}[role]
        try:
            h = nbd.NBD()
            h.connect_uri(uri)
        except nbd.Error as e:
            self.errors.append(f"connection {idx}: {e}")
            return
        since_flush = 0
        while not self.stop.is_set():
            while h.aio_in_flight() < QD and not self.stop.is_set():
                if flush_every and since_flush >= flush_every:
                    with self.lock:
                        issued = self.tick()
                        self.flushes_sent += 1
                    try:
                        h.aio_flush(completion=self.flush_done(issued))
                    except nbd.Error:
                        self.stop.wait(0.01)
                        break
                    since_flush = 0
                    continue
                with self.lock:
                    ext = self.pick(r)
                    if ext is None:
                        break
                    blk, nblk = ext
                    w = Write(self.next_seq, blk, nblk, r.random() < fua_share, idx)
                    self.next_seq += 1
                    self.busy.update(range(blk, blk + nblk))
                    for b in range(blk, blk + nblk):
                        self.hist.setdefault(b, []).append(w)
                    self.writes.append(w)
                data = b"".join(block(w.seq, b) for b in range(blk, blk + nblk))
                try:
                    h.aio_pwrite(data, blk * BS, completion=self.write_done(w),
                                 flags=nbd.CMD_FLAG_FUA if w.fua else 0)
                except nbd.Error:
                    # Not sent (the connection is dead): it never reached the server.
                    with self.lock:
                        self.busy.difference_update(range(blk, blk + nblk))
                    self.stop.wait(0.01)
                    break
                since_flush += 1
            try:
                h.poll(50)
            except nbd.Error:
                break  # the server is gone
        # Drain: after the kill every request still in flight ends with an error.
        deadline = time.monotonic() + 10
        while h.aio_in_flight() > 0 and time.monotonic() < deadline:
            try:
                h.poll(100)
            except nbd.Error:
                break

    def write_done(self, w):
        def done(err):
            with self.lock:
                c = self.tick()
                if err.value == 0:
                    w.acked = c
                    if w.fua:
                        w.durable = "fua"
                        self.durable_count += 1
                    else:
                        self.unflushed.append(w)
                elif self.killed_at is None:
                    self.failed_early.append(f"WRITE seq {w.seq}: {os.strerror(err.value)}")
                self.busy.difference_update(range(w.blk, w.blk + w.nblk))
            return 1
        return done

    def flush_done(self, issued):
        def done(err):
            with self.lock:
                c = self.tick()
                if err.value != 0 and self.killed_at is None:
                    self.failed_early.append(f"FLUSH: {os.strerror(err.value)}")
                if err.value == 0:
                    self.flushes_ok += 1
                    keep = []
                    for w in self.unflushed:
                        if w.acked < issued:
                            w.durable = f"flush sent at {issued}, replied at {c}"
                            self.durable_count += 1
                        else:
                            keep.append(w)
                    self.unflushed = keep
            return 1
        return done


def watchers():
    st = json.loads(run(["rbd", "-c", ceph_conf, "status", "--format", "json", image]))
    return [w["address"] for w in st.get("watchers", [])]


def fence_dead_gateway():
    """Blocklists every watcher of the image (only the killed diskgate watches it now) and
    waits until the OSD has dropped their watches: until then librbd would take the dead
    gateway for alive and ask it for the lock (seconds of retries)."""
    dead = watchers()
    for addr in dead:
        run(["ceph", "-c", ceph_conf, "osd", "blocklist", "add", addr])
    for _ in range(100):
        if not watchers():
            return len(dead)
        time.sleep(0.1)
    sys.exit(f"the dead gateway's watch is still there 10 s after blocklisting {dead}")


def read_image(uri):
    h = nbd.NBD()
    h.connect_uri(uri)
    assert h.get_size() == SIZE, h.get_size()
    data = b"".join(h.pread(4 * MiB, off) for off in range(0, SIZE, 4 * MiB))
    h.shutdown()
    return data


def parse(data, blk):
    """The seq of the version block blk holds, or None when it is no version at all."""
    got = data[blk * BS:(blk + 1) * BS]
    if got[:8] == MAGIC:
        seq = int.from_bytes(got[8:16], "little")
        if int.from_bytes(got[16:24], "little") == blk and got == block(seq, blk):
            return seq
        return None
    return 0 if got == bytes(BS) else None


UNKNOWN = -1   # base value of a block that held no known version (already reported)


def check(t, data):
    """Checks every block against trial t's log; returns (problems, newer, new base)."""
    problems, newer = [], 0
    base = dict(t.base)
    for blk in range(NBLK):
        seq = parse(data, blk)
        versions = t.hist.get(blk, [])
        # The last durable write of this block and the writes issued after it; without a
        # durable write, the block's previous content and every write of this trial.
        k = max((i for i, w in enumerate(versions) if w.durable), default=-1)
        before = base.get(blk, 0)
        if k >= 0:
            allowed, ref = [w.seq for w in versions[k:]], versions[k].seq
        else:
            allowed, ref = [before] + [w.seq for w in versions], before
        if seq is None or seq not in allowed:
            if k < 0 and before == UNKNOWN:
                pass  # reported by an earlier trial
            elif seq is None:
                problems.append(f"block {blk}: holds no version anyone wrote "
                                "(torn, misplaced or corrupted)")
            else:
                d = versions[k]
                what = "an older write of this trial" if any(w.seq == seq for w in versions) \
                    else "its content before the trial"
                problems.append(
                    f"block {blk}: holds seq {seq} ({what}), but seq {d.seq} "
                    f"(blocks {d.blk}+{d.nblk}, connection {d.conn}, "
                    f"{'FUA, ' if d.fua else ''}replied at event {d.acked}) was durable: "
                    f"{d.durable}")
        elif seq != ref:
            newer += 1
        base[blk] = UNKNOWN if seq is None else seq
        if base[blk] == 0:
            del base[blk]
    return problems, newer, base


SIZE = json.loads(run(["rbd", "-c", ceph_conf, "info", "--format", "json", image]))["size"]
NBLK = SIZE // BS

base = {}          # blk -> seq on the image (absent: zeroes), as last verified
next_seq = 1
server = Server(WRITEBACK_ARGS if SCHEDULE[0][0] == "writeback" else None)
failed = False
totals = dict(writes=0, durable=0, fua=0, flushed=0, lost=0, newer=0)
t_start = time.monotonic()
try:
    for n in range(1, trials + 1):
        mode, role = SCHEDULE[(n - 1) % len(SCHEDULE)]
        t = Trial(n, server, base, next_seq)
        nconn = rng.randint(2, 4)
        threads = []
        for i in range(nconn):
            uri = server.uris[i % 2]
            th = threading.Thread(target=t.writer,
                                  args=(i, uri, random.Random(rng.random()), role))
            th.start()
            threads.append(th)
        # The random moment counts from the first durable write (a FUA reply, or a FLUSH
        # reply covering a write): a new gateway first takes RBD's exclusive lock (breaking
        # the dead one's), and a first FLUSH may take a while on a busy machine.
        t0 = time.monotonic()
        while t.durable_count == 0:
            if time.monotonic() - t0 > 60:
                sys.exit(f"trial {n}: no write became durable within 60 s")
            time.sleep(0.01)
        first_durable = time.monotonic() - t0
        delay = rng.uniform(0.25, 1.0)
        time.sleep(delay)
        with t.lock:
            in_flight = len(t.busy)
            t.killed_at = t.tick()
        server.kill9()
        t.stop.set()
        for th in threads:
            th.join(30)
        if t.errors or t.failed_early:
            sys.exit(f"trial {n}: requests failed while the server ran: "
                     f"{(t.errors + t.failed_early)[:5]}")
        next_seq = t.next_seq
        fenced = fence_dead_gateway()
        nxt_mode = SCHEDULE[n % len(SCHEDULE)][0]
        server = Server(WRITEBACK_ARGS if nxt_mode == "writeback" else None)
        data = read_image(server.uris[n % 2])
        problems, newer, base = check(t, data)
        acked = [w for w in t.writes if w.acked is not None]
        durable = [w for w in t.writes if w.durable]
        fua = sum(1 for w in durable if w.durable == "fua")
        print(f"trial {n} ({mode} cache, {nconn} connections, {role}): first durable write "
              f"after {first_durable:.2f} s, killed {delay:.2f} s later; {len(t.writes)} "
              f"writes sent, {len(acked)} acknowledged, "
              f"{len(durable)} durable ({fua} FUA, {len(durable) - fua} by "
              f"{t.flushes_ok}/{t.flushes_sent} FLUSHes), {in_flight} blocks being written "
              f"at the kill; {fenced} watcher(s) fenced; {newer} blocks hold a newer, "
              "not yet durable write")
        totals["writes"] += len(t.writes)
        totals["durable"] += len(durable)
        totals["fua"] += fua
        totals["flushed"] += len(durable) - fua
        totals["newer"] += newer
        if problems:
            failed = True
            totals["lost"] += len(problems)
            print(f"trial {n}: {len(problems)} blocks lost acknowledged durable data:")
            for p in problems[:10]:
                print("  " + p)
    server.stop()
finally:
    if server.proc.poll() is None:
        server.proc.kill()
print(f"crash: {trials} trials in {time.monotonic() - t_start:.0f} s: {totals['writes']} writes, "
      f"{totals['durable']} durable ({totals['fua']} FUA, {totals['flushed']} by FLUSH), "
      f"{totals['lost']} blocks lost, {totals['newer']} blocks newer than their last durable write")
if failed:
    sys.exit(1)
if trials >= 2 and (totals["fua"] == 0 or totals["flushed"] == 0):
    sys.exit("no durable writes of one kind (FUA or FLUSH) in the whole run: it tested nothing")
