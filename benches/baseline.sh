#!/bin/sh
# Builds an earlier commit's release binary so a bench can run it side by side with the
# current build (benches/inbox_scale_side.rs reads SANCTUM_BENCH_BASELINE_BIN).
# Everything stays inside the checkout's target/: a git worktree at target/baseline/<commit>
# and its own CARGO_TARGET_DIR at target/baseline/<commit>-target. Prints the binary's path
# (last line of stdout); build chatter goes to stderr.
#
#   SANCTUM_BENCH_BASELINE_BIN=$(benches/baseline.sh 29d5920) cargo bench --bench inbox_scale_side
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 COMMIT" >&2
    exit 2
fi
root=$(git rev-parse --show-toplevel)
commit=$(git -C "$root" rev-parse --short=12 "$1^{commit}")
tree="$root/target/baseline/$commit"
build="$root/target/baseline/$commit-target"
mkdir -p "$root/target/baseline"
if [ ! -d "$tree" ]; then
    git -C "$root" worktree add --detach "$tree" "$commit" >&2
fi
CARGO_TARGET_DIR="$build" cargo build --release --locked --manifest-path "$tree/Cargo.toml" --bin sanctum-guard >&2
echo "$build/release/sanctum-guard"
