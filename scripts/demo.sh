#!/usr/bin/env bash
# The README's main job on a built-in default: install what is missing, build, then run the
# whole pipeline on this machine — profile -> tune -> run -> validate — for the `small` preset
# trained on the repository's own sources and docs, with its optimizer state offloaded for real:
#
#   * two storage tiers, a disk directory (out/demo/scratch) and a RAM file system directory
#     (/dev/shm), both profiled and both streamed through the I/O engine;
#   * a host memory budget (DEMO_HOST_BUDGET, default 352MiB: the CPU backend's model, 192 MiB
#     at micro-batch 2 x 128, plus 160 MiB) that leaves less than the model's 206 MiB of fp32
#     state (p, m, v) once the model and the bf16 copies are in, so the tuner must place it on
#     the tiers: every step reads and writes bytes on both (checked below from the run log);
#   * the tuner's explanation, and `mlpo-tune --validate` of the run's own log: predicted vs
#     measured per phase.
#
# Everything it writes goes to ./out/demo (and the shm tier's directory, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh
install_and_build
out="$PWD/out/demo"
budget="${DEMO_HOST_BUDGET:-352MiB}"
# /dev/shm is memory: profiled as kind `other` it is a streamed tier (reads and writes through
# io_uring like the disk), so the demo shows two tiers streaming side by side. As kind `host`
# it would instead be mapped and updated in place, moving no bytes through the I/O engine.
private_shm demo
# Each demo run starts afresh: the previous run's checkpoints would otherwise (rightly) make
# mlpo-run refuse to start a new run in the same checkpoint directory.
rm -rf "$out/checkpoints" "$out/run.jsonl"
mkdir -p "$out/scratch" "$shm"

echo
echo "== 1. mlpo-profile --quick: this machine's CPU (the small preset's forward/backward at the run's"
echo "      shape) and two tiers, disk ($out/scratch) and /dev/shm"
"$bin/mlpo-profile" --quick --model small --micro-batch 2 --seq-len 128 \
  --tier "scratch=$out/scratch" --tier "shm=$shm:other" --out "$out/profile.json"

echo
echo "== 2. mlpo-tune: plan the small preset with $budget of host memory (its fp32 state is 206 MiB),"
echo "      so the state must leave RAM for the tiers; explain the choice"
"$bin/mlpo-tune" --model small --profile "$out/profile.json" --micro-batch 2 --seq-len 128 \
  --host-memory-budget "$budget" --explain --out "$out/plan.json" --timeline "$out/iteration.svg"

echo
echo "== 3. mlpo-run: 30 steps of the small preset on the repository's own text, state on the tiers"
"$bin/mlpo-run" prepare-data --input README.md docs core executor --out "$out/tokens.bin"
"$bin/mlpo-run" --model small --plan "$out/plan.json" --data "$out/tokens.bin" --steps 30 \
  --seq-len 128 --micro-batch 2 --lr 3e-3 --warmup-steps 5 --log "$out/run.jsonl" \
  --checkpoint-dir "$out/checkpoints" --checkpoint-every 10 --export-safetensors "$out/small.safetensors"

echo
echo "== 4. the state moved every step: bytes read and written per tier (from $out/run.jsonl)"
python3 - "$out/run.jsonl" <<'PY'
import json, sys
steps = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
names = [t["name"] for t in steps[0]["tiers"]]
idle = [(s["step"], t["name"]) for s in steps for t in s["tiers"]
        if t["read_bytes"] <= 0 or t["write_bytes"] <= 0]
for name in names:
    r = [t["read_bytes"] for s in steps for t in s["tiers"] if t["name"] == name]
    w = [t["write_bytes"] for s in steps for t in s["tiers"] if t["name"] == name]
    print(f"  tier {name:8s} per step: read {min(r)/2**20:6.1f}..{max(r)/2**20:6.1f} MiB, "
          f"written {min(w)/2**20:6.1f}..{max(w)/2**20:6.1f} MiB ({len(steps)} steps)")
print(f"  loss {steps[0]['loss']:.3f} (step {steps[0]['step']}) -> {steps[-1]['loss']:.3f} (step {steps[-1]['step']})")
if len(names) < 2 or idle:
    sys.exit(f"demo: expected two tiers moving bytes every step; tiers {names}, idle (step, tier): {idle}")
PY

echo
echo "== 5. mlpo-tune --validate: the tuner's prediction for this plan against the run's own log"
"$bin/mlpo-tune" --validate "$out/run.jsonl" --plan "$out/plan.json" --profile "$out/profile.json"

echo
echo "== 6. mlpo-run report: the run log as one chart (loss, tokens/s, phase seconds, tier traffic)"
"$bin/mlpo-run" report "$out/run.jsonl" --out "$out/report.svg" --title "small preset, tuned plan ($out/plan.json)"
echo
echo "demo: profile, plan, timeline, run log, checkpoints and weights are in $out"
echo "demo: run report: $out/report.svg"
