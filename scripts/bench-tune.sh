#!/usr/bin/env bash
# Times mlpo-tune's search and one SimGrid simulation (docs/benchmarks.md, "Simulator and
# tuner"): mlpo-280b on 8 nodes x 4 GPUs with the example host + NVMe + remote profile, and the
# scale cases of issue 21: 8 tiers, 64 nodes x 8 GPUs, mlpo-280b and a 1T-parameter spec
# (bench/tune/example-1t.json), each with mlpo-tune end to end under /usr/bin/time -v
# (wall time and max RSS).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build/release --target bench_tune mlpo-tune -j 2 >/dev/null
tune_case() {  # PROFILE MODEL NODES GPUS
  echo "== $2 on $3 x $4, $1"
  ./build/release/bench/tune/bench_tune "$1" "$2" "$3" "$4"
  /usr/bin/time -v ./build/release/cli/mlpo-tune --model "$2" --profile "$1" --nodes "$3" --gpus-per-node "$4" \
    --quiet --out /tmp/mlpo-bench-plan.json 2>/tmp/mlpo-bench-time.txt
  grep -E "Elapsed \(wall|Maximum resident" /tmp/mlpo-bench-time.txt | sed 's/^\s*/mlpo-tune end to end: /'
}
tune_case profiles/data/example-cluster-node.json mlpo-280b 8 4
tune_case profiles/data/example-8-tier-node.json mlpo-280b 64 8
tune_case profiles/data/example-8-tier-node.json bench/tune/example-1t.json 64 8
