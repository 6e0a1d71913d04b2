# SPDX-License-Identifier: MIT
"""synctrace.py: the C19 client and strace-log checker (flush_syncs.sh, writethrough_syncs.sh).

  synctrace.py client URI OUT.json   WRITE A, FLUSH, WRITE C with FUA; saves the cookies
  synctrace.py check LOG MODE IN.json  checks the server's trace (strace -f -s 64 -xx of
                                       fdatasync, fsync, sync_file_range, pwrite*, sendmsg)
  synctrace.py client-through URI OUT.json   write-through: 3 WRITEs, a TRIM and a
                                       WRITE_ZEROES in flight at once, no FLUSH, no FUA
  synctrace.py check-through LOG IN.json  each of them replied to only after an fdatasync
                                       (or fsync) that started after its data reached the
                                       file (pwrite*/fallocate returned) and returned 0

A reply is found in the trace by its cookie: the server's sendmsg whose bytes hold a reply
magic followed, 8 bytes on, by the request's cookie. Lines of one strace -f log are in the
order the kernel stopped the threads, so "line i before line j" is "happened before".
"""
import json
import re
import struct
import sys

A_OFF, C_OFF, LEN = 1 << 20, 3 << 20, 65536


def client(uri, out):
    import nbd
    h = nbd.NBD()
    h.connect_uri(uri)

    def wait(cookie):
        while not h.aio_command_completed(cookie):
            h.poll(-1)
        return cookie

    cookies = {"fua": h.can_fua(), "flush": h.can_flush()}
    cookies["A"] = wait(h.aio_pwrite(b"\xa1" * LEN, A_OFF))
    cookies["FLUSH"] = wait(h.aio_flush())
    if h.can_fua():
        cookies["C"] = wait(h.aio_pwrite(b"\xc3" * LEN, C_OFF, flags=nbd.CMD_FLAG_FUA))
    else:
        cookies["C"] = wait(h.aio_pwrite(b"\xc3" * LEN, C_OFF))
    h.shutdown()
    json.dump(cookies, open(out, "w"))


# write-through requests: name -> (offset, length); the file is 16 MiB
THROUGH = {"W1": (1 << 20, LEN), "W2": (2 << 20, LEN), "W3": (3 << 20, LEN),
           "TRIM": (5 << 20, 1 << 20), "ZERO": (7 << 20, 1 << 20)}


def client_through(uri, out):
    import nbd
    h = nbd.NBD()
    h.connect_uri(uri)
    cookies = {"fua": h.can_fua(), "flush": h.can_flush(), "trim": h.can_trim(),
               "zero": h.can_zero()}
    for name in ("W1", "W2", "W3"):
        off, n = THROUGH[name]
        cookies[name] = h.aio_pwrite(bytes([0xb0 + int(name[1])]) * n, off)
    cookies["TRIM"] = h.aio_trim(THROUGH["TRIM"][1], THROUGH["TRIM"][0])
    cookies["ZERO"] = h.aio_zero(THROUGH["ZERO"][1], THROUGH["ZERO"][0])
    for name in THROUGH:
        while not h.aio_command_completed(cookies[name]):
            h.poll(-1)
    h.shutdown()
    json.dump(cookies, open(out, "w"))


def fallocate_at(events, off):
    """The completed fallocate calls whose range holds file offset off (TRIM, ZERO)."""
    found = []
    for ev in events:
        if ev["name"] != "fallocate" or "exit" not in ev or ev.get("ret") != 0:
            continue
        m = re.search(r", (\d+), (\d+)\s*(?:<unfinished \.\.\.>)?\)", ev["args"])
        if m and int(m.group(1)) <= off < int(m.group(1)) + int(m.group(2)):
            found.append(ev)
    return found


def check_through(log, cookies_file):
    c = json.load(open(cookies_file))
    assert c["flush"] and c["fua"], "write-through: FLUSH/FUA no longer advertised"
    assert c["trim"] and c["zero"], "write-through: TRIM/WRITE_ZEROES not advertised"
    ev = parse(log)
    good = [e for e in ev if e["name"] in ("fdatasync", "fsync") and e.get("ret") == 0]
    out = []
    for name, (off, _) in THROUGH.items():
        data = write_at(ev, off) + fallocate_at(ev, off)
        assert data, f"{name}: no pwrite/fallocate at {off} in the trace (strace not attached?)"
        done = max(d["exit"] for d in data)
        reply = reply_line(ev, c[name])
        assert done < reply, f"{name}: replied to (line {reply}) before its data reached the " \
                             f"file (line {done})"
        cover = [s for s in good if done < s["entry"] and s["exit"] < reply]
        assert cover, f"{name}: replied to at line {reply} with no sync between its data " \
                      f"(done at line {done}) and the reply (syncs at lines " \
                      f"{[(s['name'], s['entry'], s.get('exit')) for s in good]})"
        out.append(f"{name}: {cover[0]['name']} at line {cover[0]['entry']}")
    return "; ".join(out)


CALL = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$")


