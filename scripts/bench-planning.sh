#!/usr/bin/env bash
# Times mlpo-tune's planning modes end to end (docs/benchmarks.md, "Planning: what-if,
# sensitivity, DeepSpeed config"), each under /usr/bin/time -v (wall time, max RSS):
#   sensitivity  mlpo-280b on 64 nodes x 8 GPUs, the 8-tier example profile (issue 37's goal:
#                under 60 s on the 2-vCPU dev machine), with the tornado chart;
#   sensitivity  llama2-70b on 2 x 4, the example cluster node;
#   what-if      llama2-70b on 2 x 4: NVMe twice as fast, and a second NVMe;
#   emit         llama2-70b on 2 x 4: the DeepSpeed configuration and MLPO's plan beside it.
# Run it on an idle machine (no build, test or helper beside it). Outputs go to out/bench-planning/.
#
#   scripts/bench-planning.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tune="$root/build/release/cli/mlpo-tune"
[ -x "$tune" ] || { echo "bench-planning: $tune is missing; run scripts/build.sh release first" >&2; exit 2; }
out="$root/out/bench-planning"
mkdir -p "$out"
timed() {  # NAME ARGS...
  local name=$1
  shift
  echo "== $name: mlpo-tune $*"
  /usr/bin/time -v "$tune" "$@" > "$out/$name.txt" 2> "$out/$name.time"
  cat "$out/$name.txt"
  grep -E "Elapsed \(wall|Maximum resident" "$out/$name.time" | sed 's/^\s*/end to end: /'
}
cd "$root"
echo "bench-planning: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
timed sensitivity-280b --model mlpo-280b --profile profiles/data/example-8-tier-node.json \
  --nodes 64 --gpus-per-node 8 --sensitivity --tornado "$out/tornado-280b.svg"
timed sensitivity-70b --model llama2-70b --profile profiles/data/example-cluster-node.json \
  --nodes 2 --gpus-per-node 4 --sensitivity --tornado "$out/tornado-70b.svg"
timed what-if-70b --model llama2-70b --profile profiles/data/example-cluster-node.json \
  --nodes 2 --gpus-per-node 4 --what-if 'tier.nvme.read_gbps*2' --what-if 'tier+=nvme2:like=nvme'
timed emit-70b --model llama2-70b --profile profiles/data/example-cluster-node.json \
  --nodes 2 --gpus-per-node 4 --emit deepspeed --out "$out/ds_config-70b.json"
