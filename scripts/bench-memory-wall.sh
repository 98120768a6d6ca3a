#!/usr/bin/env bash
# The memory wall, end to end on this machine: train a model whose fp32 optimizer state
# (p, m, v: 12 bytes per parameter) is larger than the machine's RAM, on the plan mlpo-tune
# chose from mlpo-profile's measurements, and check the prediction against the run.
#
#   1. mlpo-profile: host, CPU backend forward/backward at the model's widths, and two tiers:
#      a disk directory ($WALL_OUT/scratch) and /dev/shm (a RAM file system: kind host,
#      mapped and updated in place);
#   2. mlpo-tune for the model and run shape, --param-offload (the bf16 weights stay in host
#      memory and are streamed to the compute one layer at a time) under a host memory budget;
#   3. mlpo-run, interleaved on the same data (the repository's own text, byte-level):
#        a. MLP mode, $WALL_STEPS steps, a checkpoint at the end;
#        b. --mode baseline (ZeRO-3-offload: everything on the disk tier, fp32 gradients
#           flushed, ascending order, no cache), $WALL_STEPS + 2 steps: the reference run;
#        c. --resume of (a)'s checkpoint to $WALL_STEPS + 2 steps;
#      MLP and baseline train bitwise alike (tests/executor/train/training_invariance_test.cpp),
#      so (a) must equal (b) on its steps and (c) must continue it bitwise: checked below;
#   4. peak RSS of every run next to the state size and the machine's memory;
#   5. mlpo-tune --validate of (a) and of (b): predicted vs measured per phase, and the
#      measured MLP-over-baseline speedup next to the predicted one.
#
# Disk: the state's disk share, one checkpoint (state + bf16 weights) and the baseline's state
# plus its fp32 gradients at once (about 65 GiB for 2b); checked before starting.
# Everything goes to $WALL_OUT (default ./out/memory-wall); the shm directory is removed at exit.
# Run it after scripts/demo.sh (which installs and builds); it builds again if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh
install_and_build
private_shm wall
out="${WALL_OUT:-$PWD/out/memory-wall}"
model="${WALL_MODEL:-2b}"
seq="${WALL_SEQ:-128}"
steps="${WALL_STEPS:-4}"
budget="${WALL_HOST_BUDGET:-20GiB}"
total=$((steps + 2))
rm -rf "$out/checkpoints" "$out"/*.jsonl "$out/scratch"
mkdir -p "$out/scratch" "$shm"
run=(/usr/bin/time -f "peak RSS %M KiB" "$bin/mlpo-run")

state_gib=$("$bin/mlpo-tune" --model "$model" --json --describe |
  python3 -c 'import json,sys; print(round(json.load(sys.stdin)["params"] * 12 / 2**30, 2))')
free_gib=$(df -k --output=avail "$out" | tail -1 | awk '{print $1 / 2^20}')
need_gib=$(python3 -c "print(round($state_gib * 2.7, 1))")
echo "memory wall: model $model, optimizer state $state_gib GiB; $(free -g | awk '/Mem:/ {print $2}') GiB of RAM;" \
  "$free_gib GiB free in $out (needs about $need_gib)"
if python3 -c "import sys; sys.exit(0 if $free_gib >= $need_gib else 1)"; then :; else
  echo "bench-memory-wall: $out has $free_gib GiB free, the run needs about $need_gib GiB (state," \
    "checkpoint, baseline's state and gradients): free space there or set WALL_OUT" >&2
  exit 2
fi

echo
echo "== 1. mlpo-profile: host, CPU forward/backward at $model's widths, disk and /dev/shm"
"$bin/mlpo-profile" --tier "scratch=$out/scratch" --tier "shm=$shm" --model "$model" --seq-len "$seq" \
  --tier-size 2GiB --streams 4 --out "$out/profile.json"

echo
echo "== 2. mlpo-tune: $model at seq $seq, --param-offload, host memory budget $budget"
"$bin/mlpo-tune" --model "$model" --profile "$out/profile.json" --seq-len "$seq" --param-offload \
  --host-memory-budget "$budget" --explain --out "$out/plan.json"

echo
echo "== 3. mlpo-run on the repository's own text"
"$bin/mlpo-run" prepare-data --input README.md docs core executor --out "$out/tokens.bin"
common=(--model "$model" --plan "$out/plan.json" --param-offload --data "$out/tokens.bin" --seq-len "$seq"
  --lr 1e-4 --min-lr 1e-5 --warmup-steps 2 --lr-decay-steps "$total")
echo "-- 3a. MLP mode, $steps steps, checkpoint at the end"
"${run[@]}" "${common[@]}" --steps "$steps" --log "$out/mlp.jsonl" --checkpoint-dir "$out/checkpoints" \
  2>&1 | tee "$out/mlp.txt"
echo "-- 3b. baseline mode, $total steps (the reference for 3c)"
"${run[@]}" "${common[@]}" --mode baseline --steps "$total" --log "$out/baseline.jsonl" 2>&1 |
  tee "$out/baseline.txt"
echo "-- 3c. MLP mode resumed from step $steps to $total"
"${run[@]}" "${common[@]}" --steps "$total" --resume --log "$out/resumed.jsonl" \
  --checkpoint-dir "$out/checkpoints" 2>&1 | tee "$out/resumed.txt"

echo
echo "== 4. bitwise continuation and memory"
python3 - "$out" "$state_gib" <<'PY'
import json, re, sys
out, state_gib = sys.argv[1], float(sys.argv[2])
def log(name): return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()]
mlp, base, res = log("mlp"), log("baseline"), log("resumed")
ref = {r["step"]: r["loss"] for r in base}
bad = [(r["step"], r["loss"], ref.get(r["step"])) for r in mlp + res if r["loss"] != ref.get(r["step"])]
print(f"  losses: MLP steps {mlp[0]['step']}..{mlp[-1]['step']} and resumed {res[0]['step']}..{res[-1]['step']}"
      f" against the baseline's: {'bitwise equal' if not bad else 'DIFFER ' + str(bad)}")
ram = [int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:")][0] / 2**20
for name in ("mlp", "baseline", "resumed"):
    rss = [int(m.group(1)) for m in re.finditer(r"peak RSS (\d+) KiB", open(f"{out}/{name}.txt").read())]
    print(f"  {name:9s} peak RSS {rss[-1] / 2**20:6.2f} GiB   RAM {ram:6.2f} GiB   optimizer state {state_gib:6.2f} GiB")
if bad: sys.exit("bench-memory-wall: the runs do not match bitwise")
PY

echo
echo "== 5. mlpo-tune --validate: MLP run (3a), then the baseline run (3b) against the baseline's prediction"
"$bin/mlpo-tune" --validate "$out/mlp.jsonl" --plan "$out/plan.json" --profile "$out/profile.json"
"$bin/mlpo-tune" --validate "$out/mlp.jsonl" --plan "$out/plan.json" --profile "$out/profile.json" --json \
  > "$out/validate-mlp.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def avg(name, key):  # as --validate measures: the first step is warm-up; iteration = f + b + u
    rows = [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()][1:]
    parts = ("forward_s", "backward_s", "update_s") if key == "iteration_s" else (key,)
    return sum(r[k] for r in rows for k in parts) / len(rows)
plan = json.load(open(f"{out}/plan.json"))
pm, pb = plan["prediction"], plan["baseline_prediction"]
print("  baseline (3b)      predicted    measured    error")
for key in ("forward_s", "backward_s", "update_s", "iteration_s"):
    m = avg("baseline", key)
    print(f"  {key:14s} {pb[key]:10.2f} s {m:10.2f} s  {100 * (pb[key] - m) / m:+6.1f} %")
mi, bi = avg("mlp", "iteration_s"), avg("baseline", "iteration_s")
ps, ms = pb["iteration_s"] / pm["iteration_s"], bi / mi
print(f"  speedup MLP over baseline: predicted {ps:.2f}x, measured {ms:.2f}x"
      f" ({100 * (ps - ms) / ms:+.1f} %); iterations {mi:.2f} s vs {bi:.2f} s")
PY
echo
echo "bench-memory-wall: profile, plan, logs and checkpoint are in $out"
