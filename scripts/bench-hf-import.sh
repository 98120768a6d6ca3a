#!/usr/bin/env bash
# Memory of importing a Hugging Face checkpoint larger than any test (docs/benchmarks.md,
# "Hugging Face import"): writes a synthetic LLaMA checkpoint (the 1b preset with LAYERS
# layers, default 46: 2.16B parameters, 4.3 GB of bf16 in 1 GB shards + index), then reads every
# parameter through HfCheckpoint subgroup by subgroup (what --init-from does before each
# subgroup goes to its tier) under /usr/bin/time -v, and prints the peak RSS.
# Usage: scripts/bench-hf-import.sh [WORKDIR] (default: build/bench-hf). Needs build/release.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=build/release/bench/train/hf_import_bench
work="${1:-build/bench-hf}"
layers="${LAYERS:-46}"
rm -rf "$work" && mkdir -p "$work"
/usr/bin/time -v "$bench" generate --dir "$work/ckpt" --model 1b --layers "$layers" --shard-size "${SHARD_SIZE:-1GB}" \
  2> "$work/generate.time"
grep -E "Maximum resident|Elapsed" "$work/generate.time"
ls -l "$work/ckpt"
/usr/bin/time -v "$bench" import --dir "$work/ckpt" 2> "$work/import.time"
grep -E "Maximum resident|Elapsed" "$work/import.time"
rm -rf "$work/ckpt"
