"""What the JSONL server benchmarks share: the typed queries and a server
to call (imported by scripts/bench-server-queries.py and
scripts/bench-server-ab.py, which run from this folder)."""
import json
import os
import subprocess

# What people type: the queries `vouch-bench on-kb` uses.
TYPED = [
    "retries", "rate limit", "who owns the payments service", "schema migration",
    "audit record for every change", "deploy approval", "requests per second",
    "authentication", "replica when the primary is down", "shards keyed by customer id",
    "messages older than hours", "encrypts data at rest", "import",
    "a schema migration that locked the table",
]


class Server:
    """`binary --kb kb serve --transport jsonl`, as agent `bench` (the
    model from the environment's XDG_CACHE_HOME)."""

    def __init__(self, binary, kb):
        self.process = subprocess.Popen(
            [binary, "--kb", kb, "serve", "--transport", "jsonl"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=dict(os.environ, VOUCH_AGENT="bench"), text=True,
        )
        self.pid = self.process.pid
        self.calls = 0

    def call(self, method, params):
        """One request; asserts that it succeeded."""
        self.calls += 1
        self.process.stdin.write(
            json.dumps({"id": self.calls, "method": method, "params": params}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        answer = json.loads(line)
        assert answer.get("ok") and answer.get("id") == self.calls, line[:300]
        return answer

    def close(self):
        self.process.stdin.close()
        self.process.wait()
