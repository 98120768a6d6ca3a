#!/usr/bin/env bash
# The README's main job on a built-in default: install what is missing, build, then run the
# whole pipeline on this machine — profile -> tune -> run — for the `small` preset trained on
# the repository's own sources and docs. Everything it writes goes to ./out/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh release
bin="$PWD/build/release/cli"
out="$PWD/out/demo"
# Each demo run starts afresh: the previous run's checkpoints would otherwise (rightly) make
# mlpo-run refuse to start a new run in the same checkpoint directory.
rm -rf "$out/checkpoints"
mkdir -p "$out/scratch"

echo
echo "== 1. mlpo-profile --quick   (default scratch tier under $out/scratch; writes $out/profile.json)"
(cd "$out/scratch" && "$bin/mlpo-profile" --quick --out "$out/profile.json")

echo
echo "== 2. mlpo-tune: plan the small preset on this machine and explain the choice"
"$bin/mlpo-tune" --model small --profile "$out/profile.json" --micro-batch 2 --seq-len 128 \
  --explain --out "$out/plan.json" --timeline "$out/iteration.svg"

echo
echo "== 3. mlpo-run: 30 steps of the small preset on the repository's own text"
"$bin/mlpo-run" prepare-data --input README.md docs core executor --out "$out/tokens.bin"
"$bin/mlpo-run" --model small --plan "$out/plan.json" --data "$out/tokens.bin" --steps 30 \
  --seq-len 128 --micro-batch 2 --lr 3e-3 --warmup-steps 5 --log "$out/run.jsonl" \
  --checkpoint-dir "$out/checkpoints" --checkpoint-every 10 --export-safetensors "$out/small.safetensors"
echo
echo "== 4. mlpo-run report: the run log as one chart (loss, tokens/s, phase seconds, tier traffic)"
"$bin/mlpo-run" report "$out/run.jsonl" --out "$out/report.svg" --title "small preset, tuned plan ($out/plan.json)"
echo
echo "demo: profile, plan, timeline, run log, checkpoints and weights are in $out"
echo "demo: run report: $out/report.svg"