def parse(log):
    """Events: dicts with name, args (the entry line's text), ret, entry and exit line."""
    events, open_calls = [], {}
    for i, line in enumerate(open(log)):
        m = CALL.match(line.rstrip("\n"))
        if not m:
            continue
        pid, resumed, name, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        if resumed:
            ev = open_calls.pop((pid, resumed), None)
            if ev is None:
                continue
        else:
            ev = {"name": name, "args": rest, "entry": i, "pid": pid}
            events.append(ev)
        if rest.endswith("<unfinished ...>"):
            open_calls[(pid, ev["name"])] = ev
            continue
        ev["exit"] = i
        if resumed:
            ev["args"] += rest
        r = re.search(r"\)\s+=\s+(-?\d+)", rest)
        ev["ret"] = int(r.group(1)) if r else None
    return events


def write_at(events, off):
    """The completed pwrite*/pwritev* calls covering file offset off (the data writes)."""
    found = []
    for ev in events:
        if not ev["name"].startswith("pwrite") or "exit" not in ev:
            continue
        # pwrite64(fd, buf, count, offset) / pwritev*(fd, iov, iovcnt, offset[, flags])
        if ev["name"] == "pwrite64":
            m2 = re.search(r", (\d+), (\d+)\s*(?:<unfinished \.\.\.>)?\)", ev["args"])
            count, start, flags = int(m2.group(1)), int(m2.group(2)), ""
        else:
            m2 = re.search(r"iov_len=(\d+)\}\], \d+, (\d+)(?:, ([\w|]+))?\s*"
                           r"(?:<unfinished \.\.\.>)?\)", ev["args"])
            count, start, flags = int(m2.group(1)), int(m2.group(2)), m2.group(3) or ""
        if start <= off < start + count:
            ev["flags"] = flags
            found.append(ev)
    return found


def reply_line(events, cookie):
    """Line index of the server's sendmsg that carries the reply to cookie."""
    want = struct.pack(">Q", cookie)
    for ev in events:
        if ev["name"] != "sendmsg":
            continue
        data = b"".join(bytes.fromhex(s.replace("\\x", ""))
                        for s in re.findall(r'iov_base="((?:\\x[0-9a-f]{2})*)"', ev["args"]))
        for magic in (b"\x67\x44\x66\x98", b"\x66\x8e\x33\xef"):  # simple, structured
            p = data.find(magic)
            while p >= 0:
                if data[p + 8:p + 16] == want:
                    return ev["entry"]
                p = data.find(magic, p + 1)
    raise AssertionError(f"no reply with cookie {cookie} found in the trace")


def check(log, mode, cookies_file):
    c = json.load(open(cookies_file))
    ev = parse(log)
    syncs = [e for e in ev if e["name"] in ("fdatasync", "fsync", "sync_file_range")]
    a, cw = write_at(ev, A_OFF), write_at(ev, C_OFF)
    # the trace saw the data writes: otherwise "no sync" would pass vacuously
    assert a and cw, f"writes A/C not in the trace (strace not attached?): {len(ev)} events"
    if mode == "none":
        assert not syncs, f"--sync none: {len(syncs)} sync calls, e.g. {syncs[0]['name']}"
        assert not any("SYNC" in w["flags"] for w in a + cw), "--sync none: a write had RWF_*SYNC"
        return "no sync calls at all"
    want = "fsync" if mode == "fsync" else "fdatasync"
    good = [s for s in syncs if s["name"] in (want, "fsync") and s.get("ret") == 0]
    # FLUSH: some sync started after A's write returned and returned before the FLUSH reply
    a_done = max(w["exit"] for w in a)
    flush_reply = reply_line(ev, c["FLUSH"])
    assert a_done < flush_reply, "the FLUSH reply was sent before WRITE A's data was written"
    cover = [s for s in good if a_done < s["entry"] and s["exit"] < flush_reply]
    assert cover, f"--sync {mode}: no {want} between WRITE A's pwrite and the FLUSH reply " \
                  f"(syncs at lines {[(s['name'], s['entry']) for s in syncs]}, A done at " \
                  f"line {a_done}, FLUSH reply at line {flush_reply})"
    # FUA: C's data written with RWF_DSYNC/RWF_SYNC, or synced afterwards, before C's reply
    assert c["fua"] and c["flush"], f"--sync {mode}: FLUSH/FUA not advertised"
    c_reply = reply_line(ev, c["C"])
    flag = "RWF_SYNC" if mode == "fsync" else "RWF_DSYNC"
    dsync = [w for w in cw if w["exit"] < c_reply and
             ("RWF_SYNC" in w["flags"] or flag in w["flags"])]  # RWF_SYNC is always enough
    c_done = max(w["exit"] for w in cw)
    after = [s for s in good if c_done < s["entry"] and s["exit"] < c_reply]
    assert c_done < c_reply, "the FUA WRITE's reply was sent before its data was written"
    assert dsync or after, f"--sync {mode}: FUA write neither {flag} nor followed by {want} " \
                           f"before its reply (write flags {[w['flags'] for w in cw]})"
    return f"FLUSH: {cover[0]['name']} before its reply; FUA: " + \
        (dsync[0]["flags"] if dsync else after[0]["name"])


if __name__ == "__main__":
    try:
        if sys.argv[1] == "client":
            client(sys.argv[2], sys.argv[3])
        elif sys.argv[1] == "client-through":
            client_through(sys.argv[2], sys.argv[3])
        elif sys.argv[1] == "check-through":
            print(check_through(sys.argv[2], sys.argv[3]))
        else:
            print(f"--sync {sys.argv[3]}: " + check(sys.argv[2], sys.argv[3], sys.argv[4]))
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
