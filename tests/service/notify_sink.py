#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# notify_sink.py PATH OUT: a stand-in for systemd's NOTIFY_SOCKET. Binds a Unix datagram
# socket at PATH and appends each message received to OUT as one line, its fields
# (sd_notify's newline-separated VAR=VALUE) joined by '|'. Runs until killed.
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(out, "a", encoding="utf-8") as f:
    while True:
        msg = s.recv(65536).decode("utf-8", "replace")
        f.write("|".join(x for x in msg.split("\n") if x) + "\n")
        f.flush()
