#!/usr/bin/env bash
# Format, lint and test, stopping at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
scripts/test.sh
