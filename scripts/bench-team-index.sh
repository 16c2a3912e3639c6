#!/usr/bin/env bash
# The derived index in the team database against the embedded one, on the
# same knowledge base: building it, a one-shot search, and one JSONL
# server's first answer, search and context p50 / p99 and RSS.
# docs/benchmarks.md, "The index in the team database".
#
#   cargo build --release --bins
#   scripts/bench-team-index.sh CLAIMS        # a generated knowledge base
#   scripts/bench-team-index.sh KB_PROJECT    # a copy of one (the folder holding .vouch/)
#
# Needs Debian's postgresql (scripts/postgres.sh) and python3. Nothing is
# downloaded; no model is used (XDG_CACHE_HOME points at an empty folder).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${VOUCH_BENCH_BINS:-$here/../target/release}
W=$(mktemp -d)
chmod 0755 "$W" # the cluster runs as postgres when we are root
if [[ "${1:-2000}" =~ ^[0-9]+$ ]]; then
  KB=$($B/vouch-bench generate --claims "${1:-2000}" | tail -1)
else
  KB=$W/kb
  mkdir -p "$KB"
  (cd "$1" && tar cf - --exclude='.vouch/state.db*' .vouch) | (cd "$KB" && tar xf -)
fi
KB=$(cd "$KB" && pwd -P)
URL=$($here/postgres.sh start $W/pg)
mkdir -p $W/team/vouch $W/none $W/model
printf 'server:\n  database: %s\n  tree: %s\n' "$URL" "$KB" > $W/team/vouch/config.yaml
export XDG_CACHE_HOME=$W/model
cd "$KB"
for cfg in none team; do
  echo "== $([ $cfg = team ] && echo 'the team database' || echo 'state.db')"
  XDG_CONFIG_HOME=$W/$cfg /usr/bin/time -o $W/t -f "index rebuild: %e s, peak RSS %M KB" \
    $B/vouch index rebuild >/dev/null 2>&1
  cat $W/t
  XDG_CONFIG_HOME=$W/$cfg /usr/bin/time -o $W/t -f "one-shot search: %e s, peak RSS %M KB" \
    $B/vouch search "billing cache" >/dev/null 2>&1
  cat $W/t
  XDG_CONFIG_HOME=$W/$cfg python3 $here/bench-team-index.py $B/vouch "$KB"
done
$here/postgres.sh stop $W/pg
rm -rf "$W"
