#!/bin/bash
# `vouch index rebuild` of one knowledge base by several builds in turn,
# ROUNDS times, each run's wall time, peak RSS and CPU appended to OUT
# (docs/benchmarks.md, "The audit log read beside the load"). No model is
# loaded (XDG_CACHE_HOME points at an empty folder). It prints figures and
# asserts nothing. A spec's optional fourth field is a shell command run,
# untimed, in KB before each of its timed runs: to time a rebuild of an
# index whose vectors a server left current, that build's own rebuild and
# `vouch-bench fill-vectors` (which gives random vectors their documents'
# signatures back; "The vectors' signatures in a table of their own").
#
# usage: scripts/bench-rebuild-ab.sh KB OUT ROUNDS "label|ENV=VALUE ...|binary[|prepare]" ...
set -u
kb=$1; out=$2; rounds=$3; shift 3
nomodel=$(mktemp -d)
cd "$kb"
for r in $(seq 1 $rounds); do
  for spec in "$@"; do
    IFS='|' read label envs bin prepare <<< "$spec"
    if [ -n "$prepare" ]; then
      env XDG_CACHE_HOME=$nomodel bash -c "$prepare" >/dev/null 2>&1
    fi
    t=$( { env XDG_CACHE_HOME=$nomodel $envs /usr/bin/time -f "%e s %M KB %U u %S s" $bin index rebuild >/dev/null; } 2>&1 | tail -1)
    echo "$r $label $t" >> "$out"
  done
done
echo done >> "$out"
rmdir "$nomodel"
