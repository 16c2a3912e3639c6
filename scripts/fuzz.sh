#!/usr/bin/env bash
# Run the fuzz harness (crates/vouch/tests/e2e/fuzz.rs) long: ITERS mutated
# inputs per target (default 20000) from a fresh seed (or SEED), release
# build. CI runs the same harness with 150 inputs per target and a fixed
# seed. Failing inputs land in target/fuzz-failures/; rerun one with the
# seed it printed.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-20000}
seed=${SEED:-$(date +%s)}
echo "scripts/fuzz.sh: $iters inputs per target, seed $seed" >&2
VOUCH_FUZZ_ITERS=$iters VOUCH_FUZZ_SEED=$seed \
    cargo test --release --locked -p vouch --test e2e fuzz:: -- --nocapture
