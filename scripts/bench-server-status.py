#!/usr/bin/env python3
"""`kb.status` through one JSONL server, five calls, each call's wall time
and the server's CPU time spent on it (docs/benchmarks.md, "The audit log
read beside the load").

usage: scripts/bench-server-status.py KB VOUCH_BIN [SETTLE_SECONDS]

It prints figures; it asserts only that every call succeeded.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_jsonl import Server
kb, binary = sys.argv[1], sys.argv[2]
s = Server(binary, kb)
s.call("kb.search", {"query": "deploy approval"})
time.sleep(int(sys.argv[3]) if len(sys.argv) > 3 else 5)
def cpu():
    f = open('/proc/%d/stat' % s.pid).read().split(')')[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')
for i in range(5):
    c0 = cpu(); t = time.perf_counter()
    a = s.call("kb.status", {})
    print("kb.status %d: %.0f ms wall, %.2f CPU-s, claims %s" % (i, (time.perf_counter() - t) * 1000, cpu() - c0, a["result"]["counts"]["claims"]), flush=True)
s.close()
