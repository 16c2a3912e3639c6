#!/usr/bin/env bash
# Format, lint, then the test command (which also checks the Windows
# target), stopping at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The fail points the crash tests build with.
cargo clippy --workspace --all-targets --locked --features vouch/failpoints -- -D warnings
# The build without the local embedding model (`embeddings` feature off).
cargo clippy -p vouch --no-default-features --locked -- -D warnings
# scripts/test.sh also checks the Windows target (installing it when missing).
scripts/test.sh
