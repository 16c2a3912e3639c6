#!/usr/bin/env python3
"""Two or more builds' JSONL servers on one KB, their calls interleaved.

usage: scripts/bench-server-ab.py KB BIN[,BIN...] [SETTLE_SECONDS] SPEC...

This machine's speed moves by a fifth between runs, more than most changes
do, so builds timed in turn are hard to compare. Here every build serves
at once (`BIN --kb KB serve --transport jsonl`, the model from the
environment's XDG_CACHE_HOME) and each call goes to every server in turn,
in alternating order, so each build meets the same moments. After SETTLE
seconds (default 40), for each SPEC it times 280 calls of the typed
queries `scripts/bench-server-queries.py` uses, after 14 untimed ones, and
prints p50 / mean / p99 per build. A SPEC is `BACKEND:LIMIT` for
`kb.search` (`fts5:10`, `hybrid:10`) or `ctx` for `kb.context` as the KB
configures it. The servers share the machine's cores, so the figures are
for comparing builds, not absolute. It asserts only that every call
succeeded.
"""
import sys
import time

from bench_jsonl import TYPED, Server


def main():
    kb, bins = sys.argv[1], sys.argv[2].split(",")
    rest = sys.argv[3:]
    settle = int(rest.pop(0)) if rest and rest[0].isdigit() else 40
    servers = [Server(b, kb) for b in bins]
    for s in servers:
        s.call("kb.search", {"query": "deploy approval"})
    time.sleep(settle)
    for spec in rest:
        backend, _, limit = spec.partition(":")

        def request(i):
            if backend == "ctx":
                return "kb.context", {"task": TYPED[i % len(TYPED)]}
            return "kb.search", {"query": TYPED[i % len(TYPED)], "backend": backend,
                                 "limit": int(limit or 10)}

        for i in range(len(TYPED)):
            for s in servers:
                s.call(*request(i))
        took = [[] for _ in servers]
        for i in range(280):
            order = range(len(servers)) if i % 2 == 0 else reversed(range(len(servers)))
            for j in order:
                t = time.perf_counter()
                servers[j].call(*request(i))
                took[j].append((time.perf_counter() - t) * 1000)
        row = []
        for b, t in zip(bins, took):
            t.sort()
            row.append(f"{b}: p50 {t[len(t) // 2]:.2f} mean {sum(t) / len(t):.2f} "
                       f"p99 {t[int(len(t) * 0.99) - 1]:.2f} ms")
        print(f"{spec} | " + " | ".join(row), flush=True)
    for s in servers:
        s.close()


if __name__ == "__main__":
    main()
