#!/usr/bin/env bash
# Memory of a whole Hugging Face round trip at a size whose optimizer state exceeds RAM
# (docs/benchmarks.md, "Hugging Face round trip"): writes a synthetic LLaMA checkpoint (the 1b
# preset with LAYERS layers, default 46: 2.16B parameters, 26 GB of fp32 state), then runs
#   mlpo-run --init-from CKPT --plan (one disk tier) --steps 1 --export-safetensors OUT/
# (EXTRA="--param-offload" adds flags) under /usr/bin/time -v: the import streams into the tier, one step trains, and the export
# streams the HF directory out. Prints the peak RSS beside the state size and the machine's RAM.
# Usage: scripts/bench-hf-roundtrip.sh [WORKDIR] (default: /var/tmp/mlpo-bench-hf-roundtrip;
# needs ~35 GB free there). Needs build/release.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=build/release/bench/train/hf_import_bench
run=build/release/cli/mlpo-run
work="${1:-/var/tmp/mlpo-bench-hf-roundtrip}"
layers="${LAYERS:-46}"
rm -rf "$work" && mkdir -p "$work/tier"
trap 'rc=$?; [ $rc -eq 0 ] || head -3 "$work/run.time" 2>/dev/null; rm -rf "$work"' EXIT

echo "== generate a synthetic HF checkpoint (1b preset, $layers layers)"
"$bench" generate --dir "$work/ckpt" --model 1b --layers "$layers" --shard-size 1GB | tee "$work/generate.txt"
params=$(sed -n 's/^generate: \([0-9]*\) parameters.*/\1/p' "$work/generate.txt")
cat > "$work/plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "1b", "params": $params}, "cluster": {},
 "subgroup_elements": 16777216, "tiers": [{"name": "disk", "kind": "nvme", "path": "$work/tier", "fraction": 1.0}],
 "host_cache_subgroups": 0, "buffers": 4, "prefetch_depth": 2, "order": "alternating", "gradients": "delayed",
 "io": {"queue_depth": 32}}
JSON
cat docs/*.md > "$work/text.txt"
"$run" prepare-data --input "$work/text.txt" --out "$work/tokens.bin" >/dev/null

echo "== mlpo-run --init-from -> 1 step -> --export-safetensors (directory)"
/usr/bin/time -v "$run" --init-from "$work/ckpt" --plan "$work/plan.json" --data "$work/tokens.bin" --steps 1 \
  --seq-len 32 --micro-batch 1 ${EXTRA:-} --export-safetensors "$work/export/" 2> "$work/run.time" | tail -4
grep -E "Maximum resident|Elapsed" "$work/run.time"
rss_kb=$(grep "Maximum resident" "$work/run.time" | awk '{print $NF}')
ram_kb=$(grep MemTotal /proc/meminfo | awk '{print $2}')
ls -l "$work/export"
printf '%s parameters: fp32 state (12 B/param) %.1f GB, RAM %.1f GB, peak RSS %.2f GB\n' "$params" \
  "$(echo "$params * 12 / 1000000000" | bc -l)" "$(echo "$ram_kb * 1024 / 1000000000" | bc -l)" "$(echo "$rss_kb * 1024 / 1000000000" | bc -l)"
