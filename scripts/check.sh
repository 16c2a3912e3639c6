#!/usr/bin/env bash
# Format, lint, check a non-Linux target, and test, stopping at the first
# failure.
#
# The Windows check (`cargo check --target x86_64-pc-windows-gnu`) keeps the
# core portable (no Linux-only dependency or API slipping in). It needs the
# rustup target and a MinGW C compiler for the bundled SQLite
# (`rustup target add x86_64-pc-windows-gnu`, `apt-get install
# gcc-mingw-w64-x86-64`); without them it says so and goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The fail points the crash tests build with.
cargo clippy --workspace --all-targets --locked --features vouch/failpoints -- -D warnings
# The build without the local embedding model (`embeddings` feature off).
cargo clippy -p vouch --no-default-features --locked -- -D warnings
if rustup target list --installed 2>/dev/null | grep -qx x86_64-pc-windows-gnu \
    && command -v x86_64-w64-mingw32-gcc >/dev/null; then
    RUSTFLAGS="-D warnings" cargo check --workspace --locked --target x86_64-pc-windows-gnu
else
    echo "scripts/check.sh: SKIPPED the Windows check (needs: rustup target add x86_64-pc-windows-gnu; a MinGW gcc)" >&2
fi
scripts/test.sh
