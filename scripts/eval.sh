#!/usr/bin/env bash
# Retrieval quality on the project's labelled set: builds a KB from
# eval/corpus.md (one claim per line, proposed by an agent quoting its line,
# approved by a reviewer) in a temp dir, embeds it when a model is
# installed, then runs `vouch eval eval/queries.yaml`. Extra arguments go
# to `vouch eval` (e.g. `--k 5`, `--backend hybrid`, `--json`).
# VOUCH_EVAL_MODEL=all-mpnet-base-v2 and VOUCH_EVAL_LEXICAL_WEIGHT=0.05 set
# retrieval.model and retrieval.lexical_weight in that KB.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin vouch
VOUCH="$PWD/target/release/vouch"
QUERIES="$PWD/eval/queries.yaml"
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
cp eval/corpus.md "$DIR/corpus.md"
cd "$DIR"
"$VOUCH" init >/dev/null
SRC=$(VOUCH_AGENT=eval-agent "$VOUCH" --json source add corpus.md | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p')
PROPOSALS=()
while IFS= read -r line; do
    [ -n "$line" ] || continue
    out=$(VOUCH_AGENT=eval-agent "$VOUCH" --json propose-claim "${line%.}" --quote "$SRC=$line")
    PROPOSALS+=("$(echo "$out" | sed -n 's/.*"proposal_id": "\([^"]*\)".*/\1/p')")
done < corpus.md
VOUCH_AGENT=eval-reviewer "$VOUCH" approve "${PROPOSALS[@]}" >/dev/null
settings=""
[ -z "${VOUCH_EVAL_MODEL:-}" ] || settings+="  model: $VOUCH_EVAL_MODEL\n"
[ -z "${VOUCH_EVAL_LEXICAL_WEIGHT:-}" ] || settings+="  lexical_weight: $VOUCH_EVAL_LEXICAL_WEIGHT\n"
if [ -n "$settings" ]; then
    sed -i "s/^retrieval:\$/retrieval:\n${settings%\\n}/" .vouch/config.yaml
fi
# Every document embedded before the first question (a search embeds only
# what fits in its budget).
"$VOUCH" index rebuild >/dev/null
"$VOUCH" eval "$QUERIES" "$@"
