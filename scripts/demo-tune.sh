#!/usr/bin/env bash
# Demo: profile -> tune. Tunes mlpo-280b on 8 nodes x 4 GPUs against a profile (default: the
# example cluster node, which is NOT a measurement; pass the JSON mlpo-profile wrote for this
# machine instead) and prints the explanation; writes build/demo-plan.json and build/demo-iteration.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-profiles/data/example-cluster-node.json}"
cmake --build build/release --target mlpo-tune -j 2 >/dev/null
./build/release/cli/mlpo-tune --model mlpo-280b --profile "$profile" --nodes 8 --gpus-per-node 4 \
  --explain --out build/demo-plan.json --timeline build/demo-iteration.svg
