#!/usr/bin/env bash
# The test suite, exactly as CI runs it (.ci/run calls this script).
#
# 1. Installs the official MCP Python SDK, pinned in
#    tests/mcp-client/requirements.txt, into a venv (default
#    target/mcp-client-venv, git-ignored; override with VOUCH_MCP_CLIENT_VENV).
#    Skipped when that venv already holds exactly this requirements file
#    (a stamp of its sha256), so re-runs cost nothing; a changed file
#    rebuilds the venv from scratch. Needs Python >= 3.10 (python3, or
#    $PYTHON) and access to PyPI.
# 2. Runs `cargo test --workspace --locked` with VOUCH_MCP_CLIENT_PYTHON
#    pointing at the venv's interpreter, which crates/vouch/tests/mcp_sdk.rs
#    uses to drive `vouch serve`. Extra arguments go to cargo test, e.g.
#    `scripts/test.sh -p vouch --test mcp_sdk`.
set -euo pipefail
cd "$(dirname "$0")/.."

req=tests/mcp-client/requirements.txt
venv=${VOUCH_MCP_CLIENT_VENV:-target/mcp-client-venv}
py=${PYTHON:-python3}

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "scripts/test.sh: the MCP client needs Python >= 3.10; '$py' is missing or older (set PYTHON=...)" >&2
    exit 1
fi

want=$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$req")
stamp="$venv/.vouch-requirements.sha256"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    : # up to date
else
    echo "scripts/test.sh: installing the MCP Python SDK ($req) into $venv" >&2
    start=$SECONDS
    if [ -e "$venv" ]; then
        # Only ever delete something that is a venv.
        if [ ! -f "$venv/pyvenv.cfg" ]; then
            echo "scripts/test.sh: $venv exists and is not a venv; remove it or set VOUCH_MCP_CLIENT_VENV" >&2
            exit 1
        fi
        rm -rf "$venv"
    fi
    mkdir -p "$(dirname "$venv")"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$req"
    echo "$want" >"$stamp"
    echo "scripts/test.sh: MCP Python SDK installed in $((SECONDS - start)) s" >&2
fi

VOUCH_MCP_CLIENT_PYTHON="$(cd "$venv" && pwd)/bin/python"
export VOUCH_MCP_CLIENT_PYTHON
exec cargo test --workspace --locked "$@"
