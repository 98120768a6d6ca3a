#!/usr/bin/env bash
# Times mlpo-tune's search and one SimGrid simulation on mlpo-280b, 8 nodes x 4 GPUs, with the
# example host + NVMe + remote profile (docs/benchmarks.md, "Simulator and tuner").
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build/release --target bench_tune mlpo-tune -j 2 >/dev/null
./build/release/bench/tune/bench_tune profiles/data/example-cluster-node.json mlpo-280b 8 4
/usr/bin/time -f "mlpo-tune end to end: %e s wall, %M KiB max RSS" \
  ./build/release/cli/mlpo-tune --model mlpo-280b --profile profiles/data/example-cluster-node.json \
  --nodes 8 --gpus-per-node 4 --quiet --out /tmp/mlpo-bench-plan.json
