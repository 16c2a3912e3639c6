#!/usr/bin/env python3
"""Hybrid search, context packs and fts5 search through one JSONL server.

usage: scripts/bench-server-queries.py KB VOUCH_BIN [SETTLE_SECONDS] [--words-only]

Starts `VOUCH_BIN --kb KB serve --transport jsonl` (the model from the
environment's XDG_CACHE_HOME), times its first answer, leaves it SETTLE
seconds (default 90: a million claims' vectors load in the background),
then times 300 hybrid searches, 200 context packs (as the KB configures
them) and 300 fts5 searches of the typed queries `vouch-bench on-kb`
uses, and prints p50 / p99 of each and the server's RSS. Run two builds
in turn to compare them (docs/benchmarks.md, "Sign bits in blocks").
With --words-only (a KB or environment without a model) the hybrid
searches are skipped and context packs rank by words.
It prints figures; it asserts only that every call succeeded.
"""
import sys
import time

from bench_jsonl import TYPED, Server


def main():
    words_only = "--words-only" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--words-only"]
    kb, binary = args[0], args[1]
    settle = int(args[2]) if len(args) > 2 else 90
    started = time.time()
    server = Server(binary, kb)
    call = server.call

    call("kb.search", {"query": "deploy approval"})
    first = (time.time() - started) * 1000
    time.sleep(settle)

    def timed(n, one):
        took = []
        for i in range(n):
            t = time.perf_counter()
            one(i)
            took.append((time.perf_counter() - t) * 1000)
        took.sort()
        return f"{took[len(took) // 2]:.2f} / {took[int(len(took) * 0.99) - 1]:.2f} ms"

    hybrid = "skipped" if words_only else timed(
        300, lambda i: call("kb.search", {"query": TYPED[i % len(TYPED)], "backend": "hybrid"}))
    context = timed(200, lambda i: call("kb.context", {"task": TYPED[i % len(TYPED)]}))
    fts5 = timed(300, lambda i: call("kb.search", {"query": TYPED[i % len(TYPED)], "backend": "fts5"}))
    with open(f"/proc/{server.pid}/status") as f:
        mem = {l.split(":")[0]: int(l.split()[1]) // 1024 for l in f if l.startswith(("VmRSS", "VmHWM"))}
    print(
        f"{binary}: first answer {first:.0f} ms | hybrid {hybrid} | context {context} | "
        f"fts5 {fts5} | RSS {mem['VmRSS']} MiB (peak {mem['VmHWM']})",
        flush=True,
    )
    server.close()


if __name__ == "__main__":
    main()
