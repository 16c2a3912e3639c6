#!/usr/bin/env bash
# Format, lint, licences and sources (cargo-deny), then the test command
# (which also checks the Windows target), stopping at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The fail points the crash tests build with.
cargo clippy --workspace --all-targets --locked --features vouch/failpoints -- -D warnings
# The build without the local embedding model (`embeddings` feature off).
cargo clippy -p vouch --no-default-features --locked -- -D warnings
# Licences, banned crates, duplicate versions (listed) and sources:
# cargo-deny with deny.toml, installed into target/tools when missing.
deny=target/tools/bin/cargo-deny
if [ ! -x "$deny" ]; then
    echo "scripts/check.sh: installing cargo-deny into target/tools" >&2
    cargo install --locked cargo-deny --version 0.20.2 --root target/tools
fi
"$deny" check licenses bans sources
# Its advisories check needs the RustSec database, fetched from GitHub.
if "$deny" fetch db >/dev/null 2>&1; then
    "$deny" check advisories
else
    echo "scripts/check.sh: warning: the RustSec advisory database could not be fetched" \
        "(no access to github.com?); security advisories were NOT checked" >&2
fi
# scripts/test.sh also checks the Windows target (installing it when missing).
scripts/test.sh
