"""Summarises bpftrace lhist output (p10, p50, p90 as the lower bounds of their buckets). usage: hist-summary.py FILE"""
import re, sys
o = open(sys.argv[1]).read()
for name, body in re.findall(r'@(\w+):\s*\n((?:\[.*\n)+)', o):
    b = [(int(lo) if lo != '...' else 10**6, int(c)) for lo, c in re.findall(r'\[(\d+|\.\.\.),?\s*[^\]]*\)?\]?\s+(\d+)', body)]
    b = [(int(m.group(1)), int(m.group(2))) for m in re.finditer(r'\[(\d+), *\d+\)\s+(\d+)', body)]
    tail = sum(int(c) for c in re.findall(r'\[\d+, \.\.\.\)\s+(\d+)', body))
    tot = sum(c for _, c in b) + tail
    run = 0; q = {}
    for lo, c in b:
        run += c
        for p in (.1, .5, .9):
            if p not in q and run >= p * tot: q[p] = lo
    print("%-20s n=%6d p10 %4s p50 %4s p90 %4s (bucket lower bounds, us)" % (name, tot, q.get(.1, '>'), q.get(.5, '>'), q.get(.9, '>')))
