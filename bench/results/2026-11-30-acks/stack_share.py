#!/usr/bin/python3
"""stack_share.py PERF_DATA FUNC [DEPTH]: of the samples in PERF_DATA (perf record -g), the
share whose call chain contains FUNC, split by the DEPTH frames that FUNC calls, in call order (FUNC's callee first). A record of
how profile.txt was read, not a tool of the project."""
import collections
import subprocess
import sys

perf_data, func = sys.argv[1], sys.argv[2]
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 1
text = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip,sym"],
                      capture_output=True, text=True, check=True).stdout
total = hit = 0
shares = collections.Counter()
for block in text.split("\n\n"):
    # one sample: its frames, leaf first
    frames = [line.split()[1].split("+")[0] for line in block.strip().split("\n")
              if len(line.split()) > 1]
    if not frames:
        continue
    total += 1
    if func in frames:
        hit += 1
        i = frames.index(func)
        shares[" -> ".join(reversed(frames[max(0, i - depth):i])) or "(self)"] += 1
print(f"{func}: {100 * hit / total:.1f}% of {total} samples")
for key, n in shares.most_common(12):
    print(f"  {100 * n / total:5.1f}%  {key}")
