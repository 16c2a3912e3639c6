#!/usr/bin/env bash
# The main loop on a fresh KB in a temp dir: init, register a source, propose a
# claim as an agent, see self-approval refused, approve as a second actor, show,
# then search and build a context pack as an agent would.
set -euo pipefail
cd "$(dirname "$0")/.."
VOUCH="$PWD/target/release/vouch"
# A build is needed when the binary is missing or older than a source file
# (cargo decides for sure; this only decides whether to say so).
if [ ! -x "$VOUCH" ] || [ -n "$(find Cargo.toml Cargo.lock crates -newer "$VOUCH" \
        \( -name '*.rs' -o -name '*.toml' -o -name 'Cargo.lock' \) -print -quit)" ]; then
    if [ -x "$VOUCH" ]; then
        echo "+ rebuilding vouch (release; a minute or two after a small change)..." >&2
    else
        echo "+ building vouch (release; the first build takes about 5 minutes on 2 cores)..." >&2
    fi
    start=$SECONDS
    cargo build --release --quiet --bin vouch
    echo "+ built in $((SECONDS - start)) s" >&2
else
    cargo build --release --quiet --bin vouch
fi
DIR=$(mktemp -d)
cd "$DIR"
echo "+ vouch init   (in $DIR)"
"$VOUCH" init
echo "Access tokens expire after 24 hours." > notes.md
SRC=$(VOUCH_AGENT=claude "$VOUCH" --json source add notes.md | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p')
echo "+ registered source $SRC"
OUT=$(VOUCH_AGENT=claude "$VOUCH" --json propose-claim "Access tokens expire after 24 hours" \
      --quote "$SRC=Access tokens expire after 24 hours.")
PROP=$(echo "$OUT" | sed -n 's/.*"proposal_id": "\([^"]*\)".*/\1/p')
CLAIM=$(echo "$OUT" | sed -n 's/.*"claim_id": "\([^"]*\)".*/\1/p')
echo "+ claude proposed $CLAIM ($PROP)"
"$VOUCH" pending
echo "+ claude tries to approve its own proposal:"
VOUCH_AGENT=claude "$VOUCH" approve "$PROP" || echo "  (refused, exit $?)"
echo "+ alice approves:"
VOUCH_AGENT=alice "$VOUCH" approve "$PROP"
"$VOUCH" show "$CLAIM"
"$VOUCH" audit
"$VOUCH" audit verify
echo "+ an agent asks what is known (search, then a context pack for a task):"
"$VOUCH" search "token expiry"
"$VOUCH" context "how long do access tokens last?"
