# Search and context latency of one JSONL server in KB_PROJECT_DIR: its
# first answer; how long after its start searches got fast (a search of
# "billing cache layer" every 50 ms, until five in a row take under
# FAST_MS, default 10: a server reading its postings in memory), waiting
# at most SETTLE seconds (default 5); then p50 / p99 over five rounds of
# twelve typed queries (after a warm-up round), and its RSS. Run by scripts/bench-team-index.sh; the server's index is the
# team database's when the person's config names one for the tree.
#
#   python3 scripts/bench-team-index.py BIN KB_PROJECT_DIR
import json, os, subprocess, sys, time
bin_, tree = sys.argv[1], sys.argv[2]
queries = ["billing cache layer", "schema migration locked", "webhook relay retries",
           "deployed after the growth service", "owned by the growth team", "dead-lettering",
           "exponential backoff", "batch size", "export job endpoint", "orders table",
           "rotate signing keys", "cobalt harbor basalt"]
p = subprocess.Popen([bin_, "serve", "--transport", "jsonl"], cwd=tree, stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=os.environ, text=True)
n = 0
def call(method, params):
    global n
    n += 1
    p.stdin.write(json.dumps({"id": n, "method": method, "params": params}) + "\n"); p.stdin.flush()
    t = time.perf_counter(); line = p.stdout.readline(); took = time.perf_counter() - t
    r = json.loads(line)
    assert r.get("ok"), line[:300]
    return took, r
t0 = time.perf_counter(); first, r = call("kb.search", {"query": "billing cache"}); print(f"first answer {first*1000:.0f} ms, {len(r['result'])} hits")
settle, fast_ms = float(os.environ.get("SETTLE", "5")), float(os.environ.get("FAST_MS", "10"))
in_a_row = 0
while time.perf_counter() - t0 < settle:
    took, _ = call("kb.search", {"query": "billing cache layer"})
    in_a_row = in_a_row + 1 if took * 1000 < fast_ms else 0
    if in_a_row == 5:
        print(f"searches under {fast_ms:g} ms from {time.perf_counter() - t0:.1f} s after the first answer")
        break
    time.sleep(0.05)
else:
    print(f"searches not under {fast_ms:g} ms within {settle:g} s")
time.sleep(max(0.0, settle - (time.perf_counter() - t0)))
for method, key in [("kb.search", "query"), ("kb.context", "task")]:
    times = []
    for rnd in range(6):
        for q in queries:
            took, _ = call(method, {key: q})
            if rnd > 0: times.append(took)
    times.sort()
    print(f"{method}: p50 {times[len(times)//2]*1000:.2f} ms, p99 {times[int(len(times)*0.99)]*1000:.2f} ms ({len(times)} calls)")
rss = [l for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS")][0].split()[1]
print(f"server RSS {int(rss)//1024} MiB")
p.stdin.close(); p.wait()
